// Registers seed 003's loop ladder: the six loop orders, the tiling sweep and the
// threaded ikj. Ladder steps follow the seed's narrative order.
#include <memory>

#include "core/host_kernel.hpp"
#include "core/registry.hpp"
#include "cpu/ladder.hpp"

namespace fastgemm::cpu {

namespace {

// FLOP counts above which `fastgemm bench` skips a rung unless asked (seconds per call
// on a 2-core x86 machine, measured: ijk ~1 s at 1024^3, jki ~4 s).
constexpr double kColumnWalkCap = 2.0 * 512 * 512 * 512;     // inner i: A and C down columns
constexpr double kStridedBCap = 2.0 * 1024 * 1024 * 1024;    // inner k: B down a column
constexpr double kStreamingCap = 2.0 * 2048.0 * 2048 * 2048;  // inner j: streams

KernelInfo loop_info(const char* name, int step, const char* description, double cap,
                     const char* source) {
    KernelInfo info;
    info.name = name;
    info.backend = "cpu";
    info.ladder_step = step;
    info.description = description;
    info.bench_flops_cap = cap;
    info.source = source;
    info.flags = FASTGEMM_LADDER_FLAGS;
    return info;
}

}  // namespace

void register_loop_ladder(Registry& r) {
    const char* orders = "src/cpu/loop_orders.cpp";
    auto add = [&](KernelInfo info, HostGemm fn) {
        r.add_kernel(std::make_unique<HostKernel>(std::move(info), fn));
    };
    add(loop_info("ijk", 1, "naive triple loop: dot product per C(i,j), B walked down a column",
                  kStridedBCap, orders), ijk);
    add(loop_info("ikj", 2, "i-k-j order: inner loop streams a row of B into a row of C",
                  kStreamingCap, orders), ikj);
    add(loop_info("jik", 3, "j-i-k order: dot products column by column, B down a column",
                  kStridedBCap, orders), jik);
    add(loop_info("jki", 4, "j-k-i order: inner loop walks A and C down columns",
                  kColumnWalkCap, orders), jki);
    add(loop_info("kij", 5, "k-i-j order: rank-1 updates, rows of B and C stream", kStreamingCap,
                  orders), kij);
    add(loop_info("kji", 6, "k-j-i order: rank-1 updates walking A and C down columns",
                  kColumnWalkCap, orders), kji);

    const char* tiled = "src/cpu/tiled_ikj.cpp";
    struct Tile {
        int bs;
        HostGemm fn;
    };
    const Tile tiles[] = {{8, tiled_ikj<8>},     {16, tiled_ikj<16>},   {32, tiled_ikj<32>},
                          {64, tiled_ikj<64>},   {128, tiled_ikj<128>}, {256, tiled_ikj<256>}};
    int step = 9;
    for (const Tile& t : tiles) {
        std::string name = "tiled_ikj_" + std::to_string(t.bs);
        auto info = loop_info(name.c_str(), step++,
                              "ikj inside ii/kk/jj blocks (no packing, no register blocking)",
                              t.bs == 8 ? kStridedBCap : kStreamingCap, tiled);
        info.params = {{"BS", t.bs}};
        add(std::move(info), t.fn);
    }

    auto info = loop_info("ikj_threads", 15, "ikj with rows split across fastgemm's thread pool",
                          kStreamingCap, "src/cpu/threaded_ikj.cpp");
    add(std::move(info), ikj_threads);
}

}  // namespace fastgemm::cpu

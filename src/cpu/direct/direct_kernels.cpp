// The direct kernels as registry Kernels. Each is a HostKernel over the instruction set
// the packed kernels use (FASTGEMM_CPU_ISA applies to both), on all pool threads that
// the problem is big enough to use.
#include "cpu/direct/direct_kernels.hpp"

#include <memory>
#include <string>

#include "core/host_kernel.hpp"
#include "core/registry.hpp"
#include "core/threads.hpp"
#include "cpu/direct/direct_gemm.hpp"

namespace fastgemm {
namespace {

const DirectIsa& isa() {
    static const DirectIsa* d = direct_isa_for(selected_cpu_isa());
    return *d;
}

void run_direct_gemm(const Problem& p, const float* A, const float* B, float* C) {
    direct_gemm(isa(), p, A, B, C, get_num_threads());
}
void run_direct_dot(const Problem& p, const float* A, const float* B, float* C) {
    direct_dot_gemm(isa(), p, A, B, C, get_num_threads());
}
void run_gemv(const Problem& p, const float* A, const float* B, float* C) {
    direct_gemv(isa(), p, A, B, C, get_num_threads());
}

std::string source_of(const DirectIsa& d) {
    const std::string name = d.name;
    return "src/cpu/direct/direct_" + name + ".cpp";
}

void add(Registry& r, const char* name, int step, HostGemm fn, std::vector<Constraint> constraints,
         std::vector<std::pair<std::string, int64_t>> params, const std::string& description) {
    const DirectIsa& d = isa();
    KernelInfo info;
    info.name = name;
    info.backend = "cpu";
    info.ladder_step = step;
    info.precision = Precision::fp32;
    info.constraints = std::move(constraints);
    info.params = std::move(params);
    info.params.push_back({"threads", 0});  // 0: as many pool threads as the size pays for
    info.source = source_of(d);
    info.description = description;
    info.isa = d.name;
    info.auto_candidate = true;
    r.add_kernel(std::make_unique<HostKernel>(std::move(info), fn));
}

}  // namespace

void register_direct_kernels(Registry& r) {
    const DirectIsa& d = isa();
    const std::string rows = std::to_string(d.rows_mr) + "x" + std::to_string(d.rows_nr);
    const std::string dots = std::to_string(d.dot_mr) + "x" + std::to_string(d.dot_nr);
    add(r, "direct", 30, run_direct_gemm, {}, {{"MR", d.rows_mr}, {"NR", d.rows_nr}, {"KC", 512}},
        std::string("no packing: ") + d.name + " " + rows +
            " register tiles read op(A) and op(B) where they lie (a transposed B is copied block by block)");
    add(r, "direct_dot", 31, run_direct_dot, {Constraint::no_trans_a(), Constraint::trans_b()},
        {{"MR", d.dot_mr}, {"NR", d.dot_nr}, {"KC", 4096}},
        std::string("no packing: ") + d.name + " " + dots +
            " tiles of dot products along K for A @ B^T (x @ W^T), both operands read in place");
    add(r, "gemv", 32, run_gemv, {Constraint::vector()}, {},
        std::string("matrix-vector product for M == 1 or N == 1 (") + d.name +
            "): the matrix streams once, by rows or by dot products, at memory speed");
}

}  // namespace fastgemm

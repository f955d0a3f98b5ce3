// FMA peak probe. Each thread runs CHAINS independent accumulator chains of vector FMAs
// that never touch memory: enough chains to cover the FMA latency on every pipe
// (Zen 4: 4-cycle latency x 2 pipes needs >= 8 in flight; we keep 12), so the loop is
// bound by FMA throughput alone. acc = acc * x + y with x < 1 converges to a fixed
// point, so values stay finite and normal for any iteration count. The compiler cannot
// fold the chains (no -ffast-math), and the sum of the accumulators is returned so the
// work is not dead.
//
// x86 variants carry target attributes instead of per-file flags, so this file is
// compiled for the baseline ISA and each variant runs only when cpuid says it may.
#include "cpu/peak_probe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/threads.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FASTGEMM_PROBE_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define FASTGEMM_PROBE_NEON 1
#endif

namespace fastgemm {
namespace {

constexpr int kChains = 12;

struct ProbeKind {
    const char* isa;
    int lanes;                          // FP32 lanes per FMA instruction
    float (*loop)(int64_t iterations);  // kChains FMAs per iteration
};

#if FASTGEMM_PROBE_X86
__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iterations) {
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
    const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.001f);
    for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], x, y);
    }
    __m512 s = acc[0];
    for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s);
    float total = 0;
    for (float v : lanes) total += v;
    return total;
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iterations) {
    __m256 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(float(c));
    const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(0.001f);
    for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], x, y);
    }
    __m256 s = acc[0];
    for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s);
    float total = 0;
    for (float v : lanes) total += v;
    return total;
}
#endif

#if FASTGEMM_PROBE_NEON
float fma_loop_neon(int64_t iterations) {
    float32x4_t acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = vdupq_n_f32(float(c));
    const float32x4_t x = vdupq_n_f32(0.999f), y = vdupq_n_f32(0.001f);
    for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = vfmaq_f32(y, acc[c], x);
    }
    float32x4_t s = acc[0];
    for (int c = 1; c < kChains; ++c) s = vaddq_f32(s, acc[c]);
    return vaddvq_f32(s);
}
#endif

// Portable: multiply and add (one rounding or two, whatever the target does).
float fma_loop_scalar(int64_t iterations) {
    float acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = float(c);
    const float x = 0.999f, y = 0.001f;
    for (int64_t it = 0; it < iterations; ++it) {
        for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * x + y;
    }
    float total = 0;
    for (float v : acc) total += v;
    return total;
}

std::vector<ProbeKind> probe_kinds() {
    std::vector<ProbeKind> kinds;
#if FASTGEMM_PROBE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) kinds.push_back({"avx512", 16, fma_loop_avx512});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        kinds.push_back({"avx2+fma", 8, fma_loop_avx2});
#endif
#if FASTGEMM_PROBE_NEON
    kinds.push_back({"neon", 4, fma_loop_neon});
#endif
    if (kinds.empty()) kinds.push_back({"scalar", 1, fma_loop_scalar});
    return kinds;
}

// GFLOP/s of `threads` threads running `kind` together; best of `repeats` runs.
double run_probe(const ProbeKind& kind, int threads, int repeats) {
    // Iterations so that one run is ~20 ms at ~3 GHz and 1 FMA/cycle/pipe.
    const int64_t iterations = int64_t(4'000'000) * 16 / kind.lanes / (kind.lanes == 1 ? 4 : 1);
    double best = 0.0;
    std::atomic<float> sink{0.0f};
    for (int r = 0; r < repeats; ++r) {
        // All threads start together; the time is the slowest thread's (wall clock).
        std::atomic<int> ready{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> workers;
        auto body = [&] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            float v = kind.loop(iterations);
            sink.store(sink.load() + v);
        };
        for (int t = 1; t < threads; ++t) workers.emplace_back(body);
        while (ready.load() < threads - 1) std::this_thread::yield();
        auto t0 = std::chrono::steady_clock::now();
        go.store(true, std::memory_order_release);
        float v = kind.loop(iterations);
        sink.store(sink.load() + v);
        for (auto& w : workers) w.join();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        double flops = 2.0 * double(kChains) * double(kind.lanes) * double(iterations) * threads;
        best = std::max(best, flops / s * 1e-9);
    }
    return best;
}

const ProbeKind& best_kind() {
    // The widest unit is not always the fastest (Zen 4 runs 512-bit FMAs as two 256-bit
    // halves), so measure each once on one thread and keep the winner.
    static const ProbeKind kind = [] {
        auto kinds = probe_kinds();
        const ProbeKind* best = &kinds[0];
        double best_rate = 0;
        for (const auto& k : kinds) {
            double rate = run_probe(k, 1, 2);
            if (rate > best_rate * 1.02) best = &k, best_rate = rate;
        }
        return *best;
    }();
    return kind;
}

}  // namespace

double measure_fma_peak_gflops(int threads) {
    if (threads <= 0) threads = get_num_threads();
    return run_probe(best_kind(), threads, 5);
}

std::string fma_peak_isa() { return best_kind().isa; }

}  // namespace fastgemm

// ozaki_reference: the fp32_ozaki scheme (src/ozaki/ozaki_scheme.hpp) on the CPU, step for
// step as the Hopper rung computes it, so that CI tests the scheme without a GPU and the GPU
// tests can compare the rung with it bit for bit.
//
// - Lines: every row of op(A) and column of op(B) is scaled (sum of squares in the scheme's
//   canonical order), rounded to integers and split into kModuli int8 residue planes, K-major.
// - Products: per modulus, each C element's residue dot product summed exactly in 32-bit
//   arithmetic, in chunks of kExactChunk products reduced mod m between chunks (wrapping
//   unsigned sums: for m = 256 only the low 8 bits matter, for the odd moduli a chunk's sum
//   fits int32).
// - Per element: CRT reconstruction, unscaling, the error bound; per 64 x 64 region of C the
//   certificate. Certified regions store alpha c (+ beta C); the others are recomputed in IEEE
//   FP32, fmaf in increasing k, as the GPU's fallback kernel does.
// Any shape, transposes, alpha, beta. Rows of C are split over the pool threads (static
// partition: the same bits for any thread count). A reference, not a fast kernel: benchmarks
// skip it above 2^31 FLOPs.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/host_kernel.hpp"
#include "core/registry.hpp"
#include "core/threads.hpp"
#include "cpu/ladder.hpp"
#include "cpu/loop_access.hpp"
#include "ozaki/ozaki_scheme.hpp"

namespace fastgemm::cpu {

namespace {

namespace oz = fastgemm::ozaki;

// One operand's lines in the scheme's form.
struct ScaledLines {
    int64_t lines = 0, K = 0;
    std::vector<int8_t> residues;  // kModuli planes of lines x K
    std::vector<double> inverse;   // 1 / f per line; NaN where the line holds NaN or Inf
    std::vector<oz::LineBound> bound;

    const int8_t* plane(int l, int64_t line) const { return residues.data() + (int64_t(l) * lines + line) * K; }
};

// value(line, k) reads element k of a line in place.
template <class Value>
ScaledLines scale_lines(int64_t lines, int64_t K, const Value& value) {
    ScaledLines s;
    s.lines = lines, s.K = K;
    s.residues.assign(size_t(oz::kModuli * lines * K), 0);
    s.inverse.assign(size_t(lines), 0.0);
    s.bound.assign(size_t(lines), {0.0, 0.0});
    const double R = oz::norm_bound(K);
    const int tasks = int(std::min<int64_t>(get_num_threads(), std::max<int64_t>(lines, 1)));
    parallel_for(tasks, [&](int t, int n) {
        for (int64_t line = lines * t / n; line < lines * (t + 1) / n && !interrupt_requested(); ++line) {
            double partial[oz::kSumLanes] = {};
            for (int64_t k = 0; k < K; ++k) {
                const double a = value(line, k);
                partial[k % oz::kSumLanes] += a * a;
            }
            const oz::LineScale scale = oz::line_scale(oz::line_partials_combine(partial), R);
            s.inverse[size_t(line)] = scale.inverse;
            if (std::isnan(scale.factor)) continue;  // uncertifiable: its residues stay 0
            bool inexact = false;
            int64_t norm1 = 0;
            for (int64_t k = 0; k < K; ++k) {
                const int32_t v = oz::scaled_integer(value(line, k), scale.factor, inexact);
                norm1 += v < 0 ? -int64_t(v) : int64_t(v);
                for (int l = 0; l < oz::kModuli; ++l)
                    s.residues[size_t((int64_t(l) * lines + line) * K + k)] =
                        int8_t(oz::symmetric_residue(v, oz::modulus(l)));
            }
            s.bound[size_t(line)] = oz::line_bound(scale.inverse, inexact, norm1);
        }
    });
    return s;
}

// The exact residue mod m of sum_k a[k] b[k].
int32_t residue_dot(const int8_t* a, const int8_t* b, int64_t K, int32_t m) {
    int32_t acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += oz::kExactChunk) {
        const int64_t k1 = std::min(K, k0 + oz::kExactChunk);
        uint32_t sum = 0;
        for (int64_t k = k0; k < k1; ++k) sum += uint32_t(int32_t(a[k]) * int32_t(b[k]));
        acc = oz::symmetric_residue(acc + oz::symmetric_residue(int32_t(sum), m), m);
    }
    return acc;
}

float blend(const Problem& p, float v, float c_old) {
    return p.beta == 0.0f ? p.alpha * v : std::fma(p.alpha, v, p.beta * c_old);
}

void ozaki_reference(const Problem& p, const float* A, const float* B, float* C) {
    if (p.M == 0 || p.N == 0) return;
    if (scale_only(p, C, 0, p.M)) return;
    const int64_t M = p.M, N = p.N, K = p.K;
    const ScaledLines a = scale_lines(M, K, [&](int64_t i, int64_t k) { return op_a(p, A, i, k); });
    const ScaledLines b = scale_lines(N, K, [&](int64_t j, int64_t k) { return op_b(p, B, k, j); });
    if (interrupt_requested()) return;

    // Every element: its exact integer product from the residue products, unscaled, and the
    // bound on its error.
    std::vector<float> result(size_t(M * N));
    std::vector<double> bound(size_t(M * N));
    const int tasks = int(std::min<int64_t>(get_num_threads(), M));
    parallel_for(tasks, [&](int t, int n) {
        for (int64_t i = M * t / n; i < M * (t + 1) / n && !interrupt_requested(); ++i) {
            for (int64_t j = 0; j < N; ++j) {
                int32_t residue[oz::kModuli];
                for (int l = 0; l < oz::kModuli; ++l)
                    residue[l] = residue_dot(a.plane(l, i), b.plane(l, j), K, oz::modulus(l));
                const size_t e = size_t(i * N + j);
                result[e] = oz::unscale(oz::crt_reconstruct(residue), a.inverse[size_t(i)], b.inverse[size_t(j)]);
                bound[e] = oz::element_error_bound(a.bound[size_t(i)], b.bound[size_t(j)], K);
            }
        }
    });
    if (interrupt_requested()) return;

    // Per region: keep the certified results, recompute the others in IEEE FP32.
    const int64_t R = oz::kRegion, regions_n = (N + R - 1) / R, regions = (M + R - 1) / R * regions_n;
    const int region_tasks = int(std::min<int64_t>(get_num_threads(), regions));
    parallel_for(region_tasks, [&](int t, int n) {
        for (int64_t r = regions * t / n; r < regions * (t + 1) / n && !interrupt_requested(); ++r) {
            const int64_t i0 = r / regions_n * R, j0 = r % regions_n * R;
            const int64_t i1 = std::min(M, i0 + R), j1 = std::min(N, j0 + R);
            double sum_bound_sq = 0.0, sum_result_sq = 0.0;
            for (int64_t i = i0; i < i1; ++i)
                for (int64_t j = j0; j < j1; ++j) {
                    const double c = result[size_t(i * N + j)], d = bound[size_t(i * N + j)];
                    sum_result_sq += c * c;
                    sum_bound_sq += d * d;
                }
            const bool certified = oz::region_certified(sum_bound_sq, sum_result_sq, K);
            for (int64_t i = i0; i < i1; ++i)
                for (int64_t j = j0; j < j1; ++j) {
                    float v = result[size_t(i * N + j)];
                    if (!certified) {
                        float acc = 0.0f;
                        for (int64_t k = 0; k < K; ++k) acc = std::fma(op_a(p, A, i, k), op_b(p, B, k, j), acc);
                        v = acc;
                    }
                    float* c = C + i * p.ldc + j;
                    *c = blend(p, v, p.beta == 0.0f ? 0.0f : *c);
                }
        }
    });
}

}  // namespace

void register_ozaki_reference(Registry& r) {
    KernelInfo info;
    info.name = "ozaki_reference";
    info.backend = "cpu";
    info.ladder_step = 35;
    info.precision = Precision::fp32_ozaki;
    info.params = {{"moduli", oz::kModuli}, {"region", oz::kRegion}, {"exact_chunk", oz::kExactChunk}};
    info.source = "src/cpu/ozaki_reference.cpp";
    info.description =
        "the fp32_ozaki scheme on the CPU: 7 int8 residue products summed exactly, CRT, certified 64x64 "
        "regions, IEEE FP32 elsewhere (the reference of the cuda rung)";
    // Scalar residue products: benchmarks skip it above 2^31 FLOPs unless asked.
    info.bench_flops_cap = 2.0 * 1024 * 1024 * 1024;
    info.auto_candidate = false;
    r.add_kernel(std::make_unique<HostKernel>(std::move(info), ozaki_reference));
}

}  // namespace fastgemm::cpu

// The packed SGEMM driver (see sgemm_packed.hpp). Architecture-neutral: everything
// ISA-specific is behind plan.kernel->fn.
#include "cpu/packed/sgemm_packed.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "core/interrupt.hpp"
#include "core/threads.hpp"
#include "cpu/packed/pack.hpp"

namespace fastgemm {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Splits `extent` into ceil(extent / block) near-equal blocks, each a multiple of
// `multiple` (so the last one is the short one by less than `multiple`).
int64_t balanced_block(int64_t extent, int64_t block, int64_t multiple) {
    if (block <= 0 || block >= extent) return round_up(extent, multiple);
    return round_up(ceil_div(extent, ceil_div(extent, block)), multiple);
}

// Fraction of the threads' time that does work when `panels` equal units are dealt
// out in contiguous ranges.
double split_efficiency(int64_t panels, int threads) {
    return double(panels) / double(threads * ceil_div(panels, threads));
}

// Each thread beyond the first needs this many FLOPs, or handing it work costs more
// than it gives back. The pool's workers spin ~200 us before sleeping (src/core/
// threads.cpp), so back-to-back calls find them awake (~0.5 us); a sleeping worker costs
// 25-50 us to wake on the 2-core Zen 4 VM this was tuned on.
constexpr double kMinFlopsPerExtraThread = 2.0e6;
// Below this many FLOPs (~ 400^3) one parallel region per call beats sharing packed B.
constexpr double kSmallProblemFlops = 1.3e8;

// C = beta * C over M x N (alpha == 0 or K == 0: op(A) op(B) contributes nothing,
// and BLAS reads neither A nor B). beta == 0 writes zeros without reading C.
void scale_c(const Problem& p, float* C) {
    for (int64_t i = 0; i < p.M; ++i) {
        float* row = C + i * p.ldc;
        if (p.beta == 0.0f)
            std::fill(row, row + p.N, 0.0f);
        else
            for (int64_t j = 0; j < p.N; ++j) row[j] *= p.beta;
    }
}

// The two inner loops: every MR x NR tile of an (m x n) block of C from packed
// A (m rows) and packed B (n columns), both kc deep. Ctrl-C is polled every eight
// micro-tiles (a few microseconds of work in the blocked kernels, a fraction of a
// percent of it polling): a ladder rung without cache blocking (the scalar and
// register-blocked steps) has one block of the whole problem, minutes at 8192^3.
void macro_kernel(const MicroKernel& mk, int64_t m, int64_t n, int64_t kc, const float* a_packed,
                  const float* b_packed, float* c, int64_t ldc, float alpha, float beta) {
    int64_t tiles = 0;
    for (int64_t jr = 0; jr < n; jr += mk.nr) {
        const int nn = int(std::min<int64_t>(mk.nr, n - jr));
        const float* b = b_packed + jr * kc;
        for (int64_t ir = 0; ir < m; ir += mk.mr) {
            if ((tiles++ & 7) == 0 && interrupt_requested()) return;  // the caller sees the flag too
            const int mm = int(std::min<int64_t>(mk.mr, m - ir));
            mk.fn(kc, a_packed + ir * kc, b, c + ir * ldc + jr, ldc, alpha, beta, mm, nn);
        }
    }
}

// The whole loop nest on one thread over rows [0, M) and columns [0, N) of `p`.
void serial_loops(const PackedPlan& plan, const Problem& p, const float* A, const float* B,
                  float* C, float* a_buf, float* b_buf) {
    const MicroKernel& mk = *plan.kernel;
    for (int64_t jc = 0; jc < p.N; jc += plan.nc) {
        const int64_t nc = std::min(plan.nc, p.N - jc);
        for (int64_t pc = 0; pc < p.K; pc += plan.kc) {
            const int64_t kc = std::min(plan.kc, p.K - pc);
            const float beta = pc == 0 ? p.beta : 1.0f;  // later k blocks accumulate
            pack_b(p, B, pc, kc, jc, nc, mk.nr, b_buf);
            for (int64_t ic = 0; ic < p.M; ic += plan.mc) {
                const int64_t mc = std::min(plan.mc, p.M - ic);
                pack_a(p, A, ic, mc, pc, kc, mk.mr, a_buf);
                macro_kernel(mk, mc, nc, kc, a_buf, b_buf, C + ic * p.ldc + jc, p.ldc, p.alpha,
                             beta);
                // Ctrl-C: stop between blocks (the caller reports the call as interrupted).
                if (interrupt_requested()) return;
            }
        }
    }
}

// Threads own contiguous ranges of NR-wide column panels; each runs serial_loops on
// its sub-problem with its own buffers.
void column_split(const PackedPlan& plan, const float* A, const float* B, float* C,
                  PackedWorkspace& ws) {
    const Problem& p = plan.problem;
    const int64_t nr = plan.kernel->nr, panels = ceil_div(p.N, nr);
    parallel_for(plan.threads, [&](int t, int T) {
        const int64_t j0 = std::min(p.N, panels * t / T * nr);
        const int64_t j1 = std::min(p.N, panels * (t + 1) / T * nr);
        if (j0 >= j1) return;
        Problem sub = p;
        sub.N = j1 - j0;
        const float* B_sub = p.trans_b ? B + j0 * p.ldb : B + j0;
        serial_loops(plan, sub, A, B_sub, C + j0, ws.a(t), ws.b(t));
    });
}

// Threads own contiguous ranges of MR-high row panels. Per (jc, pc) block, all threads
// first pack a share of the B block into the one shared buffer; once all are done
// (parallel_for returns), each packs its own A blocks and computes its rows.
void row_split(const PackedPlan& plan, const float* A, const float* B, float* C,
               PackedWorkspace& ws) {
    const Problem& p = plan.problem;
    const MicroKernel& mk = *plan.kernel;
    const int64_t row_panels = ceil_div(p.M, mk.mr);
    float* b_buf = ws.b(0);
    for (int64_t jc = 0; jc < p.N; jc += plan.nc) {
        const int64_t nc = std::min(plan.nc, p.N - jc);
        const int64_t col_panels = ceil_div(nc, mk.nr);
        for (int64_t pc = 0; pc < p.K; pc += plan.kc) {
            const int64_t kc = std::min(plan.kc, p.K - pc);
            const float beta = pc == 0 ? p.beta : 1.0f;
            parallel_for(plan.threads, [&](int t, int T) {
                const int64_t j0 = std::min(nc, col_panels * t / T * mk.nr);
                const int64_t j1 = std::min(nc, col_panels * (t + 1) / T * mk.nr);
                if (j0 < j1) pack_b(p, B, pc, kc, jc + j0, j1 - j0, mk.nr, b_buf + j0 * kc);
            });
            parallel_for(plan.threads, [&](int t, int T) {
                const int64_t i0 = std::min(p.M, row_panels * t / T * mk.mr);
                const int64_t i1 = std::min(p.M, row_panels * (t + 1) / T * mk.mr);
                float* a_buf = ws.a(t);
                for (int64_t ic = i0; ic < i1; ic += plan.mc) {
                    const int64_t mc = std::min(plan.mc, i1 - ic);
                    pack_a(p, A, ic, mc, pc, kc, mk.mr, a_buf);
                    macro_kernel(mk, mc, nc, kc, a_buf, b_buf, C + ic * p.ldc + jc, p.ldc,
                                 p.alpha, beta);
                    if (interrupt_requested()) return;
                }
            });
            if (interrupt_requested()) return;
        }
    }
}

}  // namespace

PackedPlan plan_packed(const Problem& p, const PackedConfig& cfg) {
    PackedPlan plan;
    plan.problem = p;
    plan.kernel = cfg.kernel;
    const int64_t mr = cfg.kernel->mr, nr = cfg.kernel->nr;
    const int64_t M = std::max<int64_t>(p.M, 1), N = std::max<int64_t>(p.N, 1),
                  K = std::max<int64_t>(p.K, 1);

    int threads = std::max(1, cfg.threads);
    threads = int(std::min<double>(threads, std::max(1.0, p.flops() / kMinFlopsPerExtraThread)));
    const int64_t row_panels = ceil_div(M, mr), col_panels = ceil_div(N, nr);
    threads = int(std::min<int64_t>(threads, std::max(row_panels, col_panels)));
    plan.threads = threads;
    // Rows by default: the B block is packed once for all threads. Columns when that
    // balances the work clearly better, or when there are few rows or little work:
    // then each thread runs the whole loop nest alone (one parallel region per call
    // instead of two per block, which matters while waking the pool costs tens of
    // microseconds) and the A it packs twice is small. FASTGEMM_CPU_SPLIT=rows|columns
    // overrides (for experiments; results are identical either way).
    const double eff_rows = split_efficiency(row_panels, threads);
    const double eff_cols = split_efficiency(col_panels, threads);
    const bool few_rows = p.M < p.N && p.M <= 4 * cfg.kernel->mr * threads;
    plan.split_columns =
        threads > 1 && (eff_cols > eff_rows + 0.02 ||
                        (eff_cols + 0.02 >= eff_rows && (p.flops() < kSmallProblemFlops || few_rows)));
    if (const char* e = std::getenv("FASTGEMM_CPU_SPLIT"); e && *e && threads > 1)
        plan.split_columns = e[0] == 'c';
    // Rows and columns one thread's loops cover.
    const int64_t m_range = plan.split_columns ? M : ceil_div(row_panels, threads) * mr;
    const int64_t n_range = plan.split_columns ? ceil_div(col_panels, threads) * nr : N;
    plan.kc = balanced_block(K, cfg.kc, 1);
    plan.mc = balanced_block(m_range, cfg.mc, mr);
    plan.nc = balanced_block(n_range, cfg.nc, nr);
    plan.a_floats = packed_size(plan.mc, plan.kc, int(mr));
    plan.b_floats = packed_size(plan.nc, plan.kc, int(nr));
    return plan;
}

void PackedWorkspace::FreeDeleter::operator()(float* p) const { std::free(p); }

void PackedWorkspace::grow(std::vector<Buffer>& bufs, std::vector<int64_t>& sizes, size_t count,
                           int64_t floats) {
    if (bufs.size() < count) bufs.resize(count), sizes.resize(count, 0);
    for (size_t i = 0; i < count; ++i) {
        if (sizes[i] >= floats) continue;
        // 64-byte alignment: the micro-kernels use aligned vector loads on packed B.
        size_t bytes = size_t(round_up(std::max<int64_t>(floats, 16) * 4, 64));
        void* mem = std::aligned_alloc(64, bytes);
        if (!mem) throw std::bad_alloc();
        bufs[i].reset(static_cast<float*>(mem));
        sizes[i] = floats;
    }
}

void PackedWorkspace::reserve(const PackedPlan& plan) {
    grow(a_, a_size_, size_t(plan.threads), plan.a_floats);
    grow(b_, b_size_, plan.split_columns ? size_t(plan.threads) : 1, plan.b_floats);
}

void sgemm_packed(const PackedPlan& plan, const float* A, const float* B, float* C,
                  PackedWorkspace& ws) {
    const Problem& p = plan.problem;
    if (p.M == 0 || p.N == 0) return;
    if (p.K == 0 || p.alpha == 0.0f) return scale_c(p, C);
    if (plan.threads == 1)
        serial_loops(plan, p, A, B, C, ws.a(0), ws.b(0));
    else if (plan.split_columns)
        column_split(plan, A, B, C, ws);
    else
        row_split(plan, A, B, C, ws);
}

void sgemm_packed(const Problem& p, const float* A, const float* B, float* C,
                  const PackedConfig& cfg) {
    PackedPlan plan = plan_packed(p, cfg);
    PackedWorkspace ws;
    ws.reserve(plan);
    sgemm_packed(plan, A, B, C, ws);
}

}  // namespace fastgemm

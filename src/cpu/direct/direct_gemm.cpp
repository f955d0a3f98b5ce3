// The direct kernels' drivers (see direct_gemm.hpp). ISA-neutral: the tiles come in
// through DirectIsa's function pointers.
#include "cpu/direct/direct_gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

#include "core/interrupt.hpp"
#include "core/threads.hpp"

namespace fastgemm {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A thread's scratch floats (a transposed B block, a gathered vector, raw sums), kept
// for the thread's life and grown on demand, so no call allocates once warm.
float* scratch(int slot, int64_t floats) {
    struct Buffer {
        std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
        int64_t size = 0;
    };
    thread_local Buffer buffers[2];
    Buffer& b = buffers[slot];
    if (b.size < floats) {
        const size_t bytes = size_t(ceil_div(std::max<int64_t>(floats, 16) * 4, 64) * 64);
        void* mem = std::aligned_alloc(64, bytes);
        if (!mem) throw std::bad_alloc();
        b.data.reset(static_cast<float*>(mem));
        b.size = floats;
    }
    return b.data.get();
}

// Extra threads pay for themselves above these amounts of work. A worker that the
// pool finds spinning starts in under a microsecond, a sleeping one in 25-50 us on the
// VMs this was measured on; below ~20 MFLOP (a 200 us single-thread problem) the
// second thread is not worth that risk. The memory-bound vector kernels need a matrix
// larger than one core's L2 before a second core's bandwidth helps.
constexpr double kFlopsPerExtraThread = 2.0e7;
constexpr double kBytesPerExtraThread = 1.0 * (1 << 20);

// [begin, end) of part t of n equal parts of `units` units of `unit` elements each,
// clamped to `extent`.
std::pair<int64_t, int64_t> part(int t, int n, int64_t units, int64_t unit, int64_t extent) {
    return {std::min(extent, units * t / n * unit), std::min(extent, units * (t + 1) / n * unit)};
}

// dst (kc x nc, row stride ld_dst) = op(B)[k0:k0+kc, j0:j0+nc] for a transposed B
// (stored N x K: op(B)(k, j) = B[j * ldb + k]). Walks 16 x 16 blocks so both the reads
// (along k) and the writes (along j) stay within a few cache lines.
void transpose_block(const float* B, int64_t ldb, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* dst,
                     int64_t ld_dst) {
    constexpr int64_t T = 16;
    for (int64_t jj = 0; jj < nc; jj += T)
        for (int64_t kk = 0; kk < kc; kk += T) {
            const int64_t je = std::min(nc, jj + T), ke = std::min(kc, kk + T);
            for (int64_t j = jj; j < je; ++j) {
                const float* src = B + (j0 + j) * ldb + k0;
                for (int64_t k = kk; k < ke; ++k) dst[k * ld_dst + j] = src[k];
            }
        }
}

// Rows [i0, i1) x columns [j0, j1) of C by direct_gemm's loop nest on one thread.
void direct_range(const DirectIsa& d, const Problem& p, const float* A, const float* B, float* C, int64_t i0,
                  int64_t i1, int64_t j0, int64_t j1) {
    const int64_t mr = d.rows_mr, nr = d.rows_nr;
    // kc: the whole K up to 768, else blocks of <= 512 (each C tile is loaded and stored
    // once per block). nc: a kc x nc block of op(B) fits in half of a 1 MiB L2.
    const int64_t kblocks = p.K <= 768 ? 1 : ceil_div(p.K, 512);
    const int64_t kc_max = ceil_div(p.K, kblocks);
    const int64_t nc_max = std::max<int64_t>(nr, (int64_t(1) << 17) / kc_max / nr * nr);
    const auto tile = p.trans_a ? d.rows_tile_a_cols : d.rows_tile_a_rows;
    for (int64_t jc = j0; jc < j1; jc += nc_max) {
        const int64_t nc = std::min(nc_max, j1 - jc);
        for (int64_t pc = 0; pc < p.K; pc += kc_max) {
            const int64_t kc = std::min(kc_max, p.K - pc);
            const float beta = pc == 0 ? p.beta : 1.0f;  // later k blocks accumulate
            const float* b = B + pc * p.ldb + jc;
            int64_t rs_b = p.ldb;
            if (p.trans_b) {
                rs_b = ceil_div(nc, 16) * 16;
                float* buf = scratch(0, kc * rs_b);
                transpose_block(B, p.ldb, pc, kc, jc, nc, buf, rs_b);
                b = buf;
            }
            for (int64_t ir = i0; ir < i1; ir += mr) {
                const int m = int(std::min(mr, i1 - ir));
                const float* a = p.trans_a ? A + pc * p.lda + ir : A + ir * p.lda + pc;
                float* c = C + ir * p.ldc + jc;
                for (int64_t jr = 0; jr < nc; jr += nr)
                    tile(kc, a, p.lda, b + jr, rs_b, c + jr, p.ldc, p.alpha, beta, m, int(std::min(nr, nc - jr)));
            }
            if (interrupt_requested()) return;
        }
    }
}

}  // namespace

int direct_threads(double work, double per_thread, int max_threads) {
    const double useful = 1.0 + work / per_thread;
    return int(std::max(1.0, std::min<double>(max_threads, useful)));
}

void direct_gemm(const DirectIsa& d, const Problem& p, const float* A, const float* B, float* C,
                 int max_threads) {
    const int64_t row_panels = ceil_div(p.M, d.rows_mr), col_panels = ceil_div(p.N, d.rows_nr);
    int threads = direct_threads(p.flops(), kFlopsPerExtraThread, max_threads);
    threads = int(std::min<int64_t>(threads, std::max(row_panels, col_panels)));
    if (threads <= 1) return direct_range(d, p, A, B, C, 0, p.M, 0, p.N);
    // Split the dimension with more panels; by columns, each thread copies only its own
    // part of a transposed B.
    const bool by_columns = col_panels >= row_panels;
    parallel_for(threads, [&](int t, int n) {
        if (by_columns) {
            auto [j0, j1] = part(t, n, col_panels, d.rows_nr, p.N);
            if (j0 < j1) direct_range(d, p, A, B, C, 0, p.M, j0, j1);
        } else {
            auto [i0, i1] = part(t, n, row_panels, d.rows_mr, p.M);
            if (i0 < i1) direct_range(d, p, A, B, C, i0, i1, 0, p.N);
        }
    });
}

void direct_dot_gemm(const DirectIsa& d, const Problem& p, const float* A, const float* B, float* C,
                     int max_threads) {
    // op(A)(i, k) = A[i * lda + k] and op(B)(k, j) = B[j * ldb + k]: both along k.
    const int64_t mr = d.dot_mr, nr = d.dot_nr;
    const int64_t row_blocks = ceil_div(p.M, mr), col_blocks = ceil_div(p.N, nr);
    // K blocks of <= 4096: the nr rows of B that a column block reads stay in L2 while
    // every row block of A passes them.
    const int64_t kblocks = ceil_div(p.K, 4096), kc_max = ceil_div(p.K, kblocks);
    int threads = direct_threads(p.flops(), kFlopsPerExtraThread, max_threads);
    threads = int(std::min<int64_t>(threads, std::max(row_blocks, col_blocks)));
    const bool by_columns = col_blocks >= row_blocks;
    auto range = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        for (int64_t pc = 0; pc < p.K; pc += kc_max) {
            const int64_t kc = std::min(kc_max, p.K - pc);
            const float beta = pc == 0 ? p.beta : 1.0f;
            for (int64_t jr = j0; jr < j1; jr += nr) {
                const int n = int(std::min(nr, j1 - jr));
                for (int64_t ir = i0; ir < i1; ir += mr) {
                    const int m = int(std::min(mr, i1 - ir));
                    d.dot_tile(kc, A + ir * p.lda + pc, p.lda, B + jr * p.ldb + pc, p.ldb, C + ir * p.ldc + jr, p.ldc,
                               1, p.alpha, beta, m, n);
                }
                if (interrupt_requested()) return;  // one column block of C: M x nr x kc
            }
        }
    };
    if (threads <= 1) return range(0, p.M, 0, p.N);
    parallel_for(threads, [&](int t, int n) {
        if (by_columns) {
            auto [j0, j1] = part(t, n, col_blocks, nr, p.N);
            if (j0 < j1) range(0, p.M, j0, j1);
        } else {
            auto [i0, i1] = part(t, n, row_blocks, mr, p.M);
            if (i0 < i1) range(i0, i1, 0, p.N);
        }
    });
}

void direct_gemv(const DirectIsa& d, const Problem& p, const float* A, const float* B, float* C,
                 int max_threads) {
    // The vector x (length K) and the matrix, as stored, for the two cases:
    //   M == 1: x = op(A) row 0; the matrix is B (y = x op(B), y along C's row 0)
    //   N == 1: x = op(B) column 0; the matrix is A (y = op(A) x, y down C's column 0)
    const bool row_vector = p.M == 1;
    const int64_t n_out = row_vector ? p.N : p.M;
    const int64_t inc_c = row_vector ? 1 : p.ldc;
    const float* x = row_vector ? A : B;
    const int64_t inc_x = row_vector ? (p.trans_a ? p.lda : 1) : (p.trans_b ? 1 : p.ldb);
    const float* mat = row_vector ? B : A;
    const int64_t ld = row_vector ? p.ldb : p.lda;
    // Rows-form when the matrix's stored rows run along the output, dot-form when they
    // run along K.
    const bool rows_form = row_vector ? !p.trans_b : p.trans_a;

    const double bytes = 4.0 * double(n_out) * double(p.K);
    int threads = direct_threads(bytes, kBytesPerExtraThread, max_threads);
    if (inc_x != 1 && p.K > 1) {
        // A strided vector is gathered once, by the calling thread, and shared.
        float* packed = scratch(1, p.K);
        for (int64_t k = 0; k < p.K; ++k) packed[k] = x[k * inc_x];
        x = packed;
    }

    // Both forms deal out ranges of outputs; each range is done in chunks whose raw sums
    // go to y, then C = alpha * y + beta * C along the output (a row or a column of C).
    // Rows form: chunks of 4096 outputs (16 KiB of sums in L1, whole rows of a 4096-wide
    // matrix). Dot form: 64 stored rows of the matrix at a time.
    const int64_t chunk = rows_form ? 4096 : 64;
    const int64_t unit = rows_form ? 16 : chunk;  // ranges start at multiples of this
    const int64_t chunks = ceil_div(n_out, chunk);
    threads = int(std::min<int64_t>(threads, rows_form && chunks == 1 ? ceil_div(n_out, 256) : chunks));
    auto range = [&](int64_t j0, int64_t j1) {
        float* y = scratch(0, std::min(chunk, j1 - j0));
        for (int64_t j = j0; j < j1; j += chunk) {
            const int64_t n = std::min(chunk, j1 - j);
            if (rows_form)
                d.gemv_rows_sum(p.K, n, x, mat + j, ld, y);
            else
                d.gemv_dot_rows(p.K, n, mat + j * ld, ld, x, y);
            for (int64_t t = 0; t < n; ++t) {
                float& out = C[(j + t) * inc_c];
                const float v = p.alpha * y[t];
                out = p.beta == 0.0f ? v : v + p.beta * out;
            }
            if (interrupt_requested()) return;
        }
    };
    if (threads <= 1) return range(0, n_out);
    parallel_for(threads, [&](int t, int n) {
        auto [j0, j1] = part(t, n, ceil_div(n_out, unit), unit, n_out);
        if (j0 < j1) range(j0, j1);
    });
}

}  // namespace fastgemm

// The CPU vendor baseline: cblas_sgemm from OpenBLAS (scipy-openblas32 on Linux, linked
// at build time from PyPI) or Accelerate (macOS), and cblas_sgemv for a matrix times a
// vector, as numpy calls them, timed by the same harness as the ladder. Its thread count
// follows fastgemm.set_num_threads() so ratios compare equal resources. BLAS takes
// 32-bit integers: larger dimensions are refused up front.
#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

#include "core/errors.hpp"
#include "core/host_kernel.hpp"
#include "core/interrupt.hpp"
#include "core/registry.hpp"
#include "core/threads.hpp"
#include "cpu/blas.hpp"
#include "cpu/ladder.hpp"

#if defined(FASTGEMM_BLAS_ACCELERATE)
#define ACCELERATE_NEW_LAPACK
#include <Accelerate/Accelerate.h>
#define FASTGEMM_CBLAS_SGEMM cblas_sgemm
#define FASTGEMM_CBLAS_SGEMV cblas_sgemv
#elif defined(FASTGEMM_BLAS_SCIPY_OPENBLAS)
#include <cblas.h>
#define FASTGEMM_CBLAS_SGEMM scipy_cblas_sgemm
#define FASTGEMM_CBLAS_SGEMV scipy_cblas_sgemv
#elif defined(FASTGEMM_BLAS_SYSTEM)
#include <cblas.h>
#define FASTGEMM_CBLAS_SGEMM cblas_sgemm
#define FASTGEMM_CBLAS_SGEMV cblas_sgemv
#endif

namespace fastgemm::cpu {

#if defined(FASTGEMM_CBLAS_SGEMM)

namespace {

void sync_blas_threads() {
#if defined(FASTGEMM_BLAS_SCIPY_OPENBLAS)
    // OpenBLAS re-partitions its pool on every set call; only call it on a change.
    static std::mutex m;
    static int current = -1;
    std::lock_guard<std::mutex> lock(m);
    int want = get_num_threads();
    if (want != current) {
        scipy_openblas_set_num_threads(want);
        current = want;
    }
#endif
}

// A matrix times a vector (M or N is 1) is the sgemv call numpy makes for it: OpenBLAS's
// sgemm does not take such a shape to its GEMV kernels (3.4x slower than sgemv at 1 x
// 4096 x 4096 on the 16 cores of the H200 machine's Xeon). The matrix is the operand
// that is not the vector, as stored; y is C's row (M == 1) or column (N == 1). With
// beta == 0 y is zeroed first: sgemv may compute 0 * y, and C is not an input then (it
// may hold NaN). K == 0 stays with sgemm, which still scales C by beta.
void blas_gemv_call(const Problem& p, const float* A, const float* B, float* C) {
    const bool row = p.M == 1;
    const float* mat = row ? B : A;
    const int ld = int(row ? p.ldb : p.lda);
    const float* x = row ? A : B;
    const int incx = int(row ? (p.trans_a ? p.lda : 1) : (p.trans_b ? 1 : p.ldb));
    const int64_t n_out = row ? p.N : p.M, inc_y = row ? 1 : p.ldc;
    // Stored shape of the matrix, and whether y = mat x (its rows along K) or mat^T x.
    const bool rows_along_k = row ? p.trans_b : !p.trans_a;
    const int64_t stored_rows = rows_along_k ? n_out : p.K, stored_cols = rows_along_k ? p.K : n_out;
    if (p.beta == 0.0f)
        for (int64_t i = 0; i < n_out; ++i) C[i * inc_y] = 0.0f;
    FASTGEMM_CBLAS_SGEMV(CblasRowMajor, rows_along_k ? CblasNoTrans : CblasTrans, int(stored_rows),
                         int(stored_cols), p.alpha, mat, ld, x, incx, p.beta, C, int(inc_y));
}

void blas_call(const Problem& p, const float* A, const float* B, float* C) {
    if ((p.M == 1 || p.N == 1) && p.K > 0) return blas_gemv_call(p, A, B, C);
    FASTGEMM_CBLAS_SGEMM(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
                         p.trans_b ? CblasTrans : CblasNoTrans, int(p.M), int(p.N), int(p.K),
                         p.alpha, A, int(p.lda), B, int(p.ldb), p.beta, C, int(p.ldc));
}

// One BLAS call cannot be stopped. When Ctrl-C could reach a user's call
// (interrupt_armed) and the call is long, it is made as several calls on blocks of rows
// of C, with the interrupt looked at between them, and every element of C is still
// computed by one BLAS call over the whole of K, as in the single call. The first block
// is kFirstPieceFlops per thread; each later one is sized from the rate the previous
// one ran at to take about kPieceSeconds, so the wait for Ctrl-C stays under half a
// second on slow cores and fast ones alike. Timed runs call BLAS whole (blas_sgemm_timed).
constexpr double kFirstPieceFlops = 5.0e9;
constexpr double kPieceSeconds = 0.15;
constexpr int64_t kPieceRowQuantum = 8;

// fork() (its prepare handler) and process exit close this gate and wait for the BLAS
// calls in flight, so neither happens in the middle of one: OpenBLAS's locks and worker
// threads would then be in a state that the child, or OpenBLAS's own exit-time shutdown,
// cannot recover from (either hangs). A closed gate lets no new call in, so a thread that
// calls BLAS in a loop cannot starve the closing (a reader-preferring rwlock would).
// fork reopens it in both processes; exit keeps it closed: a call started by a thread
// that outlives exit waits for the process to end.
class BlasGate {
public:
    static BlasGate& instance() {
        static BlasGate* gate = [] {
            auto* g = new BlasGate();  // never destroyed: exit must still find it
#if defined(__unix__) || defined(__APPLE__)
            pthread_atfork([] { instance().hold_for_fork(); }, [] { instance().release_in_parent(); },
                           [] { instance().reset_in_child(); });
#endif
            std::atexit([] { instance().close(); });
            return g;
        }();
        return *gate;
    }

    void enter() {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [this] { return !closed_; });
        ++in_flight_;
    }
    void leave() {
        std::lock_guard<std::mutex> lock(mu_);
        --in_flight_;
        changed_.notify_all();
    }
    void close() {
        std::unique_lock<std::mutex> lock(mu_);
        closed_ = true;
        changed_.wait(lock, [this] { return in_flight_ == 0; });
    }
    // fork: closed and drained as by close(), and the mutex itself held across fork(),
    // so that no thread owns it in the copied state; both processes release it after.
    void hold_for_fork() {
        std::unique_lock<std::mutex> lock(mu_);
        closed_ = true;
        changed_.wait(lock, [this] { return in_flight_ == 0; });
        lock.release();
    }
    void release_in_parent() {
        closed_ = false;
        mu_.unlock();
        changed_.notify_all();
    }
    // The child has one thread and copies of objects that other threads were waiting on:
    // a copied condition variable still counts those waiters (glibc's broadcast would
    // wait for them), so the child starts from new ones.
    void reset_in_child() {
        new (&mu_) std::mutex();
        new (&changed_) std::condition_variable();
        in_flight_ = 0;
        closed_ = false;
    }

private:
    std::mutex mu_;
    std::condition_variable changed_;
    int in_flight_ = 0;
    bool closed_ = false;
};

struct BlasCallInFlight {
    BlasCallInFlight() { BlasGate::instance().enter(); }
    ~BlasCallInFlight() { BlasGate::instance().leave(); }
    BlasCallInFlight(const BlasCallInFlight&) = delete;
    BlasCallInFlight& operator=(const BlasCallInFlight&) = delete;
};

// Rows of C for a block of `flops`, a multiple of kPieceRowQuantum (at least one).
int64_t piece_rows(double flops, double per_row) {
    const int64_t rows = int64_t(flops / per_row) / kPieceRowQuantum * kPieceRowQuantum;
    return std::max(kPieceRowQuantum, rows);
}

void blas_sgemm(const Problem& p, const float* A, const float* B, float* C) {
    const BlasCallInFlight in_flight;
    sync_blas_threads();
    const double first = kFirstPieceFlops * std::max(1, get_num_threads());
    if (!interrupt_armed() || p.flops() < 2.0 * first) return blas_call(p, A, B, C);
    const double per_row = 2.0 * double(p.N) * double(p.K);
    int64_t rows = piece_rows(first, per_row);
    for (int64_t i0 = 0; i0 < p.M && !interrupt_requested();) {
        Problem block = p;
        block.M = std::min(rows, p.M - i0);
        const auto t0 = std::chrono::steady_clock::now();
        blas_call(block, p.trans_a ? A + i0 : A + i0 * p.lda, B, C + i0 * p.ldc);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        i0 += block.M;
        // The next block at the rate this one ran, at most four times as large.
        const double rate = double(block.M) * per_row / std::max(took, 1e-4);
        rows = std::min(4 * rows, piece_rows(rate * kPieceSeconds, per_row));
    }
}

// The timed form: one BLAS call, as a user of the library makes it, inside the gate.
void blas_sgemm_timed(const Problem& p, const float* A, const float* B, float* C) {
    const BlasCallInFlight in_flight;
    sync_blas_threads();
    blas_call(p, A, B, C);
}

}  // namespace

std::string blas_name() {
#if defined(FASTGEMM_BLAS_ACCELERATE)
    return "accelerate";
#else
    return "openblas";
#endif
}

std::string blas_version() {
#if defined(FASTGEMM_BLAS_SCIPY_OPENBLAS)
    return std::string(scipy_openblas_get_config()) + " (core " + scipy_openblas_get_corename() + ")";
#elif defined(FASTGEMM_BLAS_ACCELERATE)
    return "Accelerate (cblas_sgemm, new LAPACK interface)";
#else
    return "system CBLAS";
#endif
}

#if !defined(FASTGEMM_BLAS_ACCELERATE)
// How long OpenBLAS's workers spin after running p: 2^28 TSC ticks before they sleep,
// 0.08-0.13 s at 2-3.5 GHz (on the H200 machine the packed kernel still ran 13x slow
// 50 ms after an OpenBLAS call, at its own speed 200 ms after). OpenBLAS wakes them only
// for an sgemm with M N K above 4 x 65536, or an sgemv of at least 4 x 2304 matrix
// elements (GEMM_MULTITHREAD_THRESHOLD's default, 4, in its interface/gemm.c and
// gemv.c), and not at all on one thread.
static double openblas_spin(const Problem& p) {
    const double mnk = double(p.M) * double(p.N) * double(p.K);
    const bool vector = (p.M == 1 || p.N == 1) && p.K > 0;
    const bool threaded = vector ? mnk >= 4.0 * 2304.0 : mnk > 4.0 * 65536.0;
    return threaded && get_num_threads() > 1 ? 0.15 : 0.0;
}
#endif

void register_blas_baseline(Registry& r) {
    // The gate is built here, at import, in the importing thread, never by a first call:
    // - a fork while another thread was inside its first initialisation would copy the
    //   static's guard "in progress" into the child, whose first BLAS call would wait on it
    //   for ever;
    // - fork runs prepare handlers in reverse order of registration, and the gate must be
    //   drained before OpenBLAS's own prepare handler shuts its worker threads down (that
    //   shutdown meeting a call in flight leaves OpenBLAS's state unusable). OpenBLAS
    //   registers its handler in its constructor, which runs before any code of this
    //   library, so a gate registered from here is always the later registration.
    BlasGate::instance();
    KernelInfo info;
    info.name = blas_name();
    info.backend = "cpu";
    info.baseline = true;
    info.auto_candidate = true;
    info.source = "src/cpu/blas_baseline.cpp";
    info.description = "vendor BLAS cblas_sgemm: " + blas_version();
#if !defined(FASTGEMM_BLAS_ACCELERATE)
    info.spins_after = openblas_spin;
#endif
    // CBLAS takes int: dimensions and leading dimensions past INT_MAX are refused before any
    // work, and kernel="auto" never offers it such a problem.
    for (char d : {'M', 'N', 'K'}) info.constraints.push_back(Constraint::at_most(d, INT_MAX));
    info.constraints.push_back(Constraint::leading_at_most(INT_MAX));
    r.add_kernel(std::make_unique<HostKernel>(std::move(info), blas_sgemm, blas_sgemm_timed));
}

#else  // built without a BLAS

std::string blas_name() { return ""; }
std::string blas_version() { return "none (built with FASTGEMM_BLAS=none)"; }
void register_blas_baseline(Registry&) {}

#endif

}  // namespace fastgemm::cpu

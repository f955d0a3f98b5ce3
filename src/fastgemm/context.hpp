// Context: one backend, chosen once, and the BLAS-like calls that run on it.
//
// A Context is a small immutable handle on the process-wide Registry (the same one the
// Python module uses), so constructing one is cheap and copying it is fine. It knows
// nothing about which backends exist: "auto" and names are resolved by the Registry.
//
// Thread safety: every method is const and may be called from any number of threads
// on one shared Context. Each sgemm call binds its own Launch (no shared mutable state
// in the Context); kernel="auto" consults the autotune table under a lock. CPU kernels
// share one worker pool: while one call holds it, concurrent calls run their parallel
// regions on their own thread (same partition, same results, less speed-up).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/kernel_info.hpp"
#include "core/selection.hpp"
#include "timings.hpp"
#include "trans.hpp"

namespace fastgemm {

class Context {
public:
    // backend: "auto" (kernel="auto" then chooses the backend per problem too, among the
    // available performance backends; named kernels come from the best backend that has
    // them), or "cpu", "cuda", "metal", "metal-emu". accuracy: what kernel="auto" may
    // trade (core/selection.hpp). Throws NotFoundError for an unknown name and
    // BackendUnavailableError when the backend cannot run on this machine.
    explicit Context(const std::string& backend = "auto", Accuracy accuracy = Accuracy::fp32);

    const std::string& backend() const { return backend_; }  // "auto" or an available backend
    Accuracy accuracy() const { return accuracy_; }
    BackendStatus status() const;

    // C = alpha * op(A) op(B) + beta * C in FP32. op(A) is M x K, op(B) is K x N, C is
    // M x N; lda/ldb/ldc count elements between consecutive rows of the arrays as stored
    // (A is K x M when trans_a is T). beta == 0 does not read C. kernel: "auto" (the
    // fastest kernel that accepts the problem, timed on first use of a shape class) or
    // a name from kernels(). Returns the KernelInfo of the kernel that ran.
    //
    // Throws ShapeError (negative size, leading dimension too small, null pointer for a
    // non-empty operand, C overlapping A or B), NotFoundError (unknown kernel),
    // ConstraintError (the kernel's constraint rejects the problem), KernelError (a
    // device failure). Nothing is written to C when an error is thrown before launch.
    const KernelInfo& sgemm(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K,
                            float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                            float beta, float* C, int64_t ldc,
                            const std::string& kernel = "auto") const;
    // The same with an explicit layout, like cblas_sgemm: ColMajor leading dimensions
    // count elements between columns. Column-major C = op(A) op(B) is computed as the
    // row-major C^T = op(B)^T op(A)^T, without copies.
    const KernelInfo& sgemm(Layout layout, Trans trans_a, Trans trans_b, int64_t M, int64_t N,
                            int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                            int64_t ldb, float beta, float* C, int64_t ldc,
                            const std::string& kernel = "auto") const;

    // Kernels of this backend (of every available backend for "auto"): baselines first,
    // then the ladder in order.
    std::vector<KernelInfo> kernels() const;
    const KernelInfo& kernel_info(const std::string& name) const;  // NotFoundError
    // The kernel that kernel="auto" runs for this (row-major) problem.
    const KernelInfo& select(int64_t M, int64_t N, int64_t K, Trans trans_a = Trans::N,
                             Trans trans_b = Trans::N, float alpha = 1.0f, float beta = 0.0f) const;

    // Verifies, then times `kernel` ("auto" allowed) on an M x N x K problem of random
    // inputs, natively. A failed verification does not throw: check
    // timings.verification.passed.
    Timings benchmark(const std::string& kernel, int64_t M, int64_t N, int64_t K,
                      const BenchmarkOptions& options = {}) const;

private:
    std::string backend_;
    Accuracy accuracy_ = Accuracy::fp32;
};

// Every backend fastgemm knows, available or not (with the reason).
std::vector<BackendStatus> backends();
// Every kernel of one backend ("" = all backends), in the order fastgemm lists them.
std::vector<KernelInfo> kernels(const std::string& backend = "");

// sgemm on a process-wide Context("auto"), created on first use.
const KernelInfo& sgemm(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                        const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                        float* C, int64_t ldc, const std::string& kernel = "auto");

}  // namespace fastgemm

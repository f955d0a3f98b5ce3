// Context: backend resolution and the BLAS-like sgemm over raw pointers. All checks
// that the Python face makes in Kernel::bind (Problem::validate, KernelInfo::check)
// happen here too, so both faces raise the same errors with the same messages; what
// only raw pointers can get wrong (null, overlap) is checked here in addition.
#include "context.hpp"

#include <cstdint>
#include <functional>
#include <utility>

#include "core/selection.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"

namespace fastgemm {

namespace {

Problem make_problem(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, int64_t lda,
                     int64_t ldb, float beta, int64_t ldc) {
    Problem p;
    p.M = M, p.N = N, p.K = K;
    p.lda = lda, p.ldb = ldb, p.ldc = ldc;
    p.trans_a = ta == Trans::T, p.trans_b = tb == Trans::T;
    p.alpha = alpha, p.beta = beta;
    return p;
}

// The bytes an operand spans, as integers: comparing pointers into different arrays
// with < is unspecified, std::less on them is not.
struct Span {
    std::uintptr_t begin, end;
};
Span span_of(const float* data, int64_t elements) {
    auto b = reinterpret_cast<std::uintptr_t>(data);
    return {b, b + std::uintptr_t(elements) * sizeof(float)};
}
bool overlap(Span a, Span b) { return a.begin < b.end && b.begin < a.end; }

void check_pointers(const Problem& p, const float* A, const float* B, const float* C) {
    auto require = [&](const float* ptr, const char* name, int64_t rows, int64_t cols) {
        if (ptr == nullptr && rows > 0 && cols > 0) {
            throw ShapeError(std::string(name) + " is a null pointer but spans " + std::to_string(rows) +
                             "x" + std::to_string(cols) + " elements in " + p.describe());
        }
    };
    require(A, "A", p.a_rows(), p.a_cols());
    require(B, "B", p.b_rows(), p.b_cols());
    require(C, "C", p.M, p.N);
    // BLAS forbids C aliasing an input: the kernel would overwrite what it still reads.
    Span c = span_of(C, p.c_span());
    if (p.c_span() > 0 && p.a_span() > 0 && overlap(c, span_of(A, p.a_span()))) {
        throw ShapeError("C overlaps A in memory; sgemm writes C while reading A, so pass a copy of A");
    }
    if (p.c_span() > 0 && p.b_span() > 0 && overlap(c, span_of(B, p.b_span()))) {
        throw ShapeError("C overlaps B in memory; sgemm writes C while reading B, so pass a copy of B");
    }
}

bool automatic(const std::string& name) { return name.empty() || name == "auto"; }

}  // namespace

Context::Context(const std::string& backend, Accuracy accuracy)
    : backend_(automatic(backend) ? "auto" : Registry::global().resolve_backend(backend).name()),
      accuracy_(accuracy) {
    if (backend_ == "auto") Registry::global().best_backend();  // throws when nothing can run here
}

BackendStatus Context::status() const {
    const Registry& reg = Registry::global();
    return (backend_ == "auto" ? reg.best_backend() : reg.backend(backend_)).status();
}

const KernelInfo& Context::sgemm(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                                 float* C, int64_t ldc, const std::string& kernel) const {
    Problem p = make_problem(trans_a, trans_b, M, N, K, alpha, lda, ldb, beta, ldc);
    p.validate();
    check_pointers(p, A, B, C);
    if (automatic(kernel)) return run_selected(backend_, p, accuracy_, A, B, C).info();
    const Kernel& k = Registry::global().resolve_kernel(backend_, kernel);
    k.run_once(p, A, B, C);  // an empty C: nothing computed, but a constraint still throws
    return k.info();
}

const KernelInfo& Context::sgemm(Layout layout, Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K,
                                 float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
                                 float beta, float* C, int64_t ldc, const std::string& kernel) const {
    if (layout == Layout::RowMajor) {
        return sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, kernel);
    }
    // Column-major X is row-major X^T: C^T (N x M) = op(B)^T (N x K) op(A)^T (K x M).
    return sgemm(trans_b, trans_a, N, M, K, alpha, B, ldb, A, lda, beta, C, ldc, kernel);
}

std::vector<KernelInfo> Context::kernels() const {
    if (backend_ != "auto") return fastgemm::kernels(backend_);
    std::vector<KernelInfo> out;
    for (const Backend* b : Registry::global().backends())
        if (Registry::global().available(*b))
            for (const KernelInfo& k : fastgemm::kernels(b->name())) out.push_back(k);
    return out;
}

const KernelInfo& Context::kernel_info(const std::string& name) const {
    return Registry::global().resolve_kernel(backend_, name).info();
}

const KernelInfo& Context::select(int64_t M, int64_t N, int64_t K, Trans trans_a, Trans trans_b, float alpha,
                                  float beta) const {
    Problem p = Problem::dense(M, N, K, trans_a == Trans::T, trans_b == Trans::T, alpha, beta);
    p.validate();
    return select_kernel(backend_, p, accuracy_).info();
}

std::vector<BackendStatus> backends() {
    std::vector<BackendStatus> out;
    for (const Backend* b : Registry::global().backends()) out.push_back(b->status());
    return out;
}

std::vector<KernelInfo> kernels(const std::string& backend) {
    if (!backend.empty()) Registry::global().backend(backend);  // unknown name -> NotFoundError
    std::vector<KernelInfo> out;
    for (const Kernel* k : Registry::global().kernels(backend)) out.push_back(k->info());
    return out;
}

const KernelInfo& sgemm(Trans trans_a, Trans trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                        const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                        int64_t ldc, const std::string& kernel) {
    static const Context context("auto");  // thread-safe initialisation; retried if it threw
    return context.sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, kernel);
}

}  // namespace fastgemm

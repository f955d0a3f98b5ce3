// Transposed B, seed 003's "Transposing B": copy op(B) into BT (N x K, rows contiguous),
// then C(i, j) = dot(row i of op(A), row j of BT): both operands stream along k.
// The copy is part of every timed call and its share is reported as prep time, since
// whether it pays depends on how often the same B is reused.
//
// split4 keeps four partial sums (k mod 4) so that four independent add chains hide
// the add latency; it changes the summation order, so it is no longer bit-identical
// to a strict increasing-k loop. Any shape, transposes, alpha and beta.
#include <chrono>
#include <vector>

#include "core/host_kernel.hpp"
#include "core/registry.hpp"
#include "cpu/ladder.hpp"
#include "cpu/loop_access.hpp"

namespace fastgemm::cpu {

namespace {

using Clock = std::chrono::steady_clock;

template <bool TA>
void dot_rows(const Problem& p, const float* A, const float* BT, float* C) {
    for (int64_t i = 0; i < p.M && !interrupt_requested(); ++i) {
        for (int64_t j = 0; j < p.N; ++j) {
            const float* b = BT + j * p.K;
            float sum = 0.0f;
            for (int64_t k = 0; k < p.K; ++k) sum += at<TA>(A, p.lda, i, k) * b[k];
            C[i * p.ldc + j] = finish_dot(p, sum, C[i * p.ldc + j]);
        }
    }
}

template <bool TA>
void dot_rows_split4(const Problem& p, const float* A, const float* BT, float* C) {
    for (int64_t i = 0; i < p.M && !interrupt_requested(); ++i) {
        for (int64_t j = 0; j < p.N; ++j) {
            const float* b = BT + j * p.K;
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            int64_t k = 0;
            for (; k + 4 <= p.K; k += 4) {
                s0 += at<TA>(A, p.lda, i, k + 0) * b[k + 0];
                s1 += at<TA>(A, p.lda, i, k + 1) * b[k + 1];
                s2 += at<TA>(A, p.lda, i, k + 2) * b[k + 2];
                s3 += at<TA>(A, p.lda, i, k + 3) * b[k + 3];
            }
            for (; k < p.K; ++k) s0 += at<TA>(A, p.lda, i, k) * b[k];
            C[i * p.ldc + j] = finish_dot(p, (s0 + s1) + (s2 + s3), C[i * p.ldc + j]);
        }
    }
}

class TransposedBLaunch : public Launch {
public:
    TransposedBLaunch(bool split4, const Problem& p, const float* A, const float* B, float* C)
        : split4_(split4), p_(p), A_(A), B_(B), C_(C), BT_(size_t(p.N * p.K)) {}

    Timing run() override {
        auto t0 = Clock::now();
        if (scale_only(p_, C_, 0, p_.M)) {
            double s = std::chrono::duration<double>(Clock::now() - t0).count();
            return {s, s, 0.0};
        }
        const float* bt = B_;
        if (!p_.trans_b || p_.ldb != p_.K) {
            // op(B)(k, j) -> BT[j * K + k]; when B is stored transposed and dense it
            // already is BT.
            for (int64_t k = 0; k < p_.K; ++k) {
                for (int64_t j = 0; j < p_.N; ++j) {
                    BT_[size_t(j * p_.K + k)] =
                        p_.trans_b ? B_[j * p_.ldb + k] : B_[k * p_.ldb + j];
                }
            }
            bt = BT_.data();
        }
        auto t1 = Clock::now();
        auto body = [&](auto ta) {
            constexpr bool TA = decltype(ta)::value;
            split4_ ? dot_rows_split4<TA>(p_, A_, bt, C_) : dot_rows<TA>(p_, A_, bt, C_);
        };
        p_.trans_a ? body(std::true_type{}) : body(std::false_type{});
        auto t2 = Clock::now();
        double total = std::chrono::duration<double>(t2 - t0).count();
        return {total, total, std::chrono::duration<double>(t1 - t0).count()};
    }

private:
    bool split4_;
    Problem p_;
    const float* A_;
    const float* B_;
    float* C_;
    std::vector<float> BT_;
};

class TransposedBKernel : public Kernel {
public:
    TransposedBKernel(KernelInfo info, bool split4) : Kernel(std::move(info)), split4_(split4) {}

protected:
    std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                        float* C) const override {
        return std::make_unique<TransposedBLaunch>(split4_, p, A, B, C);
    }

private:
    bool split4_;
};

}  // namespace

void register_transposed_b(Registry& r) {
    KernelInfo info;
    info.backend = "cpu";
    info.source = "src/cpu/transposed_b.cpp";
    info.bench_flops_cap = 2.0 * 1024 * 1024 * 1024;  // strided A reads when trans_a

    info.name = "transposed_b";
    info.ladder_step = 7;
    info.description = "copy op(B) to BT, then dot products of contiguous rows (copy timed as prep)";
    r.add_kernel(std::make_unique<TransposedBKernel>(info, false));

    info.name = "transposed_b_split4";
    info.ladder_step = 8;
    info.description = "transposed B with four split accumulators (k mod 4) to hide add latency";
    info.params = {{"accumulators", 4}};
    r.add_kernel(std::make_unique<TransposedBKernel>(info, true));
}

}  // namespace fastgemm::cpu

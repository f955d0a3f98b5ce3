// fastgemm from C++: pick a backend, list its kernels, run a BLAS-style sgemm with
// transposes, alpha, beta and padded leading dimensions, check it against a float64
// loop computed here, do the same from several threads sharing one Context, and time
// the chosen kernel beside the vendor baseline. Exits non-zero if any check fails.
//
//   fastgemm_example [--backend NAME] [--threads N]
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fastgemm/fastgemm.hpp>

namespace {

// C = alpha * A @ B^T + beta * C0, A: M x K (lda), B: N x K (ldb), C: M x N (ldc).
constexpr int64_t M = 123, N = 77, K = 45, lda = K + 3, ldb = K + 1, ldc = N + 5;
constexpr float alpha = 0.5f, beta = 2.0f;

std::vector<float> random_matrix(int64_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
}

// Relative Frobenius error of C against the float64 result.
double rel_err(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C0,
               const std::vector<float>& C) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k) acc += double(A[size_t(i * lda + k)]) * B[size_t(j * ldb + k)];
            double ref = alpha * acc + double(beta) * C0[size_t(i * ldc + j)];
            double d = C[size_t(i * ldc + j)] - ref;
            num += d * d;
            den += ref * ref;
        }
    }
    return std::sqrt(num / den);
}

}  // namespace

int main(int argc, char** argv) {
    std::string backend = "auto";
    int threads = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--backend")) backend = argv[i + 1];
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    }
    try {
        fastgemm::Context ctx(backend);
        std::cout << "fastgemm " << fastgemm::version() << ", backend " << ctx.backend() << " ("
                  << ctx.status().device << "), kernels:";
        for (const fastgemm::KernelInfo& k : ctx.kernels()) std::cout << " " << k.name << (k.baseline ? "*" : "");
        std::cout << " (* = baseline)\n";

        const auto A = random_matrix(M * lda, 1), B = random_matrix(N * ldb, 2), C0 = random_matrix(M * ldc, 3);
        std::vector<float> C = C0;
        const fastgemm::KernelInfo& used = ctx.sgemm(fastgemm::Trans::N, fastgemm::Trans::T, M, N, K, alpha,
                                                     A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
        const double tol = fastgemm::tolerance_for(used.precision, K);
        const double err = rel_err(A, B, C0, C);
        bool ok = err <= tol;
        std::cout << "sgemm " << M << "x" << N << "x" << K << " trans_b alpha=" << alpha << " beta=" << beta
                  << " via " << used.name << ": rel_err " << err << " (tolerance " << tol << ") "
                  << (ok ? "ok" : "WRONG") << "\n";

        // One Context, many threads: each has its own C, all read the same A and B.
        std::vector<int> good(size_t(std::max(threads, 0)), 0);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                for (int round = 0; round < 3; ++round) {
                    std::vector<float> Ct = C0;
                    const auto& k = ctx.sgemm(fastgemm::Trans::N, fastgemm::Trans::T, M, N, K, alpha, A.data(),
                                              lda, B.data(), ldb, beta, Ct.data(), ldc);
                    good[size_t(t)] += rel_err(A, B, C0, Ct) <= fastgemm::tolerance_for(k.precision, K);
                }
            });
        }
        for (auto& th : pool) th.join();
        int correct = 0;
        for (int g : good) correct += g;
        std::cout << "threads: " << correct << "/" << 3 * threads << " concurrent calls correct\n";
        ok = ok && correct == 3 * threads;

        // Errors are exceptions with the same text Python shows.
        try {
            ctx.sgemm(fastgemm::Trans::N, fastgemm::Trans::T, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta,
                      C.data(), ldc, "no_such_kernel");
            ok = false;
        } catch (const fastgemm::NotFoundError& e) {
            std::cout << "NotFoundError: " << e.what() << "\n";
        }

        fastgemm::BenchmarkOptions opts;
        opts.warmup = 1;
        opts.iters = 3;
        for (const auto& k : ctx.kernels()) {
            if (k.baseline) opts.baseline = "auto";
        }
        fastgemm::Timings t = ctx.benchmark("auto", 256, 256, 256, opts);
        std::cout << "benchmark " << t.kernel << " 256^3: " << t.gflops() << " GFLOP/s (median of "
                  << t.device_s.size() << "), verified " << (t.verification.passed ? "ok" : "FAILED");
        if (t.baseline) std::cout << ", " << t.ratio << "x " << t.baseline->kernel;
        std::cout << "\n";
        ok = ok && t.verification.passed;

        std::cout << (ok ? "fastgemm example: OK" : "fastgemm example: FAILED") << std::endl;
        return ok ? 0 : 1;
    } catch (const fastgemm::Error& e) {
        std::cerr << "fastgemm error: " << e.what() << std::endl;
        return 2;
    }
}

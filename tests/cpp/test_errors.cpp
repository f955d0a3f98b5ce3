// The documented exceptions of the C++ API, their types and the key parts of their
// messages (the Python face shows the same what() text; tests/test_cpp_package.py
// compares one message across the two faces).
#include <vector>

#include "test_support.hpp"

using namespace fastgemm;

int main() {
    Context ctx("auto");
    std::vector<float> A(64, 0.5f), B(64, 0.25f), C(64, 0.0f);
    auto call = [&](int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc,
                    const std::string& kernel = "auto") {
        ctx.sgemm(Trans::N, Trans::N, M, N, K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), ldc, kernel);
    };

    std::string msg = test::expect_throw<NotFoundError>([] { Context c("no-such-backend"); }, "unknown backend");
    CHECK(msg.find("unknown backend 'no-such-backend'") != std::string::npos, msg);
    CHECK(msg.find("cpu") != std::string::npos, "the message lists the backends: " << msg);

    msg = test::expect_throw<NotFoundError>([&] { call(4, 4, 4, 4, 4, 4, "no_such_kernel"); }, "unknown kernel");
    CHECK(msg.find("unknown kernel 'no_such_kernel'") != std::string::npos, msg);

    msg = test::expect_throw<ShapeError>([&] { call(4, 4, 4, 3, 4, 4); }, "lda too small");
    CHECK(msg.find("lda = 3") != std::string::npos, msg);
    msg = test::expect_throw<ShapeError>([&] { call(4, 4, 4, 4, 4, 2); }, "ldc too small");
    CHECK(msg.find("ldc = 2") != std::string::npos, msg);
    msg = test::expect_throw<ShapeError>([&] { call(-1, 4, 4, 4, 4, 4); }, "negative M");
    CHECK(msg.find("non-negative") != std::string::npos, msg);

    msg = test::expect_throw<ShapeError>(
        [&] { ctx.sgemm(Trans::N, Trans::N, 2, 2, 2, 1.0f, nullptr, 2, B.data(), 2, 0.0f, C.data(), 2); },
        "null A");
    CHECK(msg.find("A is a null pointer") != std::string::npos, msg);
    // C written in place over A: BLAS forbids it, fastgemm says so instead of computing garbage.
    msg = test::expect_throw<ShapeError>(
        [&] { ctx.sgemm(Trans::N, Trans::N, 4, 4, 4, 1.0f, A.data(), 4, B.data(), 4, 0.0f, A.data() + 8, 4); },
        "C overlaps A");
    CHECK(msg.find("C overlaps A") != std::string::npos, msg);
    CHECK(A[8] == 0.5f, "an overlapping call wrote C before throwing");

    // One row (or column) too long for a 64-bit byte offset: refused like any longer span,
    // for auto and named kernels alike, before anything is read or written.
    for (const char* kernel : {"auto", "packed", "ijk", "direct_dot"}) {
        const int64_t huge = int64_t(1) << 62;  // elements: 2^64 bytes
        msg = test::expect_throw<ShapeError>(
            [&] {
                ctx.sgemm(Trans::N, Trans::T, 1, 1, huge, 1.0f, A.data(), huge, B.data(), huge, 0.0f, C.data(), 1,
                          kernel);
            },
            std::string("a row of 2^62 elements through ") + kernel);
        CHECK(msg.find("64-bit offset") != std::string::npos, msg);
    }
    msg = test::expect_throw<ShapeError>(
        [&] {
            const int64_t huge = int64_t(1) << 62;
            ctx.sgemm(Trans::N, Trans::N, 1, huge, 0, 1.0f, A.data(), 1, B.data(), huge, 0.0f, C.data(), huge);
        },
        "a C row of 2^62 elements with K = 0");
    CHECK(msg.find("64-bit offset") != std::string::npos, msg);

    msg = test::expect_throw<NotFoundError>([] { kernels("no-such-backend"); }, "kernels of unknown backend");

    // Every unavailable backend says why, through the same exception Python maps to RuntimeError.
    for (const BackendStatus& b : backends()) {
        if (b.available) continue;
        msg = test::expect_throw<BackendUnavailableError>([&] { Context c(b.name); }, "unavailable " + b.name);
        CHECK(msg.find(b.reason) != std::string::npos, "reason missing from: " << msg);
    }

    // A kernel whose constraint rejects a prime-sized problem raises ConstraintError naming it.
    for (const BackendStatus& b : backends()) {
        if (!b.available) continue;
        Context c(b.name);
        for (const KernelInfo& k : c.kernels()) {
            Problem p = Problem::dense(37, 29, 23);
            if (k.accepts(p)) continue;
            std::vector<float> a(37 * 23, 1.0f), bb(23 * 29, 1.0f), cc(37 * 29, 0.0f);
            msg = test::expect_throw<ConstraintError>(
                [&] {
                    c.sgemm(Trans::N, Trans::N, 37, 29, 23, 1.0f, a.data(), 23, bb.data(), 29, 0.0f, cc.data(), 29,
                            k.name);
                },
                "constraint of " + k.name);
            CHECK(msg.find(k.name) != std::string::npos, msg);
        }
    }

    // Every error is a fastgemm::Error, hence a std::runtime_error.
    test::expect_throw<Error>([&] { call(4, 4, 4, 4, 4, 4, "no_such_kernel"); }, "base class");
    msg = test::expect_throw<ArgumentError>([] { set_num_threads(0); }, "set_num_threads(0)");
    CHECK(msg.find("thread count") != std::string::npos, msg);
    return test::finish("test_errors");
}

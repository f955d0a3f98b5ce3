// Thread safety as documented in fastgemm/context.hpp: one Context shared by several
// std::threads, each calling sgemm concurrently on shared read-only A and B (and its
// own C), with kernel="auto" (the autotuner's first, locked, timing pass races here)
// and with every kernel of every available backend. Every result must match the
// float64 reference.
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace fastgemm;

namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 6;

struct Shared {
    test::Case c;
    test::Operands o;
};

void hammer(const Context& ctx, const std::string& kernel, const std::vector<Shared>& work) {
    std::atomic<int> bad{0}, calls{0};
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) {
        pool.emplace_back([&, t] {
            try {
                for (int r = 0; r < kRounds; ++r) {
                    const Shared& s = work[size_t(t + r) % work.size()];
                    const test::Case& c = s.c;
                    std::vector<float> C = test::initial_c(c, s.o);
                    const KernelInfo& k =
                        ctx.sgemm(test::tr(c.ta), test::tr(c.tb), c.M, c.N, c.K, c.alpha, s.o.A.data(), c.lda(),
                                  s.o.B.data(), c.ldb(), c.beta, C.data(), c.ldc(), kernel);
                    if (!(test::rel_err(c, s.o, C) <= tolerance_for(k.precision, c.K))) {
                        ++bad;
                        errors[size_t(t)] = k.name + " wrong on " + c.describe();
                    }
                    ++calls;
                }
            } catch (const std::exception& e) {
                ++bad;
                errors[size_t(t)] = e.what();
            }
        });
    }
    for (auto& th : pool) th.join();
    for (int t = 0; t < kThreads; ++t) {
        CHECK(errors[size_t(t)].empty(), ctx.backend() << "/" << kernel << " thread " << t << ": " << errors[size_t(t)]);
    }
    CHECK(calls == kThreads * kRounds, "only " << calls << " calls completed");
    std::cout << ctx.backend() << "/" << kernel << ": " << calls << " concurrent calls, " << bad << " wrong\n";
}

}  // namespace

// A task that throws (a scratch allocation, say) ends its job; the caller rethrows the
// exception only once no thread runs the job's function any more, and the pool works on.
// (It used to return with workers still inside the caller's lambda, whose frame was gone,
// and leave the caller's thread marked as inside a parallel region for good.)
void task_exceptions_reach_the_caller_after_every_thread_left() {
    set_num_threads(2);
    for (int round = 0; round < 200; ++round) {
        std::atomic<int> running{0}, after_return{0};
        std::atomic<bool> returned{false};
        try {
            parallel_for(64, [&](int t, int) {
                if (returned.load()) after_return++;
                running++;
                if (t == 0) throw std::runtime_error("task 0 failed");
                volatile int busy = 0;
                for (int spin = 0; spin < 20000; ++spin) busy = busy + 1;
                if (returned.load()) after_return++;
            });
            CHECK(false, "parallel_for returned normally after a task threw");
        } catch (const std::runtime_error& e) {
            CHECK(std::string(e.what()) == "task 0 failed", e.what());
        }
        returned = true;
        CHECK(after_return.load() == 0, "a task ran after parallel_for had returned");
        CHECK(running.load() < 64, "the job went on after a task threw: " << running.load() << " tasks");
    }
    std::atomic<int> done{0};
    parallel_for(8, [&](int, int) { done++; });
    CHECK(done.load() == 8, "the pool after exceptions ran " << done.load() << " of 8 tasks");
}

int main() {
    std::cout << "threads per kernel: " << kThreads << " (pool threads: " << get_num_threads() << ")\n";
    for (const BackendStatus& b : backends()) {
        if (!b.available) continue;
        const Context ctx(b.name);
        // Different shapes, transposes and scalars in flight at once.
        std::vector<test::Case> shapes = {{96, 80, 64, false, false, 1.0f, 0.0f, 0},
                                          {64, 64, 64, false, true, 1.0f, 0.0f, 3},
                                          {37, 29, 23, true, false, -1.0f, 0.5f, 1},
                                          {128, 64, 96, true, true, 2.0f, 0.0f, 0}};
        hammer(ctx, "auto", [&] {
            std::vector<Shared> w;
            for (const auto& c : shapes) w.push_back({c, test::Operands(c, 7 + c.M)});
            return w;
        }());
        for (const KernelInfo& k : ctx.kernels()) {
            std::vector<Shared> w;
            for (const auto& c : shapes) {
                if (k.accepts(Problem::dense(c.M, c.N, c.K, c.ta, c.tb, c.alpha, c.beta))) {
                    w.push_back({c, test::Operands(c, 7 + c.M)});
                }
            }
            if (w.empty()) {
                std::cout << b.name << "/" << k.name << ": no test shape fits its constraints\n";
                continue;
            }
            hammer(ctx, k.name, w);
        }
    }
    task_exceptions_reach_the_caller_after_every_thread_left();
    return test::finish("test_threads");
}

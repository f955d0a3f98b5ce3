// Which calls a Ctrl-C stops (core/interrupt.hpp): those whose scope was open when it
// arrived, with their pool workers and emulated dispatch threads, and no other: not a
// call that starts afterwards while the interrupted one's scope is still open, not an
// unscoped call, not a later scope on the same thread. SIGINT is raised in-process with
// a handler of the test's own in place for fastgemm's to chain to.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/interrupt.hpp"
#include "core/threads.hpp"
#include "test_support.hpp"

using namespace fastgemm;

namespace {

std::atomic<int> g_test_handler_calls{0};
extern "C" void count_sigint(int) { g_test_handler_calls.fetch_add(1); }

// A one-way latch between the test's threads.
class Latch {
public:
    void open() {
        std::lock_guard<std::mutex> lock(m_);
        open_ = true;
        cv_.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return open_; });
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    bool open_ = false;
};

// How many of a parallel_for's tasks saw interrupt_requested(), over enough tasks that
// pool workers run some of them.
int tasks_that_see_an_interrupt() {
    constexpr int kTasks = 64;
    std::atomic<int> seen{0};
    parallel_for(kTasks, [&](int, int) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // spread tasks over threads
        if (interrupt_requested()) seen.fetch_add(1);
    });
    return seen.load();
}

// C = A B (all ones) with `kernel` on `backend`: true when it completed with the right
// answer, false when it was interrupted. Any other outcome is a failure.
bool multiply_completes(const std::string& backend, const std::string& kernel, int64_t n) {
    std::vector<float> A(size_t(n * n), 1.0f), C(size_t(n * n), -1.0f);
    try {
        Context(backend).sgemm(Trans::N, Trans::N, n, n, n, 1.0f, A.data(), n, A.data(), n, 0.0f, C.data(), n,
                               kernel);
    } catch (const Interrupted&) {
        return false;
    }
    bool right = true;
    for (float c : C) right = right && c == float(n);
    CHECK(right, backend << "/" << kernel << " completed with a wrong result");
    return true;
}

bool has_backend(const std::string& name) {
    for (const auto& s : backends())
        if (s.name == name && s.available) return true;
    return false;
}

}  // namespace

int main() {
    struct sigaction handler = {};
    handler.sa_handler = count_sigint;
    sigemptyset(&handler.sa_mask);
    sigaction(SIGINT, &handler, nullptr);
    set_num_threads(4);
    const bool emu = has_backend("metal-emu");

    Latch interrupted_scope_open, sigint_raised, later_calls_done;
    std::thread interrupted([&] {
        InterruptScope scope;
        interrupted_scope_open.open();
        sigint_raised.wait();
        CHECK(interrupt_requested(), "a scope open when SIGINT arrived does not see it");
        CHECK(tasks_that_see_an_interrupt() == 64, "pool workers do not stop for their caller's Ctrl-C");
        {
            InterruptScope nested;
            CHECK(interrupt_requested(), "a nested scope forgot the outer call's Ctrl-C");
        }
        CHECK(!multiply_completes("cpu", "jki", 64), "a CPU kernel ran on through its caller's Ctrl-C");
        if (emu) CHECK(!multiply_completes("metal-emu", "naive", 64), "an emulated dispatch ran on through its caller's Ctrl-C");
        later_calls_done.wait();  // the scope stays open while the later calls run
    });

    interrupted_scope_open.wait();
    raise(SIGINT);  // delivered to this thread; the handler counts it and chains to the test's
    CHECK(g_test_handler_calls.load() == 1, "fastgemm's handler did not chain to the one before it");
    sigint_raised.open();

    CHECK(!interrupt_requested(), "an unscoped thread sees another call's Ctrl-C");
    std::thread later([&] {
        InterruptScope scope;
        CHECK(!interrupt_requested(), "a call that began after the Ctrl-C sees it");
        CHECK(tasks_that_see_an_interrupt() == 0, "pool workers stop a later call for an earlier Ctrl-C");
        CHECK(multiply_completes("cpu", "jki", 64), "a CPU call that began after the Ctrl-C was interrupted");
        CHECK(multiply_completes("cpu", "packed", 256), "a threaded CPU call that began after the Ctrl-C was interrupted");
        if (emu) CHECK(multiply_completes("metal-emu", "naive", 64), "an emulated call that began after the Ctrl-C was interrupted");
    });
    later.join();
    later_calls_done.open();
    interrupted.join();

    {
        InterruptScope scope;
        CHECK(!interrupt_requested(), "a later scope on the same thread sees an old Ctrl-C");
        raise(SIGINT);
        CHECK(interrupt_requested(), "a scope does not see a Ctrl-C that arrives while it is open");
        CHECK(tasks_that_see_an_interrupt() == 64, "pool workers do not stop for the caller's Ctrl-C");
    }
    CHECK(!interrupt_requested(), "the Ctrl-C outlived its scope");
    CHECK(tasks_that_see_an_interrupt() == 0, "pool workers outside any scope see a Ctrl-C");
    std::cout << "emulated dispatches " << (emu ? "checked" : "not built here") << "\n";
    return test::finish("test_interrupt");
}

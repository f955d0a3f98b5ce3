// Fault reports for isolated dispatches (see faults.hpp).
#include "faults.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace fgemu {
namespace {

char* g_report = nullptr;
size_t g_report_bytes = 0;
std::atomic<bool> g_installed{false};
std::atomic<bool> g_claimed{false};
double g_time_limit = 0;
constexpr size_t kAltStackBytes = 64 * 1024;

// The thread's alternate signal stack, where the fault handler runs (a stack overflow leaves
// no room on the fiber's own). Installed only where the thread has none (AddressSanitizer
// installs its own and unmaps it itself when the thread ends); removed with the thread.
struct AltStack {
    void* mem = nullptr;
    ~AltStack() {
        if (!mem) return;
        stack_t ss;
        std::memset(&ss, 0, sizeof ss);
        ss.ss_flags = SS_DISABLE;
        sigaltstack(&ss, nullptr);
        munmap(mem, kAltStackBytes);
    }
};
thread_local AltStack t_alt_stack;

std::mutex& threads_mu() {
    static std::mutex* m = new std::mutex;
    return *m;
}
std::vector<pthread_t>& threads() {
    static auto* v = new std::vector<pthread_t>;
    return *v;
}

const char* describe_signal(int sig, const siginfo_t* si, char* buf, size_t n) {
    switch (sig) {
        case SIGSEGV:
        case SIGBUS: {
            size_t guard_bytes = 0;
            const char* guard = static_cast<const char*>(running_fiber_guard(&guard_bytes));
            const char* a = static_cast<const char*>(si ? si->si_addr : nullptr);
            if (guard && a >= guard - 65536 && a < guard + guard_bytes)
                return "stack overflow: the thread's private memory (local arrays, recursion) "
                       "outgrew its fiber stack (FGEMU_STACK_KB / stack_kb)";
            std::snprintf(buf, n, "invalid memory access at address %p (%s)", static_cast<const void*>(a),
                          sig == SIGBUS ? "bus error" : "segmentation fault");
            return buf;
        }
        case SIGFPE:
            return (si && si->si_code == FPE_INTDIV) ? "integer division by zero"
                   : (si && si->si_code == FPE_INTOVF) ? "integer overflow trap (INT_MIN / -1)"
                                                       : "arithmetic fault";
        case SIGILL: return "illegal instruction (a trap or unreachable code was executed)";
        case SIGTRAP: return "trap instruction";
        case SIGABRT: return "abort() (e.g. std::terminate after an exception left a noexcept function)";
        case SIGSYS: return "bad system call";
        case SIGXCPU:
            std::snprintf(buf, n, "time limit of %.3g s exceeded (a loop that never ends?)", g_time_limit);
            return buf;
        default: return "fatal signal";
    }
}

void on_fatal(int sig, siginfo_t* si, void*) {
    if (g_claimed.exchange(true)) {
        for (;;) pause();  // another thread is writing the report and ends the process
    }
    char what[200], where[300];
    const char* w = describe_signal(sig, si, what, sizeof what);
    if (!describe_running_thread(where, sizeof where))
        std::snprintf(where, sizeof where, "the metal-emu runtime (outside any kernel thread)");
    if (g_report && g_report_bytes) std::snprintf(g_report, g_report_bytes, "%s in %s", w, where);
    _exit(kFaultExitStatus);
}

}  // namespace

void install_fault_handlers(char* report, size_t bytes) {
    // Several modules (each with its own copy of this runtime) share one worker process:
    // the module about to run installs its handlers every time, so the handler that runs
    // is the one whose thread-local state describes the running kernel.
    g_report = report;
    g_report_bytes = bytes;
    g_installed = true;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = &on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS, SIGXCPU})
        sigaction(sig, &sa, nullptr);
}

bool fault_handlers_installed() { return g_installed.load(); }

void enter_worker_thread() {
    if (!g_installed.load()) return;
    stack_t old;
    if (!t_alt_stack.mem && sigaltstack(nullptr, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
        void* m = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
        if (m != MAP_FAILED) {
            stack_t ss;
            std::memset(&ss, 0, sizeof ss);
            ss.ss_sp = m;
            ss.ss_size = kAltStackBytes;
            if (sigaltstack(&ss, nullptr) == 0) t_alt_stack.mem = m;
            else munmap(m, kAltStackBytes);
        }
    }
    std::lock_guard<std::mutex> lock(threads_mu());
    threads().push_back(pthread_self());
}

void leave_worker_thread() {
    if (!g_installed.load()) return;
    std::lock_guard<std::mutex> lock(threads_mu());
    auto& v = threads();
    auto it = std::find_if(v.begin(), v.end(), [](pthread_t t) { return pthread_equal(t, pthread_self()); });
    if (it != v.end()) v.erase(it);
}

struct Watchdog::State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread thread;
};

// Longer than any run (about 115 days): a limit past it (Inf included) is none, and the
// steady clock's time point cannot overflow when the limit is added to now().
constexpr double kLongestTimeLimit = 1e7;

Watchdog::Watchdog(double seconds) {
    if (!(seconds > 0 && seconds < kLongestTimeLimit) || !g_installed.load()) return;
    g_time_limit = seconds;
    s_ = new State;
    State* s = s_;
    s->thread = std::thread([s, seconds] {
        std::unique_lock<std::mutex> lock(s->mu);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        if (s->cv.wait_until(lock, deadline, [s] { return s->done; })) return;
        std::lock_guard<std::mutex> tl(threads_mu());
        for (pthread_t t : threads()) pthread_kill(t, SIGXCPU);
    });
}

Watchdog::~Watchdog() {
    if (!s_) return;
    {
        std::lock_guard<std::mutex> lock(s_->mu);
        s_->done = true;
    }
    s_->cv.notify_all();
    s_->thread.join();
    delete s_;
}

}  // namespace fgemu

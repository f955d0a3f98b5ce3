// Interrupts (see interrupt.hpp).
#include "interrupt.hpp"

#include <atomic>
#include <mutex>
#include <new>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <signal.h>
#define FASTGEMM_POSIX_SIGNALS 1
#endif

namespace fastgemm {

namespace {

// SIGINTs that reached our handler. A watch compares it with the value it began at.
std::atomic<uint64_t> g_sigints{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the signal handler needs a lock-free counter");
std::atomic<bool> g_installed{false};
thread_local uint64_t t_watch_since = InterruptWatch::kNone;  // InterruptWatch::since_ of this thread

#if defined(FASTGEMM_POSIX_SIGNALS)
std::mutex g_install_mutex;
struct sigaction g_previous;  // the handler ours chains to; written only under the mutex

extern "C" void chaining_sigint_handler(int sig, siginfo_t* info, void* context) {
    // Async-signal-safe: a lock-free atomic only.
    g_sigints.fetch_add(1, std::memory_order_relaxed);
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
    }
}

// Puts our handler in front of the current one, unless it is already there or there
// is nothing to chain to.
void ensure_installed() {
    // Every call takes the mutex, so a fork while another thread computes can copy it
    // locked; the child (one thread, none inside) starts from an unlocked one.
    static const bool reset_in_child =
        pthread_atfork(nullptr, nullptr, [] { new (&g_install_mutex) std::mutex(); }) == 0;
    (void)reset_in_child;
    std::lock_guard<std::mutex> lock(g_install_mutex);
    struct sigaction current;
    if (sigaction(SIGINT, nullptr, &current) != 0) return;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == chaining_sigint_handler) {
        g_installed.store(true);
        return;
    }
    const bool chainable = (current.sa_flags & SA_SIGINFO) ||
                           (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    g_installed.store(chainable);
    if (!chainable) return;
    struct sigaction ours = {};
    ours.sa_sigaction = chaining_sigint_handler;
    ours.sa_flags = SA_SIGINFO | (current.sa_flags & SA_RESTART);
    sigemptyset(&ours.sa_mask);
    g_previous = current;
    sigaction(SIGINT, &ours, nullptr);
}
#endif

}  // namespace

InterruptWatch InterruptWatch::current() {
    InterruptWatch w;
    w.since_ = t_watch_since;
    return w;
}

bool InterruptWatch::requested() const {
    return since_ != kNone && g_sigints.load(std::memory_order_relaxed) != since_;
}

bool interrupt_requested() { return InterruptWatch::current().requested(); }

void throw_if_interrupted() {
    if (interrupt_requested()) throw Interrupted();
}

bool interrupt_armed() { return t_watch_since != InterruptWatch::kNone && g_installed.load(); }

InterruptScope::InterruptScope() : outermost_(t_watch_since == InterruptWatch::kNone) {
    if (!outermost_) return;
#if defined(FASTGEMM_POSIX_SIGNALS)
    ensure_installed();  // first: every SIGINT counted after the read below reaches the handler
#endif
    t_watch_since = g_sigints.load(std::memory_order_relaxed);
}

InterruptScope::~InterruptScope() {
    if (outermost_) t_watch_since = InterruptWatch::kNone;
}

AdoptInterruptWatch::AdoptInterruptWatch(InterruptWatch watch) : previous_(InterruptWatch::current()) {
    t_watch_since = watch.since_;
}

AdoptInterruptWatch::~AdoptInterruptWatch() { t_watch_since = previous_.since_; }

}  // namespace fastgemm

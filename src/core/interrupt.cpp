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

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_live_scopes{0};
std::atomic<bool> g_installed{false};

#if defined(FASTGEMM_POSIX_SIGNALS)
std::mutex g_install_mutex;
struct sigaction g_previous;  // the handler ours chains to; written only under the mutex

extern "C" void chaining_sigint_handler(int sig, siginfo_t* info, void* context) {
    // Async-signal-safe: lock-free atomics only.
    if (g_live_scopes.load(std::memory_order_relaxed) > 0) g_interrupted.store(true, std::memory_order_relaxed);
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

bool interrupt_requested() { return g_interrupted.load(std::memory_order_relaxed); }

void throw_if_interrupted() {
    if (interrupt_requested()) throw Interrupted();
}

bool interrupt_armed() { return g_live_scopes.load(std::memory_order_relaxed) > 0 && g_installed.load(); }

InterruptScope::InterruptScope() {
    if (g_live_scopes.fetch_add(1) == 0) g_interrupted.store(false);
#if defined(FASTGEMM_POSIX_SIGNALS)
    ensure_installed();
#endif
}

InterruptScope::~InterruptScope() {
    if (g_live_scopes.fetch_sub(1) == 1) g_interrupted.store(false);
}

}  // namespace fastgemm

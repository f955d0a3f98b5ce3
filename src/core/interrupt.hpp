// Interrupt: lets Ctrl-C stop long native work without waiting for the call to end.
//
// A caller that can be interrupted (the Python face) holds an InterruptScope around a
// native call that may run long. The first scope installs a SIGINT handler that counts
// each signal in a process-wide counter and then runs the handler that was installed
// before it (CPython's, which schedules KeyboardInterrupt). Long loops poll interrupt_requested()
// between blocks and return early; callers see it after the kernel returns and throw
// Interrupted, so a partial C is never reported as a result.
//
// A call stops only for a Ctrl-C that arrived while it ran: its scope remembers the
// count it opened at, and interrupt_requested() compares with that. A call that starts
// after a Ctrl-C (on any thread, while other calls are still being interrupted, or
// unscoped as from the C++ face) never returns early because of it. Work a call hands
// to other threads carries the call's watch there (InterruptWatch): the pool's workers
// and the emulator's dispatch threads stop for their caller's Ctrl-C and no other.
//
// Cost: the chaining handler is installed by the first scope and stays; each scope
// then asks the kernel once whether it is still ours (Python's signal.signal may have
// replaced it) and reinstalls it if not. That one system call is why callers open a
// scope only for calls long enough to need one (the bindings: above ~1e8 FLOPs).
#pragma once

#include <cstdint>

#include "errors.hpp"

namespace fastgemm {

// What a thread's work stops for: Ctrl-Cs after a given point, or none (outside any
// scope). A small value, copied to the threads that do a call's work.
class InterruptWatch {
public:
    static constexpr uint64_t kNone = ~uint64_t{0};  // since_ of a watch that stops for nothing

    // The calling thread's: that of its outermost live scope, or of the work it runs
    // for another thread (AdoptInterruptWatch); none otherwise.
    static InterruptWatch current();
    // A Ctrl-C arrived after this watch began. One relaxed atomic load.
    bool requested() const;

private:
    friend class InterruptScope;
    friend class AdoptInterruptWatch;
    uint64_t since_ = kNone;  // the SIGINT count when the watch began
};

// InterruptWatch::current().requested(): cheap enough for every block of a loop nest.
bool interrupt_requested();

// Thrown instead of returning a result that an interrupt cut short.
struct Interrupted : KernelError {
    Interrupted() : KernelError("interrupted by a signal (Ctrl-C) before the result was complete") {}
};

// Throws Interrupted when interrupt_requested().
void throw_if_interrupted();

// Whether a Ctrl-C would reach interrupt_requested() now: the calling thread is inside
// a scope and the handler is installed. Work that can only stop between calls it makes
// (the BLAS baseline) splits itself into pieces only then.
bool interrupt_armed();

// Arms interrupts for the calling thread for its lifetime: Ctrl-Cs from now on are
// requests to stop. A scope inside another on the same thread keeps the outer one's
// watch, so a Ctrl-C the outer call must see is not forgotten. Nothing is installed
// when SIGINT is ignored or has its default action, since chaining to those has no
// meaning; no Ctrl-C is then counted.
class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

private:
    bool outermost_;
};

// Makes the calling thread watch `watch` for its lifetime (a pool worker running a
// caller's tasks), then restores what it watched before.
class AdoptInterruptWatch {
public:
    explicit AdoptInterruptWatch(InterruptWatch watch);
    ~AdoptInterruptWatch();
    AdoptInterruptWatch(const AdoptInterruptWatch&) = delete;
    AdoptInterruptWatch& operator=(const AdoptInterruptWatch&) = delete;

private:
    InterruptWatch previous_;
};

}  // namespace fastgemm

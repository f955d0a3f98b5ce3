// Fault reports for dispatches run in an isolated worker process (fastgemm.emu).
//
// A shader can fault (a wild pointer, a stack overflow from a large private array or deep
// recursion, an integer division by zero, a trap), abort, or never end. The worker process
// installs handlers for the fatal signals: the handler writes one line naming the fault, the
// kernel, the threadgroup and the thread into a report buffer the parent process shares,
// then ends the worker at once (its memory may be corrupt). The parent reads the line and
// raises KernelError; the interpreter is never in danger. A time limit is enforced by a
// watchdog thread that signals every OS thread running the dispatch, so the report names
// the thread that was running when time ran out.
#pragma once

#include <cstddef>

namespace fgemu {

// Exit status of a worker that wrote a report.
constexpr int kFaultExitStatus = 70;

// Installs the handlers (once per process); `report` receives a NUL-terminated line.
void install_fault_handlers(char* report, size_t bytes);
bool fault_handlers_installed();

// Called by each OS thread around the groups it runs: an alternate signal stack (a stack
// overflow is handled on it) and registration with the watchdog.
void enter_worker_thread();
void leave_worker_thread();

// While alive and `seconds` > 0, ends an overrunning dispatch with a report (worker only).
class Watchdog {
public:
    explicit Watchdog(double seconds);
    ~Watchdog();
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    struct State;
    State* s_ = nullptr;
};

// Defined by the dispatch engine: where the calling OS thread is (kernel, group, thread),
// and the guard page of the fiber it runs.
bool describe_running_thread(char* out, size_t n);
const void* running_fiber_guard(size_t* bytes);

}  // namespace fgemu

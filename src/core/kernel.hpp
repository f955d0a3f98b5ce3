// Kernel and Launch: how the core runs an implementation without knowing its backend.
//
// A Kernel binds a Problem and the caller's host operands into a Launch. The Launch
// owns whatever the backend needs (device buffers, packed copies, pipeline state),
// so that run() is one timed iteration and nothing else. finish() makes the result
// visible in the caller's C. The Runner times run() in a loop; sgemm() calls run()
// once. No Python is involved in either.
#pragma once

#include <memory>

#include "kernel_info.hpp"
#include "problem.hpp"

namespace fastgemm {

// One iteration's time, in seconds. device: the kernel alone (GPU timestamps, CUDA
// events, or the CPU clock around the computation). host: the complete call as a
// caller sees it (encode, submit, wait). For CPU kernels both are the same clock.
struct Timing {
    double device_s = 0.0;
    double host_s = 0.0;
    double prep_s = 0.0;  // part of device_s spent preparing operands (a transpose, packing)
    // Host time to queue the work on an asynchronous device (0 where run() computes on
    // the host): a loop of calls costs max(device_s, launch_s) each, so a kernel whose
    // launch costs more than its arithmetic loses small problems however fast it runs.
    double launch_s = 0.0;
};

// Per call of a loop of calls (Launch::run_repeated).
struct RepeatTiming {
    double call_s = 0.0;   // the loop's time over its calls, finished at the end
    double queue_s = 0.0;  // host time to queue one call (0 where the call computes on the host)
};

class Launch {
public:
    virtual ~Launch() = default;
    virtual Timing run() = 0;    // C = alpha * op(A) op(B) + beta * C, once
    virtual void finish() {}     // copy back / synchronise so that C holds the result
    // `calls` back-to-back runs, finished once at the end: what a caller's loop of small
    // calls costs, where an asynchronous device overlaps one call's launch with the
    // previous call's arithmetic (neither max(device_s, launch_s) nor their sum: a launch
    // of several kernels keeps the device waiting between them). A backend that replays
    // a repeated call differently from a first one (the cuda backend's graphs) runs it
    // here as it runs the caller's repeated calls.
    virtual RepeatTiming run_repeated(int calls);
};

class Kernel {
public:
    explicit Kernel(KernelInfo info) : info_(std::move(info)) {}
    virtual ~Kernel() = default;
    const KernelInfo& info() const { return info_; }

    // Checks constraints, then prepares a launch. A, B, C must stay alive until the
    // Launch is destroyed; C is read when beta != 0.
    std::unique_ptr<Launch> bind(const Problem& p, const float* A, const float* B, float* C) const;

    // One complete call, as fastgemm.sgemm makes it: the same checks and quick return as
    // bind(), then C = alpha * op(A) op(B) + beta * C, finished (C holds the result).
    // Throws Interrupted when a Ctrl-C cut the work short (core/interrupt.hpp).
    void run_once(const Problem& p, const float* A, const float* B, float* C) const;

protected:
    virtual std::unique_ptr<Launch> make_launch(const Problem& p, const float* A, const float* B,
                                                float* C) const = 0;
    // run_once's work after the checks. The default binds a Launch, runs and finishes it;
    // a backend overrides it to skip what a single call does not need (a Launch object,
    // buffers that a timing loop would reuse, event timing).
    virtual void run_direct(const Problem& p, const float* A, const float* B, float* C) const;

private:
    KernelInfo info_;
};

}  // namespace fastgemm

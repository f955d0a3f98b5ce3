// Fibers: the threads of one emulated threadgroup, switched cooperatively on one OS thread.
//
// x86-64 uses a ten-instruction register switch (callee-saved registers, MXCSR, x87 control
// word); other targets, or FGEMU_FIBER_UCONTEXT, use POSIX ucontext (works on Linux and macOS,
// but costs a signal-mask system call per switch). Under AddressSanitizer every switch is
// announced with __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber so that ASan
// knows which stack is live.
#pragma once

#include <cstddef>

namespace fgemu {

class Fiber;

// The context a worker OS thread runs its scheduler on.
struct FiberHost {
    void* sp = nullptr;             // saved stack pointer (asm switch)
    void* uctx = nullptr;           // ucontext_t* (ucontext switch)
    const void* asan_bottom = nullptr;  // host stack, learnt from the first switch back
    size_t asan_size = 0;
};

class Fiber {
public:
    explicit Fiber(size_t stack_bytes);
    ~Fiber();
    Fiber(const Fiber&) = delete;
    Fiber& operator=(const Fiber&) = delete;

    // Prepares the fiber to run fn(arg) from the top of its stack on the next resume().
    void reset(void (*fn)(void*), void* arg);
    // Host -> fiber; returns when the fiber yields or exits.
    void resume(FiberHost& host);
    // Fiber -> host. `dying` tells ASan that this fiber's stack frames are gone for good.
    void yield(FiberHost& host, bool dying = false);

    // The guard page below the stack (a fault there is a stack overflow).
    const void* guard(size_t* bytes) const {
        *bytes = mem_size_ - stack_size_;
        return mem_;
    }

    // Called first thing by the fiber's entry (ASan bookkeeping).
    void entered(FiberHost& host);

private:
    char* mem_ = nullptr;  // mapping: guard page + stack
    size_t mem_size_ = 0;
    char* stack_lo_ = nullptr;
    size_t stack_size_ = 0;
    void* sp_ = nullptr;
    void* uctx_ = nullptr;
    void* asan_fake_stack_ = nullptr;
    void (*fn_)(void*) = nullptr;
    void* arg_ = nullptr;
    static void trampoline_entry(Fiber* self);
    friend void fgemu_fiber_start(void*);
};

}  // namespace fgemu

// Fiber switching (see fiber.hpp).
#include "fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FGEMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FGEMU_ASAN 1
#endif

#if defined(FGEMU_ASAN)
#include <sanitizer/asan_interface.h>
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     size_t* size_old);
}
#endif

#if !defined(FGEMU_FIBER_UCONTEXT) && !defined(__x86_64__)
#define FGEMU_FIBER_UCONTEXT 1
#endif

#if defined(FGEMU_FIBER_UCONTEXT)
#if defined(__APPLE__) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 600
#endif
#include <ucontext.h>
#else
// void fgemu_switch_stack(void** save_sp, void* new_sp): pushes the callee-saved state on
// the current stack, stores sp in *save_sp, loads new_sp and pops the state found there.
#if defined(__APPLE__)
#define FGEMU_SYM(x) "_" #x
#else
#define FGEMU_SYM(x) #x
#endif
extern "C" void fgemu_switch_stack(void** save_sp, void* new_sp);
extern "C" void fgemu_fiber_trampoline();
__asm__(
    ".text\n"
    ".globl " FGEMU_SYM(fgemu_switch_stack) "\n"
#if !defined(__APPLE__)
    ".hidden " FGEMU_SYM(fgemu_switch_stack) "\n"
    ".type " FGEMU_SYM(fgemu_switch_stack) ",@function\n"
#endif
    FGEMU_SYM(fgemu_switch_stack) ":\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".globl " FGEMU_SYM(fgemu_fiber_trampoline) "\n"
#if !defined(__APPLE__)
    ".hidden " FGEMU_SYM(fgemu_fiber_trampoline) "\n"
#endif
    FGEMU_SYM(fgemu_fiber_trampoline) ":\n"
    "  movq %r12, %rdi\n"
    "  callq *%r13\n"
    "  ud2\n");
#endif

namespace fgemu {

void fgemu_fiber_start(void* self_v) {
    Fiber* self = static_cast<Fiber*>(self_v);
    self->fn_(self->arg_);  // never returns: the scheduler never resumes an exited fiber
    std::abort();
}

Fiber::Fiber(size_t stack_bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    stack_size_ = (stack_bytes + page - 1) / page * page;
    mem_size_ = stack_size_ + page;
    void* m = mmap(nullptr, mem_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    mem_ = static_cast<char*>(m);
    mprotect(mem_, page, PROT_NONE);  // a stack overflow faults instead of corrupting memory
    stack_lo_ = mem_ + page;
#if defined(FGEMU_FIBER_UCONTEXT)
    uctx_ = new ucontext_t;
#endif
}

Fiber::~Fiber() {
#if defined(FGEMU_FIBER_UCONTEXT)
    delete static_cast<ucontext_t*>(uctx_);
#endif
#if defined(FGEMU_ASAN)
    // A fiber that ended in fail() never unwound: its frames' redzones are still poisoned,
    // and memory mapped later at these addresses would look like a stack overflow.
    ASAN_UNPOISON_MEMORY_REGION(stack_lo_, stack_size_);
#endif
    munmap(mem_, mem_size_);
}

void Fiber::reset(void (*fn)(void*), void* arg) {
    fn_ = fn;
    arg_ = arg;
#if defined(FGEMU_FIBER_UCONTEXT)
    ucontext_t* uc = static_cast<ucontext_t*>(uctx_);
    getcontext(uc);
    uc->uc_stack.ss_sp = stack_lo_;
    uc->uc_stack.ss_size = stack_size_;
    uc->uc_link = nullptr;
    // makecontext passes int arguments: split the pointer into two halves.
    auto start = +[](unsigned lo, unsigned hi) {
        fgemu_fiber_start(reinterpret_cast<void*>((uintptr_t(hi) << 32) | uintptr_t(lo)));
    };
    const uintptr_t p = reinterpret_cast<uintptr_t>(this);
    makecontext(uc, reinterpret_cast<void (*)()>(start), 2, unsigned(p & 0xffffffffu),
                unsigned(p >> 32));
#else
    // Initial frame, matching the pops of fgemu_switch_stack:
    //   [mxcsr, fpucw] r15 r14 r13 r12 rbx rbp ret=trampoline  | (16-byte aligned top)
    // After `ret` rsp is the aligned top, as the ABI wants just before the trampoline's call.
    uintptr_t top = (reinterpret_cast<uintptr_t>(stack_lo_) + stack_size_) & ~uintptr_t(15);
    uint64_t* sp = reinterpret_cast<uint64_t*>(top);
    *--sp = reinterpret_cast<uint64_t>(&fgemu_fiber_trampoline);
    *--sp = 0;                                                        // rbp
    *--sp = 0;                                                        // rbx
    *--sp = reinterpret_cast<uint64_t>(this);                         // r12: argument
    *--sp = reinterpret_cast<uint64_t>(&fgemu_fiber_start);           // r13: function
    *--sp = 0;                                                        // r14
    *--sp = 0;                                                        // r15
    *--sp = uint64_t(0x1F80) | (uint64_t(0x037F) << 32);              // MXCSR, x87 CW
    sp_ = sp;
#endif
}

void Fiber::resume(FiberHost& host) {
#if defined(FGEMU_ASAN)
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, stack_lo_, stack_size_);
#endif
#if defined(FGEMU_FIBER_UCONTEXT)
    if (!host.uctx) host.uctx = new ucontext_t;
    swapcontext(static_cast<ucontext_t*>(host.uctx), static_cast<ucontext_t*>(uctx_));
#else
    fgemu_switch_stack(&host.sp, sp_);
#endif
#if defined(FGEMU_ASAN)
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);  // came back from the fiber
#endif
}

void Fiber::yield(FiberHost& host, bool dying) {
#if defined(FGEMU_ASAN)
    __sanitizer_start_switch_fiber(dying ? nullptr : &asan_fake_stack_, host.asan_bottom,
                                   host.asan_size);
#endif
#if defined(FGEMU_FIBER_UCONTEXT)
    swapcontext(static_cast<ucontext_t*>(uctx_), static_cast<ucontext_t*>(host.uctx));
#else
    fgemu_switch_stack(&sp_, host.sp);
#endif
#if defined(FGEMU_ASAN)
    __sanitizer_finish_switch_fiber(asan_fake_stack_, nullptr, nullptr);
#endif
    (void)dying;
}

void Fiber::entered(FiberHost& host) {
#if defined(FGEMU_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &host.asan_bottom, &host.asan_size);
#endif
    (void)host;
}

}  // namespace fgemu

// MSL atomics (metal_atomic): atomic<T> (atomic_int, atomic_uint, atomic_bool, atomic_float,
// atomic_ulong) and the atomic_*_explicit functions. Threadgroups run in parallel on OS
// threads, so every operation is a real std::atomic_ref operation (sequentially consistent,
// at least as strong as any memory_order asked for). Within a group threads are fibers that
// switch only at barriers: a load or compare-exchange also yields to the group's other
// threads, so a thread spinning on a flag that another thread of its group sets makes
// progress instead of hanging.
#pragma once

#include "fgemu/sync.hpp"

namespace metal {

enum memory_order {
    memory_order_relaxed,
    memory_order_acquire,
    memory_order_release,
    memory_order_acq_rel,
    memory_order_seq_cst,
};
enum class thread_scope { thread, simdgroup, threadgroup, device };
constexpr thread_scope thread_scope_thread = thread_scope::thread;
constexpr thread_scope thread_scope_simdgroup = thread_scope::simdgroup;
constexpr thread_scope thread_scope_threadgroup = thread_scope::threadgroup;
constexpr thread_scope thread_scope_device = thread_scope::device;

template <class T>
struct atomic {
    T value;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;
typedef atomic<long> atomic_long;

namespace detail {
template <class T>
std::atomic_ref<T> aref(volatile atomic<T>* p) { return std::atomic_ref<T>(const_cast<atomic<T>*>(p)->value); }
}  // namespace detail

template <class T, class U>
void atomic_store_explicit(volatile atomic<T>* obj, U desired, memory_order = memory_order_relaxed,
                           thread_scope = thread_scope_device) {
    detail::aref(obj).store(T(desired));
}
template <class T>
T atomic_load_explicit(volatile atomic<T>* obj, memory_order = memory_order_relaxed,
                       thread_scope = thread_scope_device) {
    fgemu::yield_to_group();
    return detail::aref(obj).load();
}
template <class T, class U>
T atomic_exchange_explicit(volatile atomic<T>* obj, U desired, memory_order = memory_order_relaxed,
                           thread_scope = thread_scope_device) {
    return detail::aref(obj).exchange(T(desired));
}
template <class T, class U>
bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* obj, T* expected, U desired,
                                           memory_order = memory_order_relaxed,
                                           memory_order = memory_order_relaxed,
                                           thread_scope = thread_scope_device) {
    fgemu::yield_to_group();
    return detail::aref(obj).compare_exchange_strong(*expected, T(desired));
}
template <class T, class U>
bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* obj, T* expected, U desired,
                                             memory_order = memory_order_relaxed,
                                             memory_order = memory_order_relaxed,
                                             thread_scope = thread_scope_device) {
    fgemu::yield_to_group();
    return detail::aref(obj).compare_exchange_strong(*expected, T(desired));
}
#define FG_ATOMIC_RMW(name, op)                                                                 \
    template <class T, class U>                                                                 \
    T atomic_fetch_##name##_explicit(volatile atomic<T>* obj, U operand,                        \
                                     memory_order = memory_order_relaxed,                       \
                                     thread_scope = thread_scope_device) {                      \
        auto r = detail::aref(obj);                                                             \
        T old = r.load();                                                                       \
        while (!r.compare_exchange_weak(old, op)) {}                                            \
        return old;                                                                             \
    }
FG_ATOMIC_RMW(add, T(old + T(operand)))
FG_ATOMIC_RMW(sub, T(old - T(operand)))
FG_ATOMIC_RMW(and, T(old & T(operand)))
FG_ATOMIC_RMW(or, T(old | T(operand)))
FG_ATOMIC_RMW(xor, T(old ^ T(operand)))
FG_ATOMIC_RMW(min, (T(operand) < old ? T(operand) : old))
FG_ATOMIC_RMW(max, (old < T(operand) ? T(operand) : old))
#undef FG_ATOMIC_RMW
// 64-bit min/max without a returned value (Metal 3.1).
template <class U>
void atomic_min_explicit(volatile atomic<ulong>* obj, U v, memory_order mo = memory_order_relaxed) {
    atomic_fetch_min_explicit(obj, v, mo);
}
template <class U>
void atomic_max_explicit(volatile atomic<ulong>* obj, U v, memory_order mo = memory_order_relaxed) {
    atomic_fetch_max_explicit(obj, v, mo);
}

inline void atomic_thread_fence(mem_flags, memory_order, thread_scope = thread_scope_device) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Non-explicit forms (sequentially consistent).
template <class T, class U>
void atomic_store(volatile atomic<T>* o, U v) { atomic_store_explicit(o, v); }
template <class T>
T atomic_load(volatile atomic<T>* o) { return atomic_load_explicit(o); }
template <class T, class U>
T atomic_exchange(volatile atomic<T>* o, U v) { return atomic_exchange_explicit(o, v); }
template <class T, class U>
T atomic_fetch_add(volatile atomic<T>* o, U v) { return atomic_fetch_add_explicit(o, v); }

}  // namespace metal

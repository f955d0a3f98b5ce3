// Included first by every generated glue file (msl_scan.py): the shims, then the helpers
// that call a kernel with its arguments bound from the running emulated thread.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

namespace fgemu {

inline U3 attr_value(Attr a) {
    ThreadState& t = current();
    const U3 tpg = threads_per_group();
    switch (a) {
        case Attr::thread_position_in_grid: return t.pos_in_grid;
        case Attr::threads_per_grid: {
            const U3 g = groups_per_grid();
            return U3{g.x * tpg.x, g.y * tpg.y, g.z * tpg.z};
        }
        case Attr::thread_position_in_threadgroup: return t.pos_in_group;
        case Attr::threads_per_threadgroup:
        case Attr::dispatch_threads_per_threadgroup: return tpg;
        case Attr::threadgroup_position_in_grid: return t.group_pos;
        case Attr::threadgroups_per_grid: return groups_per_grid();
        case Attr::thread_index_in_threadgroup: return U3{t.index, 0, 0};
        case Attr::thread_index_in_simdgroup: return U3{t.lane, 0, 0};
        case Attr::simdgroup_index_in_threadgroup: return U3{t.simd_index, 0, 0};
        case Attr::threads_per_simdgroup:
        case Attr::thread_execution_width: return U3{kSimdWidth, 0, 0};
        case Attr::simdgroups_per_threadgroup:
        case Attr::dispatch_simdgroups_per_threadgroup: return U3{simdgroups_in_group(), 0, 0};
        case Attr::thread_index_in_quadgroup: return U3{t.index % 4, 0, 0};
        case Attr::quadgroup_index_in_threadgroup: return U3{t.index / 4, 0, 0};
        case Attr::quadgroups_per_threadgroup: return U3{(threads_in_group() + 3) / 4, 0, 0};
        case Attr::grid_origin: return U3{0, 0, 0};
    }
    return U3{};
}

// Fills every element of an array (GNU range designators, see msl_scan.py).
template <class A, class V>
void fill_all(A& a, const V& v) {
    for (auto& e : a) e = v;
}

template <class A>
A attr_as(Attr a) {
    const U3 u = attr_value(a);
    if constexpr (metal::detail::is_vec<A>::value) {
        A r;
        const uint32_t c[3] = {u.x, u.y, u.z};
        for (int i = 0; i < A::size && i < 3; ++i) r[i] = typename A::value_type(c[i]);
        return r;
    } else {
        return A(u.x);
    }
}

inline void* buffer_ptr(int index, size_t need, const char* what) {
    const Binding& b = bound_buffer(index);
    if (!b.ptr)
        fail("buffer(" + std::to_string(index) + ") is not bound (" + what + ")");
    if (b.size < need)
        fail("buffer(" + std::to_string(index) + ") has " + std::to_string(b.size) +
             " bytes but the kernel reads " + std::to_string(need) + " (" + what + ")");
    return b.ptr;
}

template <class A>
decltype(auto) bind_arg(const ArgRole& r) {
    using Bare = std::remove_cv_t<std::remove_reference_t<A>>;
    if (r.kind == ArgRole::attribute) {
        if constexpr (std::is_pointer_v<Bare> || std::is_reference_v<A> ||
                      !(std::is_arithmetic_v<Bare> || metal::detail::is_vec<Bare>::value)) {
            fail("position attribute bound to a parameter that is not a scalar or vector");
            return A(*static_cast<Bare*>(nullptr));
        } else {
            return attr_as<Bare>(Attr(r.index));
        }
    } else if (r.kind == ArgRole::texture) {
        if constexpr (metal::is_texture<Bare>::value) {
            const TextureBinding* t = bound_texture(r.index);
            if (const std::string why = metal::texture_kind_mismatch<Bare>(t); !why.empty())
                fail("texture(" + std::to_string(r.index) + "): " + why);
            return Bare(t);
        } else {
            fail("[[texture(n)]] on a parameter that is not a texture");
            return A(*static_cast<Bare*>(nullptr));
        }
    } else if (r.kind == ArgRole::sampler) {
        if constexpr (std::is_same_v<Bare, metal::sampler>) {
            return Bare();  // the host's sampler state is not modelled: nearest, clamp
        } else {
            fail("[[sampler(n)]] on a parameter that is not a sampler");
            return A(*static_cast<Bare*>(nullptr));
        }
    } else if (r.kind == ArgRole::threadgroup_auto) {
        if constexpr (std::is_pointer_v<Bare>) {
            using Pointee = std::remove_cv_t<std::remove_pointer_t<Bare>>;
            if constexpr (std::is_void_v<Pointee>) {
                return static_cast<Bare>(auto_threadgroup_memory(r.index, 16));
            } else {
                return static_cast<Bare>(auto_threadgroup_memory(r.index, sizeof(Pointee)));
            }
        } else if constexpr (std::is_reference_v<A>) {
            return static_cast<A>(*static_cast<Bare*>(auto_threadgroup_memory(r.index, sizeof(Bare))));
        } else {
            fail("threadgroup argument that is neither a pointer nor a reference");
            return A(*static_cast<Bare*>(nullptr));
        }
    } else if (r.kind == ArgRole::threadgroup_mem) {
        if constexpr (std::is_pointer_v<Bare>) {
            return static_cast<Bare>(bound_threadgroup_memory(r.index));
        } else {
            fail("[[threadgroup(n)]] on a parameter that is not a pointer");
            return A(*static_cast<Bare*>(nullptr));
        }
    } else {
        if constexpr (std::is_pointer_v<Bare>) {
            return static_cast<Bare>(buffer_ptr(r.index, 0, "pointer argument"));
        } else if constexpr (std::is_reference_v<A>) {
            return static_cast<A>(
                *static_cast<Bare*>(buffer_ptr(r.index, sizeof(Bare), "reference argument")));
        } else {
            Bare v;
            std::memcpy(static_cast<void*>(&v), buffer_ptr(r.index, sizeof(Bare), "value argument"),
                        sizeof(Bare));
            return v;
        }
    }
}

// ---- argument buffers ----------------------------------------------------------------
// The emulator lays out an argument buffer as the compiler lays out its struct, as Metal 3
// does with GPU addresses: a pointer member holds the address of the array bound to its id,
// a plain-data member (scalar, vector, struct) a copy of the bytes given for it, and an
// array member (`T m[N]`, `array<T, N>`) takes N consecutive ids, and a texture member the
// texture given for it. A sampler member keeps its zero state (nearest, clamp to edge, as a
// bound [[sampler(n)]] samples); references are not modelled and are refused by name.

template <class M> struct argbuf_slots {
    static constexpr bool indexed = false;
    static constexpr int value = 1;
};
template <class T, size_t N> struct argbuf_slots<T[N]> {
    static constexpr bool indexed = true;
    static constexpr int value = int(N);
};
template <class T, size_t N> struct argbuf_slots<metal::array<T, N>> {
    static constexpr bool indexed = true;
    static constexpr int value = int(N);
};

[[noreturn]] inline void argbuf_refuse(const char* member, const std::string& why) {
    throw std::invalid_argument(std::string("member ") + member + ": " + why);
}

template <class E>
void argbuf_store(E& e, const char* member, void* ptr, size_t n, bool texture) {
    if constexpr (metal::is_texture<E>::value) {
        if (!texture) argbuf_refuse(member, "a texture member: give a fastgemm.emu.Texture for it");
        const auto* t = static_cast<const TextureBinding*>(ptr);
        if (const std::string why = metal::texture_kind_mismatch<E>(t); !why.empty()) argbuf_refuse(member, why);
        e = E(t);
        return;
    }
    if (texture) argbuf_refuse(member, "not a texture member, but given a Texture");
    if constexpr (std::is_pointer_v<E>) {
        e = static_cast<E>(ptr);
    } else if constexpr (std::is_same_v<E, metal::sampler>) {
        argbuf_refuse(member, "unsupported: the host's sampler state (leave the id out: "
                      "nearest, clamp to edge)");
    } else if constexpr (std::is_trivially_copyable_v<E>) {
        if (n != sizeof(E))
            argbuf_refuse(member, "holds " + std::to_string(sizeof(E)) + " bytes of plain data, "
                          "was given " + std::to_string(n));
        std::memcpy(static_cast<void*>(&e), ptr, n);
    } else {
        argbuf_refuse(member, "unsupported: a member of this type in an argument buffer");
    }
}

// Whether [[id(id)]] falls on member M declared with [[id(first)]].
template <class M>
constexpr bool argbuf_holds(int first, int id) {
    return id >= first && id < first + argbuf_slots<M>::value;
}

template <class M, class S>
void argbuf_set(S& m, const char* member, int slot, void* ptr, size_t n, bool texture) {
    if constexpr (std::is_reference_v<M>) {
        argbuf_refuse(member, "unsupported: a reference member in an argument buffer (use a pointer)");
    } else if constexpr (argbuf_slots<M>::indexed) {
        argbuf_store(m[slot], member, ptr, n, texture);
    } else {
        argbuf_store(m, member, ptr, n, texture);
    }
}

[[noreturn]] inline void argbuf_no_member(const char* struct_name, int id) {
    throw std::invalid_argument(std::string("struct ") + struct_name + " has no member with [[id(" +
                                std::to_string(id) + ")]]");
}

template <class... A, size_t... I>
void call_kernel(void (*fn)(A...), const ArgRole* roles, std::index_sequence<I...>) {
    fn(bind_arg<A>(roles[I])...);
}

template <class... A>
constexpr size_t count_args(void (*)(A...)) { return sizeof...(A); }

template <auto Fn>
void invoke(const ArgRole* roles) {
    call_kernel(Fn, roles, std::make_index_sequence<count_args(Fn)>{});
}

struct Registrar {
    explicit Registrar(const Module& m) { register_module(m); }
};

}  // namespace fgemu

// A module compiled into a library with several shaders (fastgemm's own) registers itself
// at load time. A module compiled by fastgemm.emu has no static initialiser at all: its one
// exported function hands the table to the runtime.
#if defined(FGEMU_STATIC_REGISTRATION)
#define FGEMU_MODULE(m) namespace { const ::fgemu::Registrar fgemu_registrar(m); }
#else
#define FGEMU_MODULE(m) \
    extern "C" __attribute__((visibility("default"))) const ::fgemu::Module* fgemu_module() { return &m; }
#endif

#define is_function_constant_defined(x) ::fgemu::fc_defined(&(x))

// Textures and samplers in compute kernels (metal_texture), over the texels the host binds
// (fgemu::TextureBinding; fastgemm.emu.Texture on the Python side).
//
// read/write/get_width/... of texture1d, texture1d_array, texture2d, texture2d_array,
// texture3d, texturecube (six slices), texture_buffer, depth2d (one channel) and texture2d_ms
// (one sample); texture atomics on 32-bit integer textures; sample() with nearest or bilinear
// filtering, normalized or pixel coordinates, clamp-to-edge/zero or repeat addressing, mip
// level 0 only. Storage formats: float32, float16, and 8/16/32-bit integers, read by a float
// texture as unorm/snorm. Missing channels read as (0, 0, 0, 1). Reads outside the texture
// give zero and writes there are dropped (what Metal does with bounds checking). gather(),
// mip levels and imageblocks fail with "unsupported".
#pragma once

#include "fgemu/math.hpp"

namespace metal {

enum class access { read, write, read_write, sample };
enum memory_coherence { memory_coherence_threadgroup, memory_coherence_device };
enum class component { x, y, z, w };  // which channel gather() returns

namespace coord { enum coord_t { normalized, pixel }; }
namespace filter { enum filter_t { nearest, linear, bicubic }; }
namespace mag_filter { enum mag_filter_t { nearest, linear }; }
namespace min_filter { enum min_filter_t { nearest, linear }; }
namespace address { enum address_t { clamp_to_edge, clamp_to_zero, clamp_to_border, repeat, mirrored_repeat }; }
namespace s_address { enum s_address_t { clamp_to_edge, clamp_to_zero, clamp_to_border, repeat, mirrored_repeat }; }
namespace t_address { enum t_address_t { clamp_to_edge, clamp_to_zero, clamp_to_border, repeat, mirrored_repeat }; }
namespace r_address { enum r_address_t { clamp_to_edge, clamp_to_zero, clamp_to_border, repeat, mirrored_repeat }; }
namespace mip_filter { enum mip_filter_t { none, nearest, linear }; }
namespace compare_func { enum compare_func_t { never, less, less_equal, greater, greater_equal, equal, not_equal, always }; }
namespace border_color { enum border_color_t { transparent_black, opaque_black, opaque_white }; }
using coord::normalized;
using coord::pixel;
struct level { uint l; constexpr explicit level(uint x) : l(x) {} };
struct bias { float b; constexpr explicit bias(float x) : b(x) {} };
struct min_lod_clamp { float c; constexpr explicit min_lod_clamp(float x) : c(x) {} };

struct sampler {
    bool pixel_coords = false, linear = false, repeat = false, zero_outside = false;
    constexpr sampler() = default;
    template <class... A>
    constexpr sampler(A... a) { (set(a), ...); }

private:
    constexpr void set(coord::coord_t c) { pixel_coords = c == coord::pixel; }
    constexpr void set(filter::filter_t f) { linear = f != filter::nearest; }
    constexpr void set(mag_filter::mag_filter_t f) { linear = f == mag_filter::linear; }
    constexpr void set(min_filter::min_filter_t) {}
    constexpr void set(address::address_t a) { repeat = a == address::repeat; zero_outside = a == address::clamp_to_zero || a == address::clamp_to_border; }
    constexpr void set(s_address::s_address_t a) { repeat = a == s_address::repeat; }
    constexpr void set(t_address::t_address_t) {}
    constexpr void set(r_address::r_address_t) {}
    template <class X>
    constexpr void set(X) {}  // mip filter, compare function, border colour, anisotropy
};

namespace fgemu_detail {

using TB = ::fgemu::TextureBinding;

template <class T>
T load_channel(const TB& b, const unsigned char* p) {
    float f = 0;
    long long i = 0;
    switch (b.format) {
        case TB::f32: { float v; std::memcpy(&v, p, 4); f = v; i = (long long)v; break; }
        case TB::f16: { half v; std::memcpy(&v, p, 2); f = float(v); i = (long long)f; break; }
        case TB::i32: { int32_t v; std::memcpy(&v, p, 4); i = v; f = std::max(float(v) / 2147483647.0f, -1.0f); break; }
        case TB::u32: { uint32_t v; std::memcpy(&v, p, 4); i = v; f = float(v) / 4294967295.0f; break; }
        case TB::i16: { int16_t v; std::memcpy(&v, p, 2); i = v; f = std::max(float(v) / 32767.0f, -1.0f); break; }
        case TB::u16: { uint16_t v; std::memcpy(&v, p, 2); i = v; f = float(v) / 65535.0f; break; }
        case TB::i8: { int8_t v; std::memcpy(&v, p, 1); i = v; f = std::max(float(v) / 127.0f, -1.0f); break; }
        case TB::u8: { uint8_t v = *p; i = v; f = float(v) / 255.0f; break; }
    }
    if constexpr (::fgemu::is_float_v<T>) return T(f);
    else return T(i);
}

template <class T>
void store_channel(const TB& b, unsigned char* p, T x) {
    const float f = float(x);
    auto norm = [&](float scale, float lo) { return fgemu::libm::lrint(fgemu::libm::fmin(fgemu::libm::fmax(f, lo), 1.0f) * scale); };
    const bool fl = ::fgemu::is_float_v<T>;
    switch (b.format) {
        case TB::f32: { float v = f; std::memcpy(p, &v, 4); break; }
        case TB::f16: { half v = half(f); std::memcpy(p, &v, 2); break; }
        case TB::i32: { int32_t v = fl ? int32_t(norm(2147483647.0f, -1.0f)) : int32_t((long long)(x)); std::memcpy(p, &v, 4); break; }
        case TB::u32: { uint32_t v = fl ? uint32_t(norm(4294967295.0f, 0.0f)) : uint32_t((unsigned long long)(x)); std::memcpy(p, &v, 4); break; }
        case TB::i16: { int16_t v = fl ? int16_t(norm(32767.0f, -1.0f)) : int16_t((long long)(x)); std::memcpy(p, &v, 2); break; }
        case TB::u16: { uint16_t v = fl ? uint16_t(norm(65535.0f, 0.0f)) : uint16_t((unsigned long long)(x)); std::memcpy(p, &v, 2); break; }
        case TB::i8: { int8_t v = fl ? int8_t(norm(127.0f, -1.0f)) : int8_t((long long)(x)); std::memcpy(p, &v, 1); break; }
        case TB::u8: { uint8_t v = fl ? uint8_t(norm(255.0f, 0.0f)) : uint8_t((unsigned long long)(x)); *p = v; break; }
    }
}

inline size_t elem_bytes(const TB& b) {
    static const size_t e[] = {4, 2, 4, 4, 2, 2, 1, 1};
    return e[b.format];
}

inline unsigned char* texel(const TB* b, long x, long y, long z, long slice) {
    if (!b || x < 0 || y < 0 || z < 0 || slice < 0 || x >= long(b->width) || y >= long(b->height) ||
        z >= long(b->depth) || slice >= long(b->slices))
        return nullptr;
    const size_t idx = ((size_t(slice) * b->depth + size_t(z)) * b->height + size_t(y)) * b->width + size_t(x);
    return static_cast<unsigned char*>(b->ptr) + idx * b->channels * elem_bytes(*b);
}

template <class T>
vec<T, 4> read_texel(const TB* b, long x, long y, long z, long slice) {
    vec<T, 4> r(T(0));
    r[3] = T(1);
    const unsigned char* p = texel(b, x, y, z, slice);
    if (!p) return vec<T, 4>(T(0));
    for (uint32_t c = 0; c < b->channels && c < 4; ++c) r[int(c)] = load_channel<T>(*b, p + c * elem_bytes(*b));
    return r;
}

template <class T, class V>
void write_texel(const TB* b, const V& v, long x, long y, long z, long slice) {
    unsigned char* p = texel(b, x, y, z, slice);
    if (!p) return;
    for (uint32_t c = 0; c < b->channels && c < 4; ++c) store_channel<T>(*b, p + c * elem_bytes(*b), T(v[int(c)]));
}

template <class C>
long comp(const C& c, int i) {
    if constexpr (detail::is_vec<C>::value) return i < C::size ? long(c[i]) : 0;
    else return i == 0 ? long(c) : 0;
}

// Nearest or bilinear sample at normalized (or pixel) coordinates.
template <class T>
vec<T, 4> sample_2d(const TB* b, const sampler& s, float u, float v, long slice) {
    if (!b) return vec<T, 4>(T(0));
    float x = s.pixel_coords ? u : u * float(b->width), y = s.pixel_coords ? v : v * float(b->height);
    auto wrap = [&](long i, long n) {
        if (s.repeat) return ((i % n) + n) % n;
        if (s.zero_outside) return i;
        return std::min(std::max(i, 0L), n - 1);
    };
    if (!s.linear) return read_texel<T>(b, wrap(long(fgemu::libm::floor(x)), b->width), wrap(long(fgemu::libm::floor(y)), b->height), 0, slice);
    x -= 0.5f;
    y -= 0.5f;
    const long x0 = long(fgemu::libm::floor(x)), y0 = long(fgemu::libm::floor(y));
    const float fx = x - float(x0), fy = y - float(y0);
    vec<float, 4> acc(0.0f);
    for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
            const float w = (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
            acc += vec<float, 4>(read_texel<float>(b, wrap(x0 + dx, b->width), wrap(y0 + dy, b->height), 0, slice)) * w;
        }
    return vec<T, 4>(acc);
}

}  // namespace fgemu_detail

// The members every texture type has; Dims = coordinate components, Arrayed = a slice index
// follows the coordinate, Depth = reads return one component.
template <class T, int Dims, bool Arrayed, bool Depth, int FixedSlices = 0>
struct texture_base {
    const ::fgemu::TextureBinding* b = nullptr;
    using texel_t = std::conditional_t<Depth, T, vec<T, 4>>;
    texture_base() = default;
    explicit texture_base(const ::fgemu::TextureBinding* t) : b(t) {}

    uint get_width(uint = 0) const { return b ? b->width : 0; }
    uint get_height(uint = 0) const { return b ? b->height : 0; }
    uint get_depth(uint = 0) const { return b ? b->depth : 0; }
    uint get_array_size() const { return b ? b->slices : 0; }
    uint get_num_mip_levels() const { return 1; }
    uint get_num_samples() const { return 1; }
    void fence() const {}

    template <class C, class... R>
    texel_t read(const C& c, R... rest) const {
        const long s = slice_of(rest...);
        auto v = fgemu_detail::read_texel<T>(b, fgemu_detail::comp(c, 0), Dims > 1 ? fgemu_detail::comp(c, 1) : 0,
                                             Dims > 2 ? fgemu_detail::comp(c, 2) : 0, s);
        if constexpr (Depth) return v[0];
        else return v;
    }
    template <class V, class C, class... R>
    void write(const V& v, const C& c, R... rest) const {
        const long s = slice_of(rest...);
        if constexpr (detail::is_vec<V>::value)
            fgemu_detail::write_texel<T>(b, v, fgemu_detail::comp(c, 0), Dims > 1 ? fgemu_detail::comp(c, 1) : 0,
                                         Dims > 2 ? fgemu_detail::comp(c, 2) : 0, s);
        else
            fgemu_detail::write_texel<T>(b, vec<T, 4>(T(v)), fgemu_detail::comp(c, 0), Dims > 1 ? fgemu_detail::comp(c, 1) : 0,
                                         Dims > 2 ? fgemu_detail::comp(c, 2) : 0, s);
    }
    template <class C, class... R>
    texel_t sample(const sampler& sm, const C& c, R... rest) const {
        if constexpr (Dims != 2) {
            fgemu::unsupported("sample() of a texture that is not 2D");
        } else {
            auto v = fgemu_detail::sample_2d<T>(b, sm, float(c[0]), float(c[1]), slice_of(rest...));
            if constexpr (Depth) return v[0];
            else return v;
        }
    }
    template <class... X>
    vec<T, 4> gather(X&&...) const { fgemu::unsupported("texture gather()"); }
    template <class... X>
    T sample_compare(X&&...) const { fgemu::unsupported("depth texture sample_compare()"); }
    template <class... X>
    vec<T, 4> gather_compare(X&&...) const { fgemu::unsupported("depth texture gather_compare()"); }
    template <class... X>
    texel_t sample_grad(X&&...) const { fgemu::unsupported("texture sample with gradients"); }

    // Texture atomics (32-bit integer textures).
#define FG_TEX_ATOMIC(name, expr)                                                               \
    template <class C, class U, class... R>                                                    \
    vec<T, 4> atomic_##name(const C& c, U operand, R... rest) const {                          \
        T* p = atomic_ptr(c, rest...);                                                         \
        if (!p) return vec<T, 4>(T(0));                                                        \
        std::atomic_ref<T> r(*p);                                                              \
        T old = r.load();                                                                      \
        while (!r.compare_exchange_weak(old, expr)) {}                                         \
        return vec<T, 4>(old);                                                                 \
    }
    FG_TEX_ATOMIC(fetch_add, T(old + T(operand)))
    FG_TEX_ATOMIC(fetch_sub, T(old - T(operand)))
    FG_TEX_ATOMIC(fetch_and, T(old & T(operand)))
    FG_TEX_ATOMIC(fetch_or, T(old | T(operand)))
    FG_TEX_ATOMIC(fetch_xor, T(old ^ T(operand)))
    FG_TEX_ATOMIC(fetch_min, (T(operand) < old ? T(operand) : old))
    FG_TEX_ATOMIC(fetch_max, (old < T(operand) ? T(operand) : old))
    FG_TEX_ATOMIC(exchange, T(operand))
#undef FG_TEX_ATOMIC
    template <class C, class... R>
    vec<T, 4> atomic_load(const C& c, R... rest) const {
        T* p = atomic_ptr(c, rest...);
        return vec<T, 4>(p ? std::atomic_ref<T>(*p).load() : T(0));
    }
    template <class C, class U, class... R>
    void atomic_store(const C& c, U v, R... rest) const {
        if (T* p = atomic_ptr(c, rest...)) std::atomic_ref<T>(*p).store(T(v));
    }
    template <class C, class E, class U, class... R>
    bool atomic_compare_exchange_weak(const C& c, E* expected, U desired, R... rest) const {
        T* p = atomic_ptr(c, rest...);
        if (!p) return false;
        T e = T((*expected)[0]);
        const bool ok = std::atomic_ref<T>(*p).compare_exchange_strong(e, T(desired));
        *expected = E(e);
        return ok;
    }

private:
    long slice_of() const { return FixedSlices ? 0 : 0; }
    template <class S, class... R>
    long slice_of(S s, R...) const {
        if constexpr (Arrayed && std::is_integral_v<S>) return long(s);
        else return 0;  // a lod or sample index: level 0, sample 0
    }
    template <class C, class... R>
    T* atomic_ptr(const C& c, R... rest) const {
        static_assert(std::is_integral_v<T> && sizeof(T) == 4, "texture atomics need a 32-bit integer texture");
        if (!b || (b->format != ::fgemu::TextureBinding::i32 && b->format != ::fgemu::TextureBinding::u32))
            fgemu::fail("texture atomic on a texture whose storage is not 32-bit integer");
        return reinterpret_cast<T*>(fgemu_detail::texel(b, fgemu_detail::comp(c, 0), Dims > 1 ? fgemu_detail::comp(c, 1) : 0,
                                                        Dims > 2 ? fgemu_detail::comp(c, 2) : 0, slice_of(rest...)));
    }
};

template <class T> struct is_texture : std::false_type {};

// binds: the kind of host texture (TextureBinding::Kind) the type takes.
#define FG_TEXTURE(name, dims, arrayed, depth, binds_kind)                                      \
    template <class T, access A = access::sample, auto... Rest>                                 \
    struct name : texture_base<T, dims, arrayed, depth> {                                       \
        using texture_base<T, dims, arrayed, depth>::texture_base;                              \
        static constexpr ::fgemu::TextureBinding::Kind binds = ::fgemu::TextureBinding::binds_kind; \
        static constexpr const char* metal_name = #name;                                        \
    };                                                                                          \
    template <class T, access A, auto... R>                                                     \
    struct is_texture<name<T, A, R...>> : std::true_type {};
FG_TEXTURE(texture1d, 1, false, false, k1d)
FG_TEXTURE(texture1d_array, 1, true, false, k1d_array)
FG_TEXTURE(texture2d, 2, false, false, k2d)
FG_TEXTURE(texture2d_array, 2, true, false, k2d_array)
FG_TEXTURE(texture2d_ms, 2, false, false, k2d)
FG_TEXTURE(texture2d_ms_array, 2, true, false, k2d_array)
FG_TEXTURE(texture3d, 3, false, false, k3d)
FG_TEXTURE(texturecube, 2, true, false, kcube)
FG_TEXTURE(texturecube_array, 2, true, false, kcube)  // one cube: six slices
FG_TEXTURE(texture_buffer, 1, false, false, kbuffer)
FG_TEXTURE(depth2d, 2, false, true, k2d)
FG_TEXTURE(depth2d_array, 2, true, true, k2d_array)
FG_TEXTURE(depthcube, 2, true, true, kcube)
FG_TEXTURE(depth2d_ms, 2, false, true, k2d)
#undef FG_TEXTURE

// Why texture binding t cannot be bound to an argument of texture type E, or "" if it can.
template <class E>
std::string texture_kind_mismatch(const ::fgemu::TextureBinding* t) {
    if (!t || t->kind == ::fgemu::TextureBinding::unknown || t->kind == E::binds) return "";
    return std::string("a ") + ::fgemu::texture_kind_name(t->kind) + " texture cannot be bound to a " +
           E::metal_name + " (make it Texture(data, kind=\"" + ::fgemu::texture_kind_name(E::binds) + "\"))";
}

}  // namespace metal

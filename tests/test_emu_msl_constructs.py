"""metal-emu: MSL constructs that Apple's compiler (Clang) accepts and plain g++ C++ does not,
each in a small kernel written for these tests and checked against numpy: the compiler's
half-precision limit macros, attributes between an address space and a type, integer to
bfloat conversions, explicit specialisations of member templates inside class templates,
and brace initialisation of vectors from fewer values than lanes."""
import numpy as np
import pytest

from fastgemm import emu


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


ONE = dict(threadgroups=1, threads_per_threadgroup=1)


def to_bf16(a):
    """float32 -> bfloat bits, rounded to nearest even."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


HALF_LIMITS = r"""
#include <metal_stdlib>
using namespace metal;
kernel void limits(device half* h [[buffer(0)]], device int* is_half [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    half m[4] = { [0 ... 3] = -__FLT16_MAX__/2 };   // a range designator, as in ggml
    h[0] = __FLT16_MAX__;
    h[1] = __FLT16_MIN__;
    h[2] = __FLT16_EPSILON__;
    h[3] = __FLT16_DENORM_MIN__;
    h[4] = m[i % 4];
    h[5] = -__FLT16_MAX__ / 2;
    h[6] = 2h;
    // the macros are half-typed expressions, as they are in Metal
    is_half[0] = is_same_v<decltype(__FLT16_MAX__), half>;
    is_half[1] = is_same_v<decltype(-__FLT16_MAX__ / 2), half>;
    is_half[2] = __FLT16_MANT_DIG__;
}
"""


def test_half_limit_macros_are_half_values():
    h = np.zeros(7, np.float16)
    flags = np.zeros(3, np.int32)
    emu.run(HALF_LIMITS, "limits", **ONE, buffers=[h, flags])
    f = np.finfo(np.float16)
    expect = [f.max, f.tiny, f.eps, f.smallest_subnormal, -f.max / 2, -f.max / 2, 2]
    assert np.array_equal(h, np.array(expect, np.float16))
    assert flags.tolist() == [1, 1, 11]


TG_ATTRIBUTES = r"""
#include <metal_stdlib>
using namespace metal;
kernel void reverse(device float* out [[buffer(0)]], device uint* misaligned [[buffer(1)]],
                    uint3 lid [[thread_position_in_threadgroup]],
                    uint3 gid [[threadgroup_position_in_grid]]) {
    threadgroup __attribute__((aligned(16))) float buf[16];
    threadgroup alignas(32) float other[16];
    buf[lid.x] = float(gid.x * 16 + lid.x);
    other[lid.x] = 2.0f * buf[lid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid.x * 16 + lid.x] = buf[15 - lid.x] + other[15 - lid.x];
    misaligned[gid.x] = uint(ulong(&buf[0]) % 16) + uint(ulong(&other[0]) % 32);
}
"""


def test_attributes_between_address_space_and_type():
    out = np.full(32, np.nan, np.float32)
    misaligned = np.full(2, 99, np.uint32)
    emu.run(TG_ATTRIBUTES, "reverse", threadgroups=2, threads_per_threadgroup=16,
            buffers=[out, misaligned], strict=True, order="reversed")
    # each group has its own arrays: group g sees only its own values, reversed
    own = np.arange(32, dtype=np.float32).reshape(2, 16)
    assert np.array_equal(out.reshape(2, 16), 3 * own[:, ::-1])
    assert misaligned.tolist() == [0, 0]


BFLOAT_CONVERSIONS = r"""
#include <metal_stdlib>
using namespace metal;
bfloat from_int(int x) { return x; }
float widen(bfloat b) { return b; }
kernel void conv(device bfloat* out [[buffer(0)]], device const uint* u [[buffer(1)]],
                 device float* f [[buffer(2)]]) {
    bfloat b;
    b = 0;               out[0] = b;
    b = u[0];            out[1] = b;   // uint, beyond float's 24 bits: rounded once
    b = 'A';             out[2] = b;
    b = true;            out[3] = b;
    b = 7l;              out[4] = b;
    b += 2;              out[5] = b;
    b = short(-3);       out[6] = b;
    b = 1.5f;            out[7] = b;
    b = half(0.25h);     out[8] = b;
    out[9] = from_int(-300);
    out[10] = u[1];      // a buffer element assigned from an integer
    bfloat c = 5;        out[11] = c;
    out[12] = u[0] > 0 ? c : 0;
    f[0] = widen(out[1]);
    f[1] = c * 2 + 1.0f; // bfloat op int is bfloat; with a float, float
}
"""


def test_integers_and_floats_convert_to_bfloat_as_in_metal():
    out = np.zeros(13, np.uint16)
    big = 2 ** 24 + 2 ** 16 + 1   # through float it would become 2^24
    u = np.array([big, 1000], np.uint32)
    f = np.zeros(2, np.float32)
    emu.run(BFLOAT_CONVERSIONS, "conv", **ONE, buffers=[out, u, f])
    expect = [0, 2 ** 24 + 2 ** 17, 65, 1, 7, 9, -3, 1.5, 0.25, -300, 1000, 5, 5]
    assert from_bf16(out).tolist() == [float(x) for x in expect]
    assert from_bf16(to_bf16(1000)) == 1000  # 1000 is exact in bfloat
    assert f.tolist() == [2 ** 24 + 2 ** 17, 11.0]


MEMBER_SPECIALISATION = r"""
#include <metal_stdlib>
using namespace metal;
struct cplx { float re, im; };
template <typename U>
struct Reduce {
    template <typename T>
    metal::enable_if_t<metal::is_integral_v<T>, T> operator()(T a, T b) thread { return a < b ? a : b; }
    template <typename T>
    metal::enable_if_t<!metal::is_integral_v<T>, T> operator()(T a, T b) thread { return a > b ? a : b; }
    template <>
    cplx operator()(cplx a, cplx b) thread { return cplx{a.re + b.re, a.im * b.im}; }

    template <typename T>
    T scale(T x) const { return x * T(2); }
    template <>
    float scale(float x) const { return x * U(10); }
};
struct Plain {
    template <typename T> T twice(T x) { return x + x; }
    template <> int twice(int x) { return -x; }
};
kernel void spec(device float* out [[buffer(0)]]) {
    Reduce<float> r;
    out[0] = float(r(3, 5));          // integral: min
    out[1] = r(3.0f, 5.0f);           // floating: max
    cplx c = r(cplx{1, 2}, cplx{3, 4});
    out[2] = c.re;
    out[3] = c.im;
    out[4] = r.scale(1.5f);           // the specialisation
    out[5] = float(r.scale(7));       // the primary template
    Plain p;
    out[6] = float(p.twice(4));
    out[7] = p.twice(4.0f);
}
"""


def test_member_template_specialisations_inside_class_templates():
    out = np.full(8, np.nan, np.float32)
    emu.run(MEMBER_SPECIALISATION, "spec", **ONE, buffers=[out])
    assert out.tolist() == [3, 5, 4, 8, 15, 14, -4, 8]


VECTOR_BRACES = r"""
#include <metal_stdlib>
using namespace metal;
float4 two_lanes(float a, float b) { return {a, b}; }
kernel void braces(device uint4* u [[buffer(0)]], device float4* f [[buffer(1)]]) {
    uint a = 5, b = 6, c = 7;
    uint4 ks = {a, b, c};
    u[0] = ks;
    uint4 one = {9u};
    u[1] = one;
    float4 v = {1.0f};
    f[0] = v;
    float2 xy = float2(2.0f, 3.0f);
    float4 m = {xy, 4, 5};            // mixed: a sub-vector and ints, every lane given
    f[1] = m;
    f[2] = two_lanes(8.0f, 9.0f);
    f[3] = float4(2.0f);              // a constructor call still broadcasts
    float4 full = {1, 2, 3, 4};
    f[4] = full;
    float3 t = {a, b};
    f[5] = float4(t, 1.0f);
}
"""


def test_brace_initialised_vectors_zero_the_remaining_lanes():
    u = np.full((2, 4), 99, np.uint32)
    f = np.full((6, 4), np.nan, np.float32)
    emu.run(VECTOR_BRACES, "braces", **ONE, buffers=[u, f])
    assert u.tolist() == [[5, 6, 7, 0], [9, 0, 0, 0]]
    assert f.tolist() == [[1, 0, 0, 0], [2, 3, 4, 5], [8, 9, 0, 0], [2, 2, 2, 2], [1, 2, 3, 4],
                          [5, 6, 0, 1]]


def test_matrix_divided_by_a_scalar():
    src = r"""
#include <metal_stdlib>
using namespace metal;
kernel void divide(device float4x4* m [[buffer(0)]], constant float& s [[buffer(1)]]) {
    float4x4 a = m[0];
    m[1] = a / s;
    a /= 2;
    m[2] = a;
}
"""
    m = np.zeros((3, 4, 4), np.float32)
    m[0] = np.arange(16, dtype=np.float32).reshape(4, 4)
    emu.run(src, "divide", **ONE, buffers=[m, np.float32(4.0)])
    assert np.array_equal(m[1], m[0] / 4) and np.array_equal(m[2], m[0] / 2)

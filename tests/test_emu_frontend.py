"""metal-emu's front end: MSL as libraries and compilers write it, run unmodified.

Each source here is written for these tests in the style of a family of real shaders:
macro-instantiated templates (as ML libraries instantiate kernels), SPIRV-Cross-like and
naga-like generated code, and the header surface of Apple's Metal (simd/simd.h, logging,
limits, matrices, bfloat). Results are checked against numpy."""
import numpy as np
import pytest

import fastgemm
from fastgemm import emu


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


ONE = dict(threadgroups=1, threads_per_threadgroup=32)

MACRO_TEMPLATES = r"""
#include <metal_stdlib>
using namespace metal;

#define STR(x) #x
#define CONCAT(a, b) a##b

template <typename T, typename U, int Unroll = 1, bool Saturate = false,
          typename Acc = float, typename Index = uint>
[[kernel, max_total_threads_per_threadgroup(256)]] void scale_cast(
    device const T* in [[buffer(0)]],
    device U* out [[buffer(1)]],
    constant float& factor [[buffer(2)]],
    Index i [[thread_position_in_grid]]) {
  Acc v = Acc(in[i]) * Acc(factor);
  if (Saturate) v = clamp(v, Acc(-1), Acc(1));
  out[i] = U(v);
}

#define instantiate_scale(tname, T, U, sat)                                         \
  template [[host_name("scale_" tname "_" #U STR(_sat) )]] [[kernel]]                \
  decltype(scale_cast<T, U, 1, sat>) scale_cast<T, U, 1, sat>;

instantiate_scale("f32", float, float, false)
instantiate_scale("f16", half, float, true)

#define UNARY(NAME, EXPR)                                                            \
  kernel void CONCAT(unary_, NAME)(device const float* x [[buffer(0)]],              \
                                   device float* y [[buffer(1)]],                    \
                                   uint i [[thread_position_in_grid]]) {             \
    float v = x[i];                                                                  \
    y[i] = EXPR;                                                                     \
  }
UNARY(neg, -v)
UNARY(sq, v * v)
"""


def test_macro_instantiated_template_kernels():
    mod = emu.compile(MACRO_TEMPLATES)
    assert set(mod.kernels) == {"scale_f32_float_sat", "scale_f16_float_sat", "unary_neg",
                                "unary_sq"}
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, 64).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    mod.run("scale_f32_float_sat", threadgroups=2, threads_per_threadgroup=32,
            buffers=[x, y, np.float32(0.5)])
    assert np.array_equal(y, x * np.float32(0.5))
    h = x.astype(np.float16)
    mod.run("scale_f16_float_sat", threadgroups=2, threads_per_threadgroup=32,
            buffers=[h, y, np.float32(1.0)])
    assert np.array_equal(y, np.clip(h.astype(np.float32), -1, 1))
    mod.run("unary_sq", threadgroups=2, threads_per_threadgroup=32, buffers=[x, y])
    assert np.array_equal(y, x * x)


# SPIRV-Cross style: spvUnsafeArray with address-space-qualified member overloads,
# <simd/simd.h>, gl_WorkGroupSize from a specialization constant, a struct of arrays,
# float literals carrying double precision digits, matrices and precise:: functions.
SPIRV_CROSS_LIKE = r"""
#pragma clang diagnostic ignored "-Wmissing-prototypes"
#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

template<typename T, size_t Num>
struct spvUnsafeArray
{
    T elements[Num ? Num : 1];

    thread T& operator [] (size_t pos) thread
    {
        return elements[pos];
    }
    constexpr const thread T& operator [] (size_t pos) const thread
    {
        return elements[pos];
    }
    device T& operator [] (size_t pos) device
    {
        return elements[pos];
    }
    constexpr const device T& operator [] (size_t pos) const device
    {
        return elements[pos];
    }
    constexpr const constant T& operator [] (size_t pos) const constant
    {
        return elements[pos];
    }
    threadgroup T& operator [] (size_t pos) threadgroup
    {
        return elements[pos];
    }
};

struct SSBO
{
    float4 data[1];
};

struct Params
{
    float3x3 rot;
    float scale;
};

constant uint _21_tmp [[function_constant(0)]];
constant uint _21 = is_function_constant_defined(_21_tmp) ? _21_tmp : 64u;
constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(_21, 1u, 1u);

static inline __attribute__((always_inline))
float4 spvRotate(thread const float3x3& m, thread const float4& v)
{
    return float4(m * v.xyz, v.w);
}

kernel void main0(device SSBO& _13 [[buffer(0)]], const device SSBO& _15 [[buffer(1)]],
                  constant Params& _33 [[buffer(2)]],
                  uint3 gl_GlobalInvocationID [[thread_position_in_grid]],
                  uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float4 tile[64];
    spvUnsafeArray<float, 4> w;
    w[0] = 0.25;
    w[1] = 0.5;
    w[2] = 1.0000000149011611938476562;
    w[3] = precise::sqrt(4.0);
    uint i = gl_GlobalInvocationID.x;
    tile[gl_LocalInvocationID.x] = _15.data[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float4 v = tile[(gl_WorkGroupSize.x - 1u) - gl_LocalInvocationID.x];
    float4 r = spvRotate(_33.rot, v) * _33.scale;
    r.xy += float2(w[0], w[1]);
    r.zw = r.wz * float2(w[2], w[3]);
    _13.data[i] = r;
}
"""


def test_spirv_cross_like_generated_code():
    rng = np.random.default_rng(4)
    groups, wg = 3, 16
    n = groups * wg
    src = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    dst = np.full((n, 4), np.nan, np.float32)
    rot = rng.uniform(-1, 1, (3, 3)).astype(np.float32)  # rot[c] is column c
    params = np.zeros(4 * 4 * 3 + 4, np.float32)       # float3x3: 3 columns of 16 bytes
    for c in range(3):
        params[4 * c:4 * c + 3] = rot[c]
    params[12] = 1.5
    emu.run(SPIRV_CROSS_LIKE, "main0", threadgroups=groups, threads_per_threadgroup=wg,
            buffers=[dst, src, params], constants={0: wg}, strict=True)
    expect = np.empty_like(src)
    for g in range(groups):
        block = src[g * wg:(g + 1) * wg][::-1]
        xyz = block[:, :3].astype(np.float64) @ rot.astype(np.float64)  # sum_c rot[c] * v[c]
        r = np.concatenate([xyz, block[:, 3:]], axis=1) * 1.5
        r[:, 0] += 0.25
        r[:, 1] += 0.5
        r[:, 2], r[:, 3] = r[:, 3] * 1.0, r[:, 2] * 2.0
        expect[g * wg:(g + 1) * wg] = r
    assert np.allclose(dst, expect, atol=1e-5)


# naga style: metal:: qualified types, threadgroup reference arguments without an attribute
# (workgroup variables), zero-initialised on the first thread, and `using metal::uint`.
NAGA_LIKE = r"""
// language: metal1.0
#include <metal_stdlib>
#include <simd/simd.h>

using metal::uint;

struct type_1 {
    uint inner[64];
};
struct Totals {
    metal::atomic_uint count;
    type_1 arr;
};

kernel void main_(
  metal::uint3 __local_invocation_id [[thread_position_in_threadgroup]]
, threadgroup Totals& w_mem
, device type_1& output [[buffer(0)]]
, device const uint* input [[buffer(1)]]
) {
    if (metal::all(__local_invocation_id == metal::uint3(0u))) {
        w_mem.arr = {};
        metal::atomic_store_explicit(&w_mem.count, 0, metal::memory_order_relaxed);
    }
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
    uint i = __local_invocation_id.x;
    w_mem.arr.inner[i] = input[i] * 2u;
    metal::atomic_fetch_add_explicit(&w_mem.count, input[i], metal::memory_order_relaxed);
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
    output.inner[i] = w_mem.arr.inner[63u - i]
        + metal::atomic_load_explicit(&w_mem.count, metal::memory_order_relaxed);
    return;
}
"""


def test_naga_like_generated_code():
    inp = np.arange(64, dtype=np.uint32)
    out = np.zeros(64, np.uint32)
    emu.run(NAGA_LIKE, "main_", threadgroups=1, threads_per_threadgroup=64, buffers=[out, inp],
            strict=True)
    assert np.array_equal(out, inp[::-1] * 2 + inp.sum())


HEADER_SURFACE = r"""
#include <metal_stdlib>
#include <metal_logging>
#include <metal_limits>
#include <metal_atomic>
using namespace metal;

METAL_FUNC float twice(float x) { return 2.0f * x; }
METAL_FUNC float pick(device const float* p) { return p[0]; }
METAL_FUNC float pick(threadgroup const float* p) { return p[0]; }
METAL_FUNC float pick(constant float* p) { return p[0]; }

kernel void surface(device const float* restrict x [[buffer(0)]],
                    device float* restrict y [[buffer(1)]],
                    device bfloat* b [[buffer(2)]],
                    device half* h [[buffer(3)]],
                    constant float* c [[buffer(4)]],
                    uint i [[thread_position_in_grid]]) {
    assert(i > 1000000u && "Metal compiles assert out by default");
    threadgroup float t[32];
    t[i % 32] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float2x2 m = float2x2(float2(1.0f, 2.0f), float2(3.0f, 4.0f));
    float2 mv = m * float2(1.0f, 1.0f);                       // (4, 6)
    float v = twice(pick(x + i)) + pick(&t[i % 32]) + pick(c); // 3 x[i] + c[0]
    v += fast::exp(0.0f) + precise::cos(0.0f) - M_PI_F / M_PI_F; // + 1
    v += float(numeric_limits<half>::max() == half(65504.0f)) + float(mv.x + mv.y == 10.0f);
    y[i] = v + float(numeric_limits<float>::epsilon() == FLT_EPSILON) + float(sizeof(bfloat));
    b[i] = bfloat(x[i]) * bfloat(3.0f);
    h[i] = half(x[i]) + 1.0h;
}
"""


def test_header_surface_bfloat_half_and_address_space_overloads():
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, 32).astype(np.float32)
    y = np.full(32, np.nan, np.float32)
    b = np.zeros(32, np.uint16)
    h = np.zeros(32, np.float16)
    c = np.array([0.5], np.float32)
    emu.run(HEADER_SURFACE, "surface", **ONE, buffers=[x, y, b, h, c], strict=True)
    assert np.allclose(y, 3 * x + 0.5 + 1 + 2 + 1 + 2, atol=1e-6)
    expect_h = (x.astype(np.float16) + np.float16(1)).astype(np.float16)
    assert np.array_equal(h, expect_h)
    # bfloat is a real 16-bit type: x rounded to bfloat, times 3, rounded again (to nearest even).
    def to_bf16(a):
        u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    def from_bf16(bits):
        return (bits.astype(np.uint32) << 16).view(np.float32)
    expect_b = to_bf16(from_bf16(to_bf16(x)) * np.float32(3))
    assert np.array_equal(b, expect_b)


def test_metal_assert_is_compiled_out_unless_enabled():
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device uint* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           "  assert(i < 3u);\n  y[i] = i;\n}\n")
    y = np.zeros(8, np.uint32)
    emu.run(src, "k", threadgroups=1, threads_per_threadgroup=8, buffers=[y])
    assert np.array_equal(y, np.arange(8))
    with pytest.raises(fastgemm.KernelError, match=r"assertion failed: i < 3u at <source>:4"):
        emu.run(src, "k", threadgroups=1, threads_per_threadgroup=8, buffers=[y],
                defines=["FGEMU_ENABLE_ASSERTS"])


def test_unsupported_constructs_are_named_with_a_line():
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device float* y [[buffer(0)]]) {\n"
           "  y[0] = some_intrinsic_nobody_has(1.0f);\n}\n")
    with pytest.raises(emu.EmuCompileError) as e:
        emu.compile(src)
    first = str(e.value).splitlines()[0]
    assert "<source>:4: unsupported: some_intrinsic_nobody_has" in first
    to_int = ("#include <metal_stdlib>\nusing namespace metal;\n"
              "kernel void k(device uint* y [[buffer(0)]], device bfloat* b [[buffer(1)]]) {\n"
              "  uint u; u = b[0]; y[0] = u;\n}\n")
    with pytest.raises(emu.EmuCompileError) as e:
        emu.compile(to_int)
    first = str(e.value).splitlines()[0]
    assert "<source>:4: unsupported: implicit conversion from bfloat to " in first and "(write " in first, first
    # argument buffers run (test_emu_argument_buffers.py), but not of a template struct
    argbuf = ("#include <metal_stdlib>\nusing namespace metal;\n"
              "template <typename T> struct Args { device T* data [[id(0)]]; };\n"
              "kernel void k(constant Args<float>& args [[buffer(0)]]) {\n"
              "  args.data[0] = 1.0f;\n}\n"
              "kernel void fine(device float* y [[buffer(0)]]) { y[0] = 2.0f; }\n")
    y = np.zeros(4, np.float32)
    with pytest.raises(fastgemm.KernelError,
                       match=r"unsupported.*argument buffer of a template struct.*<source>:4"):
        emu.run(argbuf, "k", **ONE, buffers=[y])
    emu.run(argbuf, "fine", **ONE, buffers=[y])  # the source's other kernels run
    assert y[0] == 2.0
    with pytest.raises(emu.EmuRefusedError, match="unsupported: #include <metal_raytracing>"):
        emu.compile("#include <metal_raytracing>\nkernel void k() {}\n")

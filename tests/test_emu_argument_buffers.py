"""metal-emu argument buffers: structs with [[id(n)]] members that the host encodes member
by member (fastgemm.emu.ArgumentBuffer), in the styles compilers and people write them:
SPIRV-Cross's descriptor-set structs, arrays of buffers, plain-data members, structs in
namespaces, and the refusals for what the emulator does not model."""
import re

import numpy as np
import pytest

from fastgemm import emu
from fastgemm.errors import KernelError


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


# A descriptor set as SPIRV-Cross writes it with argument buffers on: one struct per set,
# each resource a member with its binding as [[id(n)]], bound at [[buffer(set)]].
SPIRV_STYLE = r"""
#include <metal_stdlib>
#include <simd/simd.h>
using namespace metal;

struct SSBO { float data[1]; };
struct Params { uint n; float scale; };

struct spvDescriptorSetBuffer0 {
    const device SSBO* m_in [[id(0)]];
    device SSBO* m_out [[id(1)]];
    constant Params* params [[id(2)]];
};

kernel void main0(constant spvDescriptorSetBuffer0& spvDescriptorSet0 [[buffer(0)]],
                  uint3 gl_GlobalInvocationID [[thread_position_in_grid]]) {
    uint i = gl_GlobalInvocationID.x;
    if (i < (*spvDescriptorSet0.params).n)
        spvDescriptorSet0.m_out->data[i] = spvDescriptorSet0.m_in->data[i] *
                                           (*spvDescriptorSet0.params).scale;
}
"""

# Arrays of buffers (both spellings), plain-data members, a struct in a namespace, the
# struct bound by pointer at a later index, and two kernels sharing one layout.
MIXED = r"""
#include <metal_stdlib>
using namespace metal;

namespace layer {
struct Inputs {
    float4 bias [[id(0)]];
    device const float* rows[3] [[id(1)]];
    array<device float*, 2> outs [[id(4)]];
    uint count [[id(6)]];
};
}

kernel void combine(device const uint* scale [[buffer(0)]],
                    device const layer::Inputs* in [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    if (i >= in->count) return;
    float s = float(scale[0]);
    float v = in->rows[0][i] + in->rows[1][i] + in->rows[2][i];
    in->outs[0][i] = s * v + in->bias.x;
    in->outs[1][i] = in->bias.w - v;
}

kernel void copy_first(constant layer::Inputs& in [[buffer(2)]],
                       uint i [[thread_position_in_grid]]) {
    if (i < in.count) in.outs[0][i] = in.rows[0][i];
}

struct WithTexture {
    texture2d<float, access::read> t [[id(0)]];
    device float* out [[id(1)]];
    sampler s [[id(2)]];
};

kernel void read_texture(constant WithTexture& w [[buffer(0)]],
                         uint2 p [[thread_position_in_grid]]) {
    w.out[p.y * 4 + p.x] = 2.0f * w.t.read(p).x;
}

template <typename T>
struct Generic { device T* p [[id(0)]]; };

kernel void generic_use(constant Generic<float>& g [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    g.p[i] = 2.0f;
}
"""


def test_spirv_cross_descriptor_set_runs_and_writes_through_members():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 100).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    params = np.zeros(1, dtype=[("n", "<u4"), ("scale", "<f4")])
    params[0] = (100, -2.5)
    emu.run(SPIRV_STYLE, "main0", threadgroups=4, threads_per_threadgroup=32,
            buffers=[emu.ArgumentBuffer({0: x, 1: out, 2: params})], strict=True)
    np.testing.assert_array_equal(out[:100], x * np.float32(-2.5))
    assert np.isnan(out[100:]).all()  # past n: untouched


def test_arrays_of_buffers_plain_data_and_namespaced_struct():
    rng = np.random.default_rng(4)
    n = 77
    rows = [rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3)]
    outs = [np.full(n, np.nan, np.float32) for _ in range(2)]
    bias = np.array([0.5, 0, 0, 3.0], np.float32)
    members = {0: bias, 1: rows[0], 2: rows[1], 3: rows[2], 4: outs[0], 5: outs[1],
               6: np.uint32(n)}
    emu.run(MIXED, "combine", threadgroups=3, threads_per_threadgroup=32,
            buffers=[np.array([3], np.uint32), emu.ArgumentBuffer(members)], strict=True)
    v = (rows[0] + rows[1]) + rows[2]
    np.testing.assert_allclose(outs[0], 3 * v + 0.5, rtol=1e-6)
    np.testing.assert_allclose(outs[1], 3.0 - v, rtol=1e-6)

    # the same layout bound by reference at another index, by another kernel
    again = np.zeros(n, np.float32)
    emu.run(MIXED, "copy_first", threadgroups=3, threads_per_threadgroup=32,
            buffers={2: emu.ArgumentBuffer({1: rows[2], 4: again, 6: np.uint32(n)})})
    np.testing.assert_array_equal(again, rows[2])


@pytest.mark.parametrize("buffers, message", [
    ([np.zeros(4, np.uint32), np.zeros(64, np.uint8)], "buffer 1 is an argument buffer (struct layer::Inputs"),
    ([emu.ArgumentBuffer({}), emu.ArgumentBuffer({6: np.uint32(1)})], "buffer 0 is given an ArgumentBuffer"),
    ([np.zeros(4, np.uint32), emu.ArgumentBuffer({9: np.zeros(4, np.float32)})], "no member with [[id(9)]]"),
    ([np.zeros(4, np.uint32), emu.ArgumentBuffer({6: np.uint64(1)})], "member count: holds 4 bytes"),
    ([np.zeros(4, np.uint32), emu.ArgumentBuffer({0: np.zeros(3, np.float32)})], "member bias: holds 16 bytes"),
])
def test_misencoded_argument_buffers_are_named(buffers, message):
    with pytest.raises(ValueError) as e:
        emu.run(MIXED, "combine", threadgroups=1, threads_per_threadgroup=32, buffers=buffers)
    assert message in str(e.value) and "combine" in str(e.value)


def test_texture_members_read_the_texture_given_for_them():
    img = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros(12, np.float32)
    emu.run(MIXED, "read_texture", threadgroups=(1, 1), threads_per_threadgroup=(4, 3),
            buffers=[emu.ArgumentBuffer({0: emu.Texture(img), 1: out})])
    np.testing.assert_array_equal(out, 2 * img.ravel())


@pytest.mark.parametrize("members, message", [
    ({0: np.zeros(12, np.float32)}, "member t: a texture member: give a fastgemm.emu.Texture"),
    ({1: emu.Texture(np.zeros((3, 4), np.float32))}, "member out: not a texture member"),
    ({0: emu.Texture(np.zeros(12, np.float32), "1d")}, "member t: a 1d texture cannot be bound to a texture2d"),
    ({2: np.zeros(4, np.uint8)}, "member s: unsupported: the host's sampler state"),
])
def test_texture_and_sampler_members_take_only_what_they_can_hold(members, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        emu.run(MIXED, "read_texture", threadgroups=1, threads_per_threadgroup=1,
                buffers=[emu.ArgumentBuffer(members)])


def test_template_structs_are_refused_by_name():
    with pytest.raises(emu.KernelError, match=r"unsupported by metal-emu: argument buffer of a template struct"):
        emu.run(MIXED, "generic_use", threadgroups=1, threads_per_threadgroup=1,
                buffers=[np.zeros(64, np.uint8)])


def test_a_member_left_out_is_a_null_pointer_that_faults_in_a_surviving_worker():
    with pytest.raises(emu.KernelError, match=r"copy_first"):
        emu.run(MIXED, "copy_first", threadgroups=1, threads_per_threadgroup=4,
                buffers={2: emu.ArgumentBuffer({6: np.uint32(4)})})
    out = np.zeros(4, np.float32)  # the next dispatch runs in a new worker
    emu.run(MIXED, "copy_first", threadgroups=1, threads_per_threadgroup=4,
            buffers={2: emu.ArgumentBuffer({1: np.ones(4, np.float32), 4: out, 6: np.uint32(4)})})
    assert (out == 1).all()


@pytest.mark.parametrize("members, error", [
    ([1, 2], TypeError), ({-1: b"x"}, ValueError), ({"a": b"x"}, ValueError),
    ({0: emu.ArgumentBuffer({})}, TypeError), ({0: "text"}, TypeError),
])
def test_argument_buffer_arguments_are_checked(members, error):
    with pytest.raises(error, match="ArgumentBuffer"):
        emu.ArgumentBuffer(members)


OUT_OF_BOUNDS = r"""
#include <metal_stdlib>
using namespace metal;
struct AB { device float* p [[id(0)]]; device const float* q [[id(1)]]; };
kernel void past_end(device AB& ab [[buffer(0)]], uint i [[thread_position_in_grid]]) { ab.p[i] = 5; }
kernel void before_start(device AB& ab [[buffer(0)]], uint i [[thread_position_in_grid]]) { ab.p[int(i) - 8] = 5; }
kernel void in_bounds(device AB& ab [[buffer(0)]], uint i [[thread_position_in_grid]]) { ab.p[i] = ab.q[i]; }
"""


@pytest.mark.parametrize("kernel, where", [("past_end", "past its end"), ("before_start", "before its start")])
def test_a_write_outside_a_member_is_reported_and_spares_its_neighbours(kernel, where):
    """Members are reached through pointers the shader holds, past the runtime's own
    canaries: the arena keeps canaries around each, so 64 writes into an 8-float member
    fail the dispatch instead of silently landing in the next member."""
    p, q = np.zeros(8, np.float32), np.full(16, -1, np.float32)
    with pytest.raises(KernelError, match=rf"out-of-bounds write: .* buffer 0 \(argument buffer\) id 0 \({where}\)"):
        emu.run(OUT_OF_BOUNDS, kernel, threadgroups=1, threads_per_threadgroup=16,
                buffers=[emu.ArgumentBuffer({0: p, 1: q})])
    assert np.all(q == -1)
    p = np.zeros(8, np.float32)
    emu.run(OUT_OF_BOUNDS, "in_bounds", threadgroups=1, threads_per_threadgroup=8,
            buffers=[emu.ArgumentBuffer({0: p, 1: q})])
    assert np.all(p == -1)

"""metal-emu semantics that threads of a group can observe: atomics under the fiber
scheduler, SIMD-group lockstep at simdgroup operations, shared ownership of simdgroup
matrix elements, and how matrices are initialised."""
import numpy as np
import pytest

from fastgemm import emu


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


ATOMICS = r"""
#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;

struct Counters { atomic_uint hits; atomic_int low; atomic_int high; atomic_float sum; };

kernel void histogram(device const uint* keys [[buffer(0)]],
                      device atomic_uint* bins [[buffer(1)]],
                      device Counters& c [[buffer(2)]],
                      device const float* w [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(&bins[keys[i]], 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(&c.hits, 1u, memory_order_relaxed);
    atomic_fetch_min_explicit(&c.low, int(keys[i]) - 7, memory_order_relaxed);
    atomic_fetch_max_explicit(&c.high, int(keys[i]) * 3, memory_order_relaxed);
    atomic_fetch_add_explicit(&c.sum, w[i], memory_order_relaxed);
}

// One thread publishes a value, the others spin until they see it: a group's threads are
// fibers, so the load must let the publisher run.
kernel void spin_wait(device uint* out [[buffer(0)]],
                      uint t [[thread_index_in_threadgroup]],
                      uint g [[threadgroup_position_in_grid]]) {
    threadgroup atomic_uint flag;
    threadgroup uint value;
    if (t == 0) atomic_store_explicit(&flag, 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 31) {
        value = 1000u + g;
        atomic_store_explicit(&flag, 1u, memory_order_relaxed);
    }
    while (atomic_load_explicit(&flag, memory_order_relaxed) == 0u) {}
    out[g * 64 + t] = value;
}

// compare-exchange retry loop: a lock-free maximum of squares.
kernel void cas_max(device atomic_uint* best [[buffer(0)]], device const uint* x [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    uint v = x[i] * x[i];
    uint seen = atomic_load_explicit(best, memory_order_relaxed);
    while (seen < v && !atomic_compare_exchange_weak_explicit(best, &seen, v,
                                memory_order_relaxed, memory_order_relaxed)) {}
}
"""


def test_device_and_threadgroup_atomics_across_groups_and_os_threads():
    rng = np.random.default_rng(6)
    n = 4096
    keys = rng.integers(0, 16, n).astype(np.uint32)
    w = rng.uniform(0, 1, n).astype(np.float32)
    for os_threads in (1, 4):
        bins = np.zeros(16, np.uint32)
        c = np.zeros(4, np.int32)
        c[1], c[2] = 1 << 30, -(1 << 30)
        emu.run(ATOMICS, "histogram", threadgroups=n // 128, threads_per_threadgroup=128,
                buffers=[keys, bins, c, w], os_threads=os_threads)
        assert np.array_equal(bins, np.bincount(keys, minlength=16))
        assert c[0] == n and c[1] == int(keys.min()) - 7 and c[2] == int(keys.max()) * 3
        assert c[3:].view(np.float32)[0] == pytest.approx(w.astype(np.float64).sum(), rel=1e-4)

    out = np.zeros(3 * 64, np.uint32)
    emu.run(ATOMICS, "spin_wait", threadgroups=3, threads_per_threadgroup=64, buffers=[out],
            time_limit=20)
    assert np.array_equal(out, np.repeat(1000 + np.arange(3), 64).astype(np.uint32))

    x = rng.integers(0, 60000, 1000).astype(np.uint32)
    best = np.zeros(1, np.uint32)
    emu.run(ATOMICS, "cas_max", threadgroups=8, threads_per_threadgroup=125, buffers=[best, x],
            os_threads=4)
    assert best[0] == (x.astype(np.uint64) ** 2).max()  # < 2**32 for x < 60000


LOCKSTEP = r"""
#include <metal_stdlib>
using namespace metal;

// Every lane loads the 8x8 tile with simdgroup_load, then overwrites "its" part of the tile
// per lane. On hardware the load happens for all lanes at once, so the stored matrix is the
// original tile; a lane that ran ahead would let later lanes load its overwritten values.
kernel void load_then_overwrite(device const float* in [[buffer(0)]],
                                device float* out [[buffer(1)]],
                                uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float tile[64];
    tile[lane] = in[lane];
    tile[lane + 32] = in[lane + 32];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 m;
    simdgroup_load(m, tile, 8);
    tile[lane] = -1.0f;
    tile[lane + 32] = -1.0f;
    simdgroup_store(m, out, 8);
}

// Per-lane stores into threadgroup memory, then a shuffle, then a read of another lane's
// store: the shuffle is a rendezvous, so every earlier store is visible.
kernel void store_shuffle_read(device float* out [[buffer(0)]],
                               uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float scratch[32];
    scratch[lane] = float(lane) * 2.0f;
    float other = simd_shuffle(float(lane), ushort((lane + 1) % 32));
    out[lane] = scratch[(lane + 31) % 32] + other;
}

// thread_elements(): each lane scales its own two elements; the SIMD-group's matrix then
// holds every lane's write (an element lives in the lane that owns it).
kernel void scale_own_elements(device const float* in [[buffer(0)]],
                               device float* out [[buffer(1)]],
                               uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 m;
    simdgroup_load(m, in, 8);
    m.thread_elements() *= float(lane + 1);
    simdgroup_float8x8 id = simdgroup_float8x8(1.0f);
    simdgroup_float8x8 r;
    simdgroup_multiply(r, m, id);
    simdgroup_store(r, out, 8);
}

struct Acc { simdgroup_float8x8 m[2]; };

// Value-initialised matrices are zero (also the rest of an aggregate); a default-constructed
// one is poisoned, so reading it before a load or fill shows.
kernel void init_kinds(device float* zero_out [[buffer(0)]], device float* poisoned_out [[buffer(1)]]) {
    simdgroup_float8x8 acc[3] = {simdgroup_float8x8(0)};
    Acc a = {};
    simdgroup_float8x8 sum;
    simdgroup_multiply_accumulate(sum, acc[2], a.m[1], acc[1]);
    simdgroup_store(sum, zero_out, 8);
    simdgroup_float8x8 unset;
    simdgroup_store(unset, poisoned_out, 8);
}
"""


def _owner(lane):
    row = ((lane >> 4) & 1) * 4 + ((lane >> 1) & 3)
    col = ((lane >> 3) & 1) * 4 + (lane & 1) * 2
    return row, col


def test_simdgroup_operations_are_lockstep_rendezvous():
    x = np.arange(64, dtype=np.float32) + 1
    out = np.full(64, np.nan, np.float32)
    emu.run(LOCKSTEP, "load_then_overwrite", threadgroups=1, threads_per_threadgroup=32,
            buffers=[x, out], strict=True, order="reversed")
    assert np.array_equal(out, x)
    out = np.full(32, np.nan, np.float32)
    emu.run(LOCKSTEP, "store_shuffle_read", threadgroups=1, threads_per_threadgroup=32,
            buffers=[out], strict=True)
    lanes = np.arange(32)
    assert np.array_equal(out, ((lanes + 31) % 32) * 2.0 + (lanes + 1) % 32)


def test_thread_elements_are_shared_by_the_owning_lanes():
    x = np.random.default_rng(7).uniform(-1, 1, 64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    emu.run(LOCKSTEP, "scale_own_elements", threadgroups=1, threads_per_threadgroup=32,
            buffers=[x, out], strict=True)
    expect = x.reshape(8, 8).copy()
    for lane in range(32):
        r, c = _owner(lane)
        expect[r, c:c + 2] *= lane + 1
    assert np.allclose(out.reshape(8, 8), expect, rtol=1e-6)


def test_value_initialised_matrices_are_zero_default_ones_poisoned():
    zero = np.full(64, np.nan, np.float32)
    poisoned = np.zeros(64, np.float32)
    emu.run(LOCKSTEP, "init_kinds", threadgroups=1, threads_per_threadgroup=32,
            buffers=[zero, poisoned], strict=True)
    assert np.array_equal(zero, np.zeros(64, np.float32))
    # The compiler's pattern: every byte 0xFE (-1.7e38 as a float), never a plausible value.
    assert np.all(poisoned.view(np.uint32) == 0xFEFEFEFE)


MPP_INT8 = r"""
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

// C (int32, M x N) = A (int8, M x K) * B (int8, K x N): one 32 x 32 tile per threadgroup
// of four SIMD-groups, K read from the tensors, edges bounds-checked by the dynamic extents.
template <typename TA, typename TB, typename TC>
kernel void matmul_i8(device TA* a [[buffer(0)]], device TB* b [[buffer(1)]],
                      device TC* c [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                      uint2 tg [[threadgroup_position_in_grid]]) {
    auto A = tensor<device TA, dextents<int, 2>, tensor_inline>(a, dextents<int, 2>(mnk.z, mnk.x));
    auto B = tensor<device TB, dextents<int, 2>, tensor_inline>(b, dextents<int, 2>(mnk.y, mnk.z));
    auto C = tensor<device TC, dextents<int, 2>, tensor_inline>(c, dextents<int, 2>(mnk.y, mnk.x));
    constexpr auto desc = matmul2d_descriptor(32, 32, dynamic_length_v<int>);
    matmul2d<desc, execution_simdgroups<4>> op;
    auto tA = A.slice(0, tg.y * 32);
    auto tB = B.slice(tg.x * 32, 0);
    auto tC = C.slice(tg.x * 32, tg.y * 32);
    op.run(tA, tB, tC);
}
template [[host_name("i8i8_i32")]] [[kernel]] decltype(matmul_i8<int8_t, int8_t, int>) matmul_i8<int8_t, int8_t, int>;
template [[host_name("u8i8_i32")]] [[kernel]] decltype(matmul_i8<uint8_t, int8_t, int>) matmul_i8<uint8_t, int8_t, int>;
template [[host_name("i8i8_f32")]] [[kernel]] decltype(matmul_i8<int8_t, int8_t, float>) matmul_i8<int8_t, int8_t, float>;
"""


def test_mpp_matmul2d_int8_accumulates_exactly_in_int32():
    rng = np.random.default_rng(8)
    M, N, K = 45, 70, 300  # edges in M and N; |sum| up to 300 * 128 * 127, beyond float's 2**24
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    ref = a.astype(np.int64) @ b.astype(np.int64)
    groups = ((N + 31) // 32, (M + 31) // 32)
    mnk = np.array([M, N, K, 0], np.uint32)
    c = np.full((M, N), -7, np.int32)
    emu.run(MPP_INT8, "i8i8_i32", threadgroups=groups, threads_per_threadgroup=128,
            buffers=[a, b, c, mnk], strict=True)
    assert np.array_equal(c, ref)
    ua = rng.integers(0, 256, (M, K)).astype(np.uint8)
    emu.run(MPP_INT8, "u8i8_i32", threadgroups=groups, threads_per_threadgroup=128,
            buffers=[ua, b, c, mnk], strict=True)
    assert np.array_equal(c, ua.astype(np.int64) @ b.astype(np.int64))
    cf = np.full((M, N), np.nan, np.float32)
    emu.run(MPP_INT8, "i8i8_f32", threadgroups=groups, threads_per_threadgroup=128,
            buffers=[a, b, cf, mnk], strict=True)
    assert np.array_equal(cf, ref.astype(np.float32))  # exact int32 sum, then one rounding


def test_mpp_matmul2d_refuses_unsupported_operand_types():
    src = MPP_INT8.replace("int8_t, int8_t, int>) matmul_i8<int8_t, int8_t, int>;",
                           "int8_t, half, int>) matmul_i8<int8_t, half, int>;", 1)
    with pytest.raises(emu.EmuCompileError, match="operand types not among"):
        emu.compile(src)


TEXTURES = r"""
#include <metal_stdlib>
using namespace metal;

kernel void scale_and_count(texture2d<float, access::read> src [[texture(0)]],
                            texture2d<float, access::write> dst [[texture(1)]],
                            texture2d<uint, access::read_write> count [[texture(2)]],
                            texture3d<half> volume [[texture(3)]],
                            sampler s [[sampler(0)]],
                            uint2 gid [[thread_position_in_grid]]) {
    if (gid.x >= src.get_width() || gid.y >= src.get_height()) return;
    const float v = float(volume.read(uint3(1, 0, 1)).x);
    dst.write(src.read(gid) * 2.0f + float4(v), gid);
    count.atomic_fetch_add(uint2(gid.x % 2, 0), 1u);
}

constexpr sampler nearest(coord::pixel, filter::nearest, address::clamp_to_edge);

kernel void sample_edges(texture2d<float> t [[texture(0)]], device float4* out [[buffer(0)]],
                         uint i [[thread_position_in_grid]]) {
    out[i] = t.sample(nearest, float2(float(i) - 1.5f, 0.5f));
}
"""


def test_textures_read_write_atomics_and_sampling():
    rng = np.random.default_rng(9)
    img = rng.uniform(0, 1, (5, 7, 4)).astype(np.float32)   # H x W x RGBA
    out = np.full_like(img, np.nan)
    count = np.zeros((1, 2), np.uint32)
    volume = np.zeros((2, 3, 4, 1), np.float16)              # D x H x W x R
    volume[1, 0, 1, 0] = 0.25
    emu.run(TEXTURES, "scale_and_count", threadgroups=(1, 1), threads_per_threadgroup=(8, 8),
            buffers=[], textures=[img, out, count, emu.Texture(volume, "3d")], strict=True)
    assert np.allclose(out, img * 2 + 0.25)
    assert count.tolist() == [[5 * 4, 5 * 3]]  # columns 0, 2, 4, 6 and 1, 3, 5
    # unorm8 storage read as float, written back rounded and clamped
    u8 = (img * 255).round().astype(np.uint8)
    out8 = np.zeros_like(u8)
    emu.run(TEXTURES, "scale_and_count", threadgroups=(1, 1), threads_per_threadgroup=(8, 8),
            buffers=[], textures=[u8, out8, count, emu.Texture(volume, "3d")])
    expect = np.clip(np.rint((u8 / 255.0 * 2 + 0.25) * 255), 0, 255).astype(np.uint8)
    assert np.array_equal(out8, expect)
    # nearest sampling in pixel coordinates clamps to the edge
    row = rng.uniform(0, 1, (1, 3, 4)).astype(np.float32)
    got = np.full((6, 4), np.nan, np.float32)
    emu.run(TEXTURES, "sample_edges", threadgroups=1, threads_per_threadgroup=6, buffers=[got],
            textures=[row])
    cols = np.clip(np.floor(np.arange(6) - 1.5).astype(int), 0, 2)
    assert np.array_equal(got, row[0, cols])

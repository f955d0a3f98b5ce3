"""Every Metal kernel in shaders/ through the metal-emu backend, against float64.

Shapes stay <= 256 per side (the emulator runs simdgroup matrices redundantly per lane) and
include, for every kernel that serves any shape, odd sizes that are multiples of no tile.
The backend runs the shaders in strict mode (barrier divergence is an error)."""
from pathlib import Path

import numpy as np
import pytest

import fastgemm
from fastgemm import emu
from conftest import assert_matches, rand, reference

pytestmark = pytest.mark.skipif(
    "metal-emu" not in [b.name for b in fastgemm.backends() if b.available],
    reason="metal-emu backend not built")


def emu_kernels():
    try:
        return list(fastgemm.kernels("metal-emu"))
    except Exception:
        return []


KERNELS = emu_kernels()
IDS = [k.name for k in KERNELS]


def tile_shape(k):
    """A small shape that every multiple-of constraint of the kernel accepts."""
    for m in (64, 128, 256):
        for n in (64, 128, 256):
            for kk in (32, 64, 256, 512, 1024):
                if k.accepts(m, n, kk) and m * n * kk <= 128 * 256 * 1024:
                    return (m, n, kk)
    pytest.fail(f"no small shape satisfies the constraints of {k.name}")


@pytest.mark.parametrize("k", KERNELS, ids=IDS)
def test_kernel_on_its_tile_shape(k, rng):
    M, N, K = tile_shape(k)
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, np.float32)  # poisoned: an unwritten element fails
    fastgemm.sgemm(A, B, C, backend="metal-emu", kernel=k.name)
    assert_matches(C, reference(A, B), k.precision, K, f"{k.name} {M}x{N}x{K}")


ODD = [(1, 1, 1), (67, 45, 71), (33, 97, 13), (130, 129, 31)]


@pytest.mark.parametrize("k", [k for k in KERNELS if k.accepts(67, 45, 71)],
                         ids=[k.name for k in KERNELS if k.accepts(67, 45, 71)])
@pytest.mark.parametrize("shape", ODD, ids=[f"{m}x{n}x{kk}" for m, n, kk in ODD])
def test_edge_kernel_on_odd_shapes(k, shape, rng):
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, np.float32)
    fastgemm.sgemm(A, B, C, backend="metal-emu", kernel=k.name)
    assert_matches(C, reference(A, B), k.precision, K, f"{k.name} {M}x{N}x{K}")


def test_every_family_has_an_any_shape_kernel():
    families = {}
    for k in KERNELS:
        families.setdefault(k.ladder_step, []).append(k.accepts(67, 45, 71))
    # steps 2+3 share the tiled family, 5-7 the simdgroup family, 8-9 tensor ops
    groups = {"naive": [1], "tiled": [2, 3], "coarse": [4], "simdgroup": [5, 6, 7], "mpp": [8, 9]}
    for name, steps in groups.items():
        assert any(any(families.get(s, [])) for s in steps), f"{name} has no any-shape kernel"


@pytest.mark.parametrize("k", [k for k in KERNELS if k.accepts(64, 128, 64, True, True, 0.5, 2.0)],
                         ids=[k.name for k in KERNELS if k.accepts(64, 128, 64, True, True, 0.5, 2.0)])
@pytest.mark.parametrize("trans_a,trans_b", [(False, True), (True, False), (True, True)])
def test_transposes_and_scalars(k, trans_a, trans_b, rng):
    M, N, K = 64, 128, 64
    A = rand(rng, K, M) if trans_a else rand(rng, M, K)
    B = rand(rng, N, K) if trans_b else rand(rng, K, N)
    C0 = rand(rng, M, N)
    C = C0.copy()
    fastgemm.sgemm(A, B, C, alpha=0.5, beta=2.0, trans_a=trans_a, trans_b=trans_b,
                   backend="metal-emu", kernel=k.name)
    ref = reference(A, B, C0, 0.5, 2.0, trans_a, trans_b)
    assert_matches(C, ref, k.precision, K, k.name)


@pytest.mark.parametrize("k", [k for k in KERNELS if not k.accepts(64, 64, 64, True, False)],
                         ids=[k.name for k in KERNELS if not k.accepts(64, 64, 64, True, False)])
def test_unsupported_features_raise_constraint_error(k, rng):
    M, N, K = tile_shape(k)
    with pytest.raises(fastgemm.ConstraintError):
        fastgemm.sgemm(rand(rng, K, M), rand(rng, K, N), trans_a=True, backend="metal-emu",
                       kernel=k.name)


def test_kernels_carry_sources_and_caps():
    for k in KERNELS:
        assert k.source.startswith("shaders/") and k.source.endswith(".metal"), k.name
        assert k.bench_flops_cap < float("inf"), "emulator runs must be capped in benchmarks"


def test_emulator_results_are_deterministic(rng):
    A, B = rand(rng, 67, 45), rand(rng, 45, 71)
    c1 = fastgemm.sgemm(A, B, backend="metal-emu", kernel="tiled_16")
    c2 = fastgemm.sgemm(A, B, backend="metal-emu", kernel="tiled_16")
    assert np.array_equal(c1, c2)


# --- float4 rungs of step 4: 04_coarse_2d_vec4*.metal (gemm_vec4.h) ---------------------------
# Three rungs over the two coarse2d tilings: float4 accesses, + padded/swizzled tile layout,
# + double buffering. They serve any shape and any leading dimension: float4 device accesses
# where ld % 4 == 0 and the four elements exist, element-wise loads elsewhere; so beyond the
# generic tests above they run edge tiles with every transpose, and strided views whose row
# strides are and are not multiples of 4.
VEC4 = [k for k in KERNELS if k.params.get("vec_width") == 4]
VEC4_IDS = [k.name for k in VEC4]
VEC4_RUNGS = {  # registry name prefix -> (shader, [[host_name]] of the 8x8 instance)
    "coarse2d_vec4": ("04_coarse_2d_vec4.metal", "matmul_coarse2d_vec4_128x128_k8_8x8"),
    "coarse2d_vec4_swizzled": ("04_coarse_2d_vec4_swizzled.metal",
                               "matmul_coarse2d_vec4_swizzled_128x128_k8_8x8"),
    "coarse2d_vec4_db": ("04_coarse_2d_vec4_double_buffer.metal",
                         "matmul_coarse2d_vec4_db_128x128_k8_8x8"),
}
REPO_SHADERS = Path(__file__).resolve().parent.parent / "shaders"


def test_vec4_rungs_are_registered_for_any_shape():
    names = {k.name for k in VEC4}
    for rung in VEC4_RUNGS:
        for tiling in ("4x4", "8x8"):
            assert f"{rung}_{tiling}" in names
    for k in VEC4:
        assert k.ladder_step == 4 and k.precision == "fp32", k.name
        assert all(k.params.get(p) for p in ("BM", "BN", "BK", "TM", "TN")), k.name
        assert k.accepts(67, 45, 71, True, True, 0.5, 2.0), k.name


# Odd sizes, and multiples of 4 that are multiples of no tile (float4 groups inside edge tiles).
VEC4_SHAPES = ODD + [(132, 68, 44), (68, 132, 9)]


@pytest.mark.parametrize("k", VEC4, ids=VEC4_IDS)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             (True, True)])
def test_vec4_rungs_edges_with_transposes_and_scalars(k, trans_a, trans_b, rng):
    for M, N, K in VEC4_SHAPES:
        A = rand(rng, K, M) if trans_a else rand(rng, M, K)
        B = rand(rng, N, K) if trans_b else rand(rng, K, N)
        C0 = rand(rng, M, N)
        C = C0.copy()
        fastgemm.sgemm(A, B, C, alpha=-0.75, beta=0.5, trans_a=trans_a, trans_b=trans_b,
                       backend="metal-emu", kernel=k.name)
        ref = reference(A, B, C0, -0.75, 0.5, trans_a, trans_b)
        assert_matches(C, ref, k.precision, K, f"{k.name} {M}x{N}x{K} ta={trans_a} tb={trans_b}")


# Extra elements per row of the stored A, B, C: not multiples of 4 (element-wise path), and
# multiples of 4 larger than the row (float4 path with ld > cols).
ROW_PADS = [(1, 3, 2), (4, 8, 4), (5, 4, 0)]


@pytest.mark.parametrize("k", VEC4, ids=VEC4_IDS)
@pytest.mark.parametrize("pads", ROW_PADS, ids=[f"pad{a}-{b}-{c}" for a, b, c in ROW_PADS])
def test_vec4_rungs_on_strided_views(k, pads, rng):
    M, N, K = 68, 132, 40
    for trans_a, trans_b in [(False, False), (True, True), (False, True)]:
        a_rows, a_cols = (K, M) if trans_a else (M, K)
        b_rows, b_cols = (N, K) if trans_b else (K, N)
        A = rand(rng, a_rows, a_cols + pads[0])[:, :a_cols]
        B = rand(rng, b_rows, b_cols + pads[1])[:, :b_cols]
        C_full = rand(rng, M, N + pads[2])
        C_full[:, :N] = np.nan  # beta == 0 must not read C
        before = C_full.copy()
        C = C_full[:, :N]
        fastgemm.sgemm(A, B, C, alpha=1.5, trans_a=trans_a, trans_b=trans_b,
                       backend="metal-emu", kernel=k.name)
        what = f"{k.name} lda/ldb/ldc +{pads} ta={trans_a} tb={trans_b}"
        assert_matches(C, reference(A, B, None, 1.5, 0.0, trans_a, trans_b), k.precision, K, what)
        assert np.array_equal(C_full[:, N:], before[:, N:]), f"{what}: wrote past the view"


def _gemm_params(M, N, K, lda, ldb, ldc, trans_a, trans_b, alpha, beta):
    p = np.array([M, N, K, lda, ldb, ldc, int(trans_a), int(trans_b), 0, 0, 0, 0], np.uint32)
    p[8:10] = np.array([alpha, beta], np.float32).view(np.uint32)
    return p


@pytest.fixture
def emu_cache(tmp_path_factory, monkeypatch):
    # The directory tests/test_emu_run.py uses: one runtime compile per session.
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


@pytest.mark.parametrize("rung", list(VEC4_RUNGS))
def test_vec4_rungs_do_not_depend_on_thread_order(rung, rng, emu_cache):
    # A missing or misplaced barrier (double buffering: a write into the buffer being read)
    # shows as NaN from the poisoned threadgroup memory or as results that change with the
    # order in which the emulator first runs each group's threads.
    shader, function = VEC4_RUNGS[rung]
    M, N, K = 130, 129, 67
    A, B, C0 = rand(rng, M, K), rand(rng, N, K), rand(rng, M, N)
    params = _gemm_params(M, N, K, K, K, N, False, True, 0.5, 2.0)
    results = []
    for order in ("natural", "reversed", "shuffled"):
        C = C0.copy()
        emu.run(REPO_SHADERS / shader, function, threadgroups=(2, 2), threads_per_threadgroup=256,
                buffers=[A, B, C, params], strict=True, order=order)
        results.append(C)
    assert_matches(results[0], reference(A, B.T, C0, 0.5, 2.0), "fp32", K, rung)
    assert np.array_equal(results[0], results[1]) and np.array_equal(results[0], results[2])


def test_misaligned_float4_access_is_reported(emu_cache):
    # gemm_vec4.h checks every float4 device access under metal-emu: MSL requires 16-byte
    # alignment, which the CPU would not enforce. A group crossing the edge is read per element.
    src = f"""
#include <metal_stdlib>
#include "{REPO_SHADERS / 'gemm_vec4.h'}"
kernel void load_at(device const float* x [[buffer(0)]], device float4* y [[buffer(1)]],
                    constant uint& c [[buffer(2)]]) {{
    y[0] = gemm_load4_or0(x, 16, 1, 16, 0, c, true);
}}
"""
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(4, np.float32)
    one = dict(threadgroups=1, threads_per_threadgroup=1)
    emu.run(src, "load_at", **one, buffers=[x, y, np.uint32(4)])
    assert np.array_equal(y, x[4:8])
    emu.run(src, "load_at", **one, buffers=[x, y, np.uint32(14)])
    assert np.array_equal(y, [14, 15, 0, 0])  # past the edge: element-wise, zero-filled
    with pytest.raises(fastgemm.KernelError, match="misaligned float4"):
        emu.run(src, "load_at", **one, buffers=[x, y, np.uint32(5)])


def test_vec4_swizzled_rung_changes_only_the_layout():
    # The ladder claims that 04_coarse_2d_vec4_swizzled differs from 04_coarse_2d_vec4 in the
    # threadgroup layout alone; keep the two kernel bodies identical apart from `Layout`.
    def body(name):
        text = (REPO_SHADERS / name).read_text()
        start = text.index("using Layout")
        lines = text[start:text.index("\n}\n", start)].splitlines()
        return lines[1:], lines[0]
    plain, plain_layout = body("04_coarse_2d_vec4.metal")
    swizzled, swizzled_layout = body("04_coarse_2d_vec4_swizzled.metal")
    assert plain == swizzled
    assert "TileLayoutDense" in plain_layout and "TileLayoutPadSwizzle" in swizzled_layout

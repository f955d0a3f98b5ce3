"""The cuda backend: every ladder kernel and both cuBLAS baselines against float64, edge
shapes, constraints, and device arrays (PyTorch / CuPy) without copies.

GPU tests skip, with the backend's own reason, where no NVIDIA GPU is usable; the build
and status tests run everywhere the backend was compiled (CI has nvcc but no GPU)."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fastgemm
from fastgemm import _fastgemm
from fastgemm.errors import ConstraintError

from conftest import assert_matches, ieee_reference, rand, reference

BUILT = bool(getattr(_fastgemm, "built_with_cuda", False))
pytestmark = pytest.mark.skipif(not BUILT, reason="fastgemm was built without the cuda backend (no nvcc)")


def _status():
    return next(b for b in fastgemm.backends() if b.name == "cuda")


def _gpu_reason():
    s = _status()
    return None if s.available else f"no usable CUDA GPU: {s.reason}"


needs_gpu = pytest.mark.skipif(BUILT and _gpu_reason() is not None, reason=str(BUILT and _gpu_reason()))

KERNELS = {k.name: k for k in fastgemm.kernels("cuda")} if BUILT else {}


def _sm90():
    """Whether the GPU runs the sm_90a (wgmma) kernels."""
    return dict(_status().properties).get("wgmma rungs", "").startswith("yes")


def _cublas_ok():
    props = dict(_status().properties)
    return props.get("cublas", "").startswith("loaded")


def _skip_without_cublas():
    """cuBLAS is loaded at run time (an optional library): skip, saying why, when it is not."""
    if not _cublas_ok():
        pytest.skip("cuBLAS could not be loaded: " + dict(_status().properties)["cublas"])


def _either_bound(text):
    """The bound of an "M <= n or N <= n" rule (the few-row tiles), else None."""
    m = re.fullmatch(r"M <= (\d+) or N <= \1", text)
    return int(m.group(1)) if m else None


def _constrained_shape(info, base=(96, 80, 40)):
    """The smallest shape >= base that satisfies the kernel's multiple_of rules, with its
    at_most rules applied as caps. "M <= n or N <= n" caps N: the tall problem, which
    those kernels compute transposed, so that the generic tests reach that path (the
    few-row tests cover the other)."""
    dims = dict(zip("MNK", base))
    for c in info.constraints:
        text = str(c)
        either = _either_bound(text)
        if either is not None:
            dims["N"] = min(dims["N"], either)
            continue
        for d in "MNK":
            if text.startswith(f"{d} %"):
                m = int(text.split("%")[1].split("==")[0])
                dims[d] = (dims[d] + m - 1) // m * m
            elif text.startswith(f"{d} <="):
                dims[d] = min(dims[d], int(text.split("<=")[1]))
    return dims["M"], dims["N"], dims["K"]


def _violating_shape(info, M, N, K):
    """(M, N, K) changed so that the kernel's first rule fails: one past an at_most bound
    (past both for an either-side rule), or one more than a multiple."""
    dims = dict(zip("MNK", (M, N, K)))
    text = str(info.constraints[0])
    either = _either_bound(text)
    if either is not None:
        dims["M"] = dims["N"] = either + 1
    elif "<=" in text:
        dims[text[0]] = int(text.split("<=")[1]) + 1
    else:
        dims[text[0]] += 1
    return dims["M"], dims["N"], dims["K"]


def _plain_only(info):
    return any("trans" in str(c) for c in info.constraints)


def test_status_says_why_when_unavailable():
    s = _status()
    if s.available:
        assert s.device, "an available cuda backend names its GPU"
    else:
        assert s.reason and ("GPU" in s.reason or "driver" in s.reason or "CUDA" in s.reason)


def test_registry_lists_ladder_and_baselines():
    names = set(KERNELS)
    for n in ("naive", "coalesced", "smem_tiling_32x32", "blocktile_1d_64x64", "blocktile_2d_128x128",
              "vectorized_128x128", "bank_conflict_free_128x128", "warptiling_128x128", "async_multistage_128x128",
              "async_tma_128x256", "tf32_mma_sync_128x128", "tf32_wgmma_256x128", "fp32x3_wgmma_128x128",
              "cublas", "cublas_tf32"):
        assert n in names
    assert KERNELS["cublas"].baseline and KERNELS["cublas_tf32"].baseline
    assert KERNELS["fp32x3_wgmma_128x128"].precision == "fp32x3"
    assert KERNELS["tf32_wgmma_256x128"].precision == "tf32"


def test_auto_candidates_include_the_baselines_and_no_teaching_rung():
    """kernel="auto" is never slower than the vendor call it replaces: both cuBLAS modes are
    candidates wherever cuBLAS loads (the accuracy request decides which may run). Rungs
    1-8 never win."""
    if _gpu_reason() is None and _cublas_ok():
        assert KERNELS["cublas"].auto_candidate and KERNELS["cublas_tf32"].auto_candidate
    else:  # they cannot run here, so "auto" must not time them
        assert not KERNELS["cublas"].auto_candidate and not KERNELS["cublas_tf32"].auto_candidate
    assert KERNELS["tf32_mma_sync_128x128"].auto_candidate  # admitted only for precision="tf32"
    for name, k in KERNELS.items():
        if 1 <= k.ladder_step <= 8:
            assert not k.auto_candidate, name
    # sm_90a kernels are candidates only where they can launch.
    hopper = [k for k in KERNELS.values() if "sm_90a" in (k.isa or "")]
    assert hopper
    if _gpu_reason() is not None:
        assert not any(k.auto_candidate for k in hopper)


def test_device_call_rejects_an_unknown_precision():
    from fastgemm import cuda
    from fastgemm.errors import NotFoundError

    A = np.ones((2, 2), np.float32)
    with pytest.raises(NotFoundError, match="precision 'fp16'"):
        cuda.sgemm(A, A, precision="fp16")
    with pytest.raises(NotFoundError, match="precision 'fp64'"):
        _fastgemm.cuda_sgemm("auto", 2, 2, 2, 0, 2, 0, 2, 0, 2, False, False, 1.0, 0.0, precision="fp64")


def test_device_call_without_a_gpu_says_why():
    if _gpu_reason() is None:
        pytest.skip("a CUDA GPU is usable here: the unavailable path cannot be reached")
    from fastgemm.errors import BackendUnavailableError

    for precision in ("fp32", "strict", "tf32"):
        with pytest.raises(BackendUnavailableError, match="cuda"):
            _fastgemm.cuda_sgemm("auto", 2, 2, 2, 0, 2, 0, 2, 0, 2, False, False, 1.0, 0.0, precision=precision)


@needs_gpu
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_float64(rng, name):
    info = KERNELS[name]
    if name.startswith("cublas"):
        _skip_without_cublas()
    M, N, K = _constrained_shape(info, (256, 256, 96))
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)  # poisoned: beta = 0 must not read it
    out = fastgemm.sgemm(A, B, C, kernel=name, backend="cuda")
    assert out is C
    assert_matches(C, reference(A, B), info.precision, K, name)


SPLIT_K = ["async_tma_128x256_splitk", "async_tma_128x128_splitk", "async_tma_64x256_splitk", "async_tma_256x64_splitk",
           "tf32_wgmma_256x128_splitk",
           "tf32_wgmma_128x128_splitk", "fp32x3_wgmma_128x128_splitk"]
ANY_SHAPE = ["naive", "coalesced", "smem_tiling_32x32", "async_tma_128x256", "async_tma_256x128", "async_tma_128x128",
             "tf32_mma_sync_128x128", "tf32_wgmma_256x128", "fp32x3_wgmma_128x128", "ozaki_int8_128x256",
             "ozaki_int8_128x256_c4", "ozaki_int8_128x256_fused_rows", "ozaki_int8_128x256_resident",
             "small_tile_32x32", "small_tile_64x64"] + SPLIT_K


@needs_gpu
@pytest.mark.parametrize("name", ANY_SHAPE)
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 65), (129, 257, 95), (255, 131, 67), (7, 300, 3)])
def test_any_shape_kernels_edge_shapes(rng, name, shape):
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)
    fastgemm.sgemm(A, B, C, kernel=name, backend="cuda")
    assert_matches(C, reference(A, B), KERNELS[name].precision, K, f"{name} {shape}")


@needs_gpu
@pytest.mark.parametrize("name", ANY_SHAPE + ["cublas"])
@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
def test_transposes_alpha_beta(rng, name, ta, tb):
    if name == "cublas":
        _skip_without_cublas()
    M, N, K = 131, 97, 75
    A = rand(rng, K, M) if ta else rand(rng, M, K)
    B = rand(rng, N, K) if tb else rand(rng, K, N)
    C0 = rand(rng, M, N)
    C = C0.copy()
    fastgemm.sgemm(A, B, C, alpha=-1.5, beta=0.25, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
    ref = reference(A, B, C0, -1.5, 0.25, ta, tb)
    assert_matches(C, ref, KERNELS[name].precision, K, name)


@needs_gpu
@pytest.mark.parametrize("name", [n for n in KERNELS if KERNELS[n].constraints])
def test_tiled_kernels_alpha_beta_and_constraints(rng, name):
    info = KERNELS[name]
    M, N, K = _constrained_shape(info, (256, 256, 64))
    A, B, C0 = rand(rng, M, K), rand(rng, K, N), rand(rng, M, N)
    C = C0.copy()
    fastgemm.sgemm(A, B, C, alpha=0.5, beta=2.0, kernel=name, backend="cuda")
    assert_matches(C, reference(A, B, C0, 0.5, 2.0), info.precision, K, name)
    Mx, Nx, Kx = _violating_shape(info, M, N, K)
    with pytest.raises((ConstraintError, ValueError)):
        fastgemm.sgemm(rand(rng, Mx, Kx), rand(rng, Kx, Nx), kernel=name, backend="cuda")


@needs_gpu
@pytest.mark.parametrize("name", [n for n in KERNELS if KERNELS[n].constraints])
def test_host_arrays_with_unaligned_rows_are_packed(rng, name):
    """The vectorized rungs need 16-byte aligned device rows; host arrays are copied to the
    device in the backend's own layout, so views with odd row pitches still run."""
    info = KERNELS[name]
    M, N, K = _constrained_shape(info, (128, 128, 32))
    A = rand(rng, M, K + 1)[:, 1:]   # row pitch K + 1 floats, offset by one
    B = rand(rng, K, N + 3)[:, :N]   # row pitch N + 3
    buf = rand(rng, M, N + 1)
    C = buf[:, :N]                   # row pitch N + 1: not a multiple of 16 bytes
    C0 = C.copy()
    fastgemm.sgemm(A, B, C, alpha=1.5, beta=-0.5, kernel=name, backend="cuda")
    assert_matches(C, reference(A, B, C0, 1.5, -0.5), info.precision, K, name)


@needs_gpu
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nan_and_inf_inputs_propagate_like_ieee(rng, name):
    """NaN in A poisons its row of C, Inf in A or B gives +-Inf along its row or column,
    Inf * 0 gives NaN; everything else stays finite and right. fp32x3 cannot carry an
    Inf through its split and must leave those parts to plain FP32 (nonfinite.cuh)."""
    info = KERNELS[name]
    if name.startswith("cublas"):
        _skip_without_cublas()
    M, N, K = _constrained_shape(info, (300, 260, 200))
    A, B = rand(rng, M, K), rand(rng, K, N)
    A[5, 7] = np.inf
    A[17, 3] = np.nan
    B[11, min(40, N - 3)] = -np.inf
    B[9, :] = 0.0
    A[23, 9] = np.inf                # meets the zero row of B: row 23 of C is NaN
    C = np.full((M, N), 7.0, dtype=np.float32)
    fastgemm.sgemm(A, B, C, kernel=name, backend="cuda")
    ref = ieee_reference(A, B, None, 1.0, 0.0, False, False)
    for test, what in ((np.isnan, "NaN"), (np.isposinf, "+Inf"), (np.isneginf, "-Inf")):
        assert np.array_equal(test(C), test(ref)), f"{name}: {what} pattern differs"
    finite = np.isfinite(ref)
    assert finite.sum() > M * N // 2
    assert_matches(C[finite], ref[finite], info.precision, K, name)


@needs_gpu
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (1.5, -0.5)])
def test_fp32x3_nonfinite_inputs_with_stream_k_tail_and_beta(rng, alpha, beta):
    """fp32x3's checked kernel leaves the parts of C that a NaN or an Inf reaches to
    plain FP32 (nonfinite.cuh). 1536^2 x 512 makes 144 tiles of 128 x 128: on a 132-SM
    H200, 132 run whole and 12 (rows 1024.., columns 1152..) as a stream-K tail split
    over blocks, so the NaNs and Infs below land in both kinds. With beta != 0 the
    fallback must still see the C it was given."""
    M, N, K = 1536, 1536, 512
    A, B, C0 = rand(rng, M, K), rand(rng, K, N), rand(rng, M, N)
    A[1100, 7] = np.inf               # row 1100: whole tiles (columns < 1152) and tail tiles
    B[300, 1300] = -np.inf            # column 1300: whole tiles (rows < 1024) and tail tiles
    A[1400, 100] = np.nan             # a tail row
    A[40, 200] = np.nan               # a whole-tile row
    B[9, :] = 0.0
    A[1200, 9] = np.inf               # meets the zero row of B: row 1200 of C is NaN
    C = C0.copy()
    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, kernel="fp32x3_wgmma_128x128", backend="cuda")
    ref = ieee_reference(A, B, C0, alpha, beta, False, False)
    for test, what in ((np.isnan, "NaN"), (np.isposinf, "+Inf"), (np.isneginf, "-Inf")):
        assert np.array_equal(test(C), test(ref)), f"{what} pattern differs"
    finite = np.isfinite(ref)
    assert finite.sum() > M * N * 9 // 10
    assert_matches(C[finite], ref[finite], "fp32x3", K, "fp32x3 around non-finite inputs")


@needs_gpu
def test_fp32x3_values_near_float_max(rng):
    """A finite value within 2^-12 relative of FLT_MAX has no TF32 big part (it rounds to
    Inf at 10 mantissa bits), so fp32x3's split cannot carry it although every input and
    every output here is finite: the kernel's test of its accumulators must hand those
    parts of C to plain FP32 (nonfinite.cuh). Once in A (its big part rounded by the TMA
    copy), once in B (split in the k loop)."""
    M, N, K = 300, 260, 200
    A, B = rand(rng, M, K), rand(rng, K, N)
    near_max = np.float32(3.4028e38)
    A[3, 5] = near_max
    B[5, :] *= 0.25                  # row 3 of C: up to ~0.9e38
    B[7, 9] = -near_max
    A[:, 7] *= 0.25                  # column 9 of C: up to ~0.9e38
    C = np.full((M, N), np.nan, dtype=np.float32)
    fastgemm.sgemm(A, B, C, kernel="fp32x3_wgmma_128x128", backend="cuda")
    ref = ieee_reference(A, B, None, 1.0, 0.0, False, False)
    assert np.all(np.isfinite(ref))
    huge = np.zeros((M, N), dtype=bool)
    huge[3, :] = huge[:, 9] = True
    assert_matches(C[huge], ref[huge], "fp32x3", K, "row and column of near-FLT_MAX inputs")
    assert_matches(C[~huge], ref[~huge], "fp32x3", K, "the rest of C")


def _tf32_tie(x):
    """x (float32) with its 13 low mantissa bits set to 0x1000: halfway between two TF32
    values."""
    return ((x.view(np.uint32) & np.uint32(0xFFFFE000)) | np.uint32(0x1000)).view(np.float32)


def _round_tf32(x):
    """x rounded to the nearest TF32 value, ties to even (what TmaElement::tf32 does)."""
    w = x.view(np.uint32).astype(np.uint64)
    w = (w + 0xFFF + ((w >> 13) & 1)) & 0xFFFFE000
    return w.astype(np.uint32).view(np.float32)


@needs_gpu
@pytest.mark.parametrize("side", ["A", "B"])
def test_tf32_wgmma_rounds_both_operands_to_nearest(side):
    """The tensor cores drop the 13 low bits of a shared-memory operand (truncation); the
    wgmma rung's tensor maps round both operands to nearest (ties to even) on the way
    in. With every element of one operand equal to v and the other all ones, each C
    element is K * tf32(v) exactly."""
    ulp, K = 2.0 ** -10, 64
    for v, expect in [(1 + 0.625 * ulp, 1 + ulp), (1 + 0.375 * ulp, 1.0), (1 + 0.5 * ulp, 1.0),
                      (1 + 1.5 * ulp, 1 + 2 * ulp), (-(1 + 1.5 * ulp), -(1 + 2 * ulp))]:
        A, B = np.ones((70, K), np.float32), np.ones((K, 90), np.float32)
        (A if side == "A" else B)[:] = np.float32(v)
        C = fastgemm.sgemm(A, B, kernel="tf32_wgmma_256x128", backend="cuda")
        np.testing.assert_array_equal(C, np.float32(K * expect), err_msg=f"{side} = {v!r}")


@needs_gpu
@pytest.mark.parametrize("ta", [False, True])
def test_tf32_wgmma_is_the_product_of_rounded_operands(rng, ta):
    """Against float64 of the operands rounded to TF32 (ties to even) only the FP32
    accumulation differs (~1e-6); truncating either operand would leave ~4e-4."""
    M, N, K = 300, 260, 1000
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = fastgemm.sgemm(np.ascontiguousarray(A.T) if ta else A, B, trans_a=ta, kernel="tf32_wgmma_256x128", backend="cuda")
    ref = reference(_round_tf32(A), _round_tf32(B))
    assert np.linalg.norm(C - ref) / np.linalg.norm(ref) < 2e-5
    assert_matches(C, reference(A, B), "tf32", K, "against the unrounded operands")


@needs_gpu
@pytest.mark.parametrize("operand", ["A", "B", "A transposed", "A unaligned"])
def test_fp32x3_ties_split_exactly(rng, operand):
    """fp32x3 takes A's big part from the tensor map's rounding and its small part from
    a pre-pass that rounds the same way in its own code (B: both in the k loop). Values
    exactly halfway between two TF32 values are where two roundings would differ (ties
    to even against ties away: big + small then misses A by a TF32 ulp, ~5e-4)."""
    M, N, K = 260, 200, 300
    A, B = rand(rng, M, K), rand(rng, K, N)
    if operand == "B":
        B = _tf32_tie(B)
    else:
        A = _tf32_tie(A)
    ref = reference(A, B)
    if operand == "A transposed":
        C = fastgemm.sgemm(np.ascontiguousarray(A.T), B, trans_a=True, kernel="fp32x3_wgmma_128x128", backend="cuda")
    elif operand == "A unaligned":
        wide = np.zeros((M, K + 1), np.float32)
        wide[:, :K] = A
        C = fastgemm.sgemm(wide[:, :K], B, kernel="fp32x3_wgmma_128x128", backend="cuda")
    else:
        C = fastgemm.sgemm(A, B, kernel="fp32x3_wgmma_128x128", backend="cuda")
    assert_matches(C, ref, "fp32x3", K, f"ties in {operand}")


@needs_gpu
@pytest.mark.parametrize("case,scale_a,scale_b", [
    ("A tiny", 2.0 ** -124, 1.0), ("B tiny", 1.0, 2.0 ** -124),
    ("A subnormal", 2.0 ** -136, 2.0 ** 100), ("B subnormal", 2.0 ** 100, 2.0 ** -136),
    ("B huge", 2.0 ** -100, 2.0 ** 100), ("A huge", 2.0 ** 100, 2.0 ** -100)])
def test_fp32x3_values_near_the_ends_of_the_range(rng, case, scale_a, scale_b):
    """TF32 has 10 mantissa bits only down to 2^-126, so a split small part below that
    loses bits, and products of values under ~2^-113 would lose FP32 accuracy (0.5
    relative error for subnormal inputs). fp32x3 splits B scaled by 2^36, so B values
    down to the smallest subnormal split exactly and B values past 2^92 overflow at that
    scale and go to the IEEE fallback; A's tiny values go to the fallback from the
    pre-pass. Every output here is a normal FP32 number."""
    M, N, K = 260, 200, 300
    A = (rand(rng, M, K) * np.float32(scale_a)).astype(np.float32)
    B = (rand(rng, K, N) * np.float32(scale_b)).astype(np.float32)
    C = fastgemm.sgemm(A, B, kernel="fp32x3_wgmma_128x128", backend="cuda")
    assert_matches(C, reference(A, B), "fp32x3", K, case)


@needs_gpu
def test_fp32x3_one_tiny_row_and_column(rng):
    """Tiny values in one row of A and one column of B: their row and column of C are
    checked on their own (in the norm of all of C they would not show)."""
    M, N, K = 300, 260, 200
    A, B = rand(rng, M, K), rand(rng, K, N)
    A[11, :] *= np.float32(2.0 ** -125)
    B[:, 17] *= np.float32(2.0 ** -125)
    C = fastgemm.sgemm(A, B, kernel="fp32x3_wgmma_128x128", backend="cuda")
    ref = np.asarray(reference(A, B))
    assert_matches(C[11:12], ref[11:12], "fp32x3", K, "tiny row of A")
    assert_matches(C[:, 17:18], ref[:, 17:18], "fp32x3", K, "tiny column of B")
    assert_matches(C, ref, "fp32x3", K, "all of C")


@needs_gpu
@pytest.mark.parametrize("name", ["fp32x3_skinny_m64", "fp32x3_skinny_n64"])
@pytest.mark.parametrize("case,scale_y,scale_x", [
    ("Y tiny", 2.0 ** -124, 1.0), ("X tiny", 1.0, 2.0 ** -124),
    ("Y subnormal", 2.0 ** -136, 2.0 ** 100), ("X subnormal", 2.0 ** 100, 2.0 ** -136),
    ("X huge", 2.0 ** -100, 2.0 ** 100), ("Y huge", 2.0 ** 100, 2.0 ** -100), ("near FLT_MAX", 1.0, 1.0)])
def test_fp32x3_skinny_values_near_the_ends_of_the_range(rng, name, case, scale_y, scale_x):
    """The tensor-core skinny kernels split the big operand X at the 2^36 scale and the
    small one Y unscaled, as rung 13 splits B and A: Y values under 2^-113, X values past
    2^92 and values near FLT_MAX (no TF32 big part) go to the IEEE fallback, X values down
    to the subnormals split exactly. Both layouts reach the tensor cores here: x @ W^T
    (m64, W stored N x K) and A @ B with A's rows along k (n64, B^T gathered first)."""
    S, L, K = 13, 300, 700
    Y = (rand(rng, S, K) * np.float32(scale_y)).astype(np.float32)
    X = (rand(rng, L, K) * np.float32(scale_x)).astype(np.float32)
    huge = np.zeros((S, L), dtype=bool)
    if case == "near FLT_MAX":
        Y[3, 5] = np.float32(3.4028e38)
        X[:, 5] *= 0.25              # row 3 of Out: up to ~0.9e38
        X[9, 7] = -np.float32(3.4028e38)
        Y[:, 7] *= 0.25              # column 9 of Out
        huge[3, :] = huge[:, 9] = True
    if name == "fp32x3_skinny_m64":   # C = Y X^T: A = Y, B = X stored N x K
        A, B, tb, out_t = Y, X, True, False
    else:                             # C = X Y^T: A = X (rows along k), B = Y^T stored K x N
        A, B, tb, out_t = X, np.ascontiguousarray(Y.T), False, True
    C = fastgemm.sgemm(A, B, trans_b=tb, kernel=name, backend="cuda")
    ref = np.asarray(reference(A, B, trans_b=tb))
    assert np.all(np.isfinite(ref))
    mask = huge.T if out_t else huge
    assert_matches(C[~mask], ref[~mask], "fp32x3", K, f"{name} {case}")
    if mask.any():
        assert_matches(C[mask], ref[mask], "fp32x3", K, f"{name} {case}: the near-FLT_MAX row and column")


def check_scaled_then_poisoned(rng, name, M, N, K, ta, alpha, beta, poisoned_calls):
    """C = alpha op(A) B + beta C on random C, then C = op(A) B into NaN-poisoned C
    (beta = 0 must not read C) `poisoned_calls` times, each against float64."""
    A = rand(rng, K, M) if ta else rand(rng, M, K)
    B, C0 = rand(rng, K, N), rand(rng, M, N)
    what, precision = f"{name} {M}x{N}x{K}", KERNELS[name].precision
    C = C0.copy()
    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=ta, kernel=name, backend="cuda")
    assert_matches(C, reference(A, B, C0, alpha, beta, ta), precision, K, what)
    for _ in range(poisoned_calls):
        C = np.full((M, N), np.nan, dtype=np.float32)
        fastgemm.sgemm(A, B, C, trans_a=ta, kernel=name, backend="cuda")
        assert_matches(C, reference(A, B, None, 1.0, 0.0, ta), precision, K, what)


@needs_gpu
@pytest.mark.parametrize("name", ["tf32_wgmma_256x128", "fp32x3_wgmma_128x128", "async_tma_128x256", "async_tma_128x128",
                                  "ozaki_int8_128x256"])
@pytest.mark.parametrize("M,N,K,ta", [(2100, 2000, 97, False), (2300, 1999, 130, True)])
def test_wgmma_persistent_blocks_walk_several_tiles(rng, name, M, N, K, ta):
    # More output tiles than an H200 has SMs (132), so blocks of the persistent kernel
    # run several tiles each through one barrier ring; ragged tiles in m, n and k; with
    # N = 1999 the rows of C are not 16-byte aligned and the epilogue stores scalars.
    check_scaled_then_poisoned(rng, name, M, N, K, ta, 0.75, -0.5, poisoned_calls=1)


@needs_gpu
@pytest.mark.parametrize("name,M,N,K,ta", [
    ("fp32x3_wgmma_128x128", 1536, 1536, 1000, False),  # 144 tiles of 128x128: 12 in the tail, ~11 segments each
    ("fp32x3_wgmma_128x128", 1500, 1700, 333, False),   # 168 ragged tiles: 36 in the tail, 11 k-tiles each
    ("tf32_wgmma_256x128", 2000, 2100, 1100, False),    # 136 tiles of 256x128: 4 in the tail, ~1 k-tile per block
    ("tf32_wgmma_256x128", 3000, 2100, 512, False),     # 204 tiles: 72 in the tail (over half: kept whole)
    ("async_tma_128x128", 2000, 2100, 1100, False),  # 272 tiles, two blocks per SM: 8 in the tail
    ("async_tma_128x128", 3000, 2100, 512, False),   # 408 ragged tiles: 144 in the tail, 2-3 segments each
    ("async_tma_128x128", 2300, 1999, 330, True),    # 288 tiles, A^T given: 24 in the tail, one k-tile per block
])
def test_stream_k_tail(rng, name, M, N, K, ta):
    # On a 132-SM H200 the last round of these shapes (but 3000x2100x512 on tf32) is dealt out by
    # k-tiles in a second kernel (stream_k.cuh): segments park partial tiles and the block
    # finishing a tile's last segment sums them; async_tma_128x128's tail kernel also
    # re-arms its barriers between a block's two segments. Any GPU: the result must be
    # right.
    # Two poisoned calls: the tail's counters are rearmed per call.
    check_scaled_then_poisoned(rng, name, M, N, K, ta, 1.25, -0.75, poisoned_calls=2)


@needs_gpu
@pytest.mark.parametrize("name", ["async_tma_128x256", "async_tma_256x128"])
@pytest.mark.parametrize("M,N,K,ta", [
    (2148, 4146, 700, False),  # 289 ragged tiles (297 at 256x128): the last 41 (49) cut in two k-segments
    (4000, 4000, 520, True),   # 512 tiles, A^T given: the last 32 in two segments each
    (2148, 4146, 2100, False),  # 289 (297) tiles, 66 k-tiles: 21 (25) in four segments, then 20 (24) in eight
    (300, 500, 3000, False),   # 6 tiles, fewer than SMs: each cut in up to 11 segments (split-K)
    (1000, 1000, 1000, False),  # 32 tiles: 4 segments each
])
def test_graded_tail(rng, name, M, N, K, ta):
    # On a 132-SM H200 these grids end in blocks that each run a k-segment of a tile
    # (graded_tail.cuh): segments park partial tiles, and the block finishing a tile's
    # last segment adds them and applies alpha / beta to the C it was given. Any GPU:
    # the result must be right. Two poisoned calls: the counters are rearmed per call.
    check_scaled_then_poisoned(rng, name, M, N, K, ta, 1.25, -0.75, poisoned_calls=2)


@needs_gpu
def test_auto_picks_an_fp32_accurate_kernel(rng):
    A, B = rand(rng, 300, 200), rand(rng, 200, 100)
    C = fastgemm.sgemm(A, B, backend="cuda")
    assert_matches(C, reference(A, B), "fp32x3", 200, "auto")


ALLOWED = {"fp32": {"fp32", "fp32x3", "fp32_ozaki"}, "strict": {"fp32"}, "tf32": {"fp32", "fp32x3", "fp32_ozaki", "tf32"}}


@needs_gpu
@pytest.mark.parametrize("precision", sorted(ALLOWED))
@pytest.mark.parametrize("M,N,K,ta,tb", [(1, 4096, 4096, False, True), (257, 255, 4099, True, False),
                                         (128, 128, 65536, False, False), (1024, 1024, 1024, True, True)])
def test_device_auto_stays_within_the_precision_asked_for(precision, M, N, K, ta, tb):
    """kernel="auto" on device pointers goes through the core's selection policy with the
    caller's accuracy request: the kernel it names is of an allowed class, and the result
    meets that class's tolerance."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    A = torch.rand((K, M) if ta else (M, K), device="cuda", generator=g) * 2 - 1
    B = torch.rand((N, K) if tb else (K, N), device="cuda", generator=g) * 2 - 1
    C = torch.full((M, N), float("nan"), device="cuda")
    name = _fastgemm.cuda_sgemm("auto", M, N, K, A.data_ptr(), A.stride(0), B.data_ptr(), B.stride(0),
                                C.data_ptr(), C.stride(0), ta, tb, 1.0, 0.0,
                                torch.cuda.current_stream().cuda_stream, C.device.index, precision)
    torch.cuda.synchronize()
    assert KERNELS[name].precision in ALLOWED[precision], (precision, name)
    ref = (A.double().t() if ta else A.double()) @ (B.double().t() if tb else B.double())
    assert_matches(C.cpu().numpy(), ref.cpu().numpy(), KERNELS[name].precision, K, f"auto -> {name}")


@needs_gpu
def test_fp32x3_at_least_as_accurate_as_cublas(rng):
    _skip_without_cublas()
    M = N = K = 1024
    A, B = rand(rng, M, K), rand(rng, K, N)
    ref = reference(A, B)
    err = {}
    for name in ("cublas", "fp32x3_wgmma_128x128", "tf32_wgmma_256x128"):
        C = fastgemm.sgemm(A, B, kernel=name, backend="cuda")
        err[name] = np.linalg.norm(C - ref) / np.linalg.norm(ref)
    assert err["fp32x3_wgmma_128x128"] <= 2 * err["cublas"], err
    assert err["tf32_wgmma_256x128"] > 10 * err["fp32x3_wgmma_128x128"], err  # the split does buy accuracy


@needs_gpu
@pytest.mark.parametrize("name,M,N,K,ta,tb", [
    ("fp32x3_wgmma_128x128_splitk", 1024, 1024, 1024, True, False),
    ("fp32x3_wgmma_128x128", 1025, 1025, 1025, True, False),
    ("fp32x3_wgmma_128x128_splitk", 128, 4096, 4096, False, True),
    ("skinny_m64", 8, 4096, 4096, False, True),
    ("skinny_m64", 4, 4096, 4096, False, True),
    ("fp32x3_skinny_m64", 16, 4096, 4096, False, True),
    ("fp32x3_skinny_n64", 8192, 16, 4096, False, False),
])
def test_short_sums_err_no_more_than_cublas(rng, name, M, N, K, ta, tb):
    """Where cuBLAS sums in short pieces (split K on small products, a batched GEMV on a
    few rows), its error is below fp32x3's usual 4.8e-7 and a strict chain's 2.1e-7. The
    kernels that replace it there order their sums to match (fp32x3: a short run's small
    products before its big ones; the few-row GEMV: eight products summed apart), so that
    there too an FP32-accurate call errs no more than the cuBLAS call it replaces."""
    _skip_without_cublas()
    A = rand(rng, K, M) if ta else rand(rng, M, K)
    B = rand(rng, N, K) if tb else rand(rng, K, N)
    ref = reference(A, B, trans_a=ta, trans_b=tb)
    err = {}
    for kernel in ("cublas", name):
        C = fastgemm.sgemm(A, B, trans_a=ta, trans_b=tb, kernel=kernel, backend="cuda")
        err[kernel] = np.linalg.norm(C - ref) / np.linalg.norm(ref)
    assert err[name] <= err["cublas"], err


# --- rung 15: fp32_ozaki on INT8 wgmma (15_ozaki_int8.cu) ---------------------------

OZAKI = "ozaki_int8_128x256"
OZAKI_C4 = "ozaki_int8_128x256_c4"  # clusters of four, which OZAKI takes from 8192 tiles of C on
OZAKI_FUSED_ROWS = "ozaki_int8_128x256_fused_rows"  # one kernel scales and splits lines along k
OZAKI_RESIDENT = "ozaki_int8_128x256_resident"  # the operand pass reads each operand once (K <= 8192)
OZAKI_FORMS = [OZAKI, OZAKI_C4, OZAKI_FUSED_ROWS, OZAKI_RESIDENT]


def _wide(rng, *shape):
    """Random signs, magnitudes log-uniform over [2^-20, 2^20] in every row and column."""
    return (rng.choice([-1.0, 1.0], shape) * np.exp2(rng.uniform(-20.0, 20.0, shape))).astype(np.float32)


def _ozaki_cpu(A, B, **kw):
    return fastgemm.sgemm(A, B, kernel="ozaki_reference", backend="cpu", **kw)


@pytest.mark.parametrize("name", OZAKI_FORMS)
def test_ozaki_rung_is_registered_and_races_in_one_form(name):
    """Rung 15 enters kernel="auto"'s race where sm_90a kernels can launch (the race keeps
    it only where it beats fp32x3); its other forms compute the same bits and stay out."""
    info = KERNELS[name]
    assert info.precision == "fp32_ozaki" and info.ladder_step == 15
    assert info.auto_candidate == (name == OZAKI and _gpu_reason() is None and _sm90())
    assert info.params["moduli"] == 7 and "sm_90a" in info.isa


@needs_gpu
@pytest.mark.parametrize("name", OZAKI_FORMS)
@pytest.mark.parametrize("inputs", ["uniform", "wide"])
@pytest.mark.parametrize("M,N,K,ta,tb", [(64, 64, 64, False, False), (300, 260, 200, False, False),
                                         (130, 517, 1031, True, False), (257, 129, 333, False, True),
                                         (2100, 2000, 97, True, True), (2176, 2048, 520, True, False),
                                         (128, 256, 4096, False, False), (2048, 136, 1000, False, False),
                                         (72, 2083, 515, True, True), (64, 96, 6000, False, False),
                                         (96, 72, 8192, True, False), (40, 48, 9000, False, True)])
def test_ozaki_rung_matches_the_cpu_reference_bit_for_bit(rng, name, inputs, M, N, K, ta, tb):
    """The rung runs the scheme of src/ozaki/ozaki_scheme.hpp, the CPU reference kernel
    runs it step for step: with beta == 0 every element agrees to the bit (scaling, residues,
    exact sums, CRT, unscaling, certificate, IEEE recomputation). Edge tiles, several tiles per
    block (2100 x 2000 and 2176 x 2048: 136 tiles), clusters of two and of four blocks with
    rows of tiles that do not fill the last cluster, every transpose, both input classes.
    2048 x 136 x 1000 and 72 x 2083 x 515 give 2048 and more lines along k, which the
    fused-rows form scales and splits in one kernel: rows of A with 16-byte loads, columns
    of op(B) with scalar ones. The resident form's clusters take 1 to 8 blocks (5 for
    K = 1031) and chunks of 128 to 1024 values of k (K = 6000 and 8192); K = 9000 is
    beyond it, and takes the two kernels."""
    gen = rand if inputs == "uniform" else _wide
    A = gen(rng, K, M) if ta else gen(rng, M, K)
    B = gen(rng, N, K) if tb else gen(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)
    fastgemm.sgemm(A, B, C, alpha=-0.75, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
    np.testing.assert_array_equal(C, _ozaki_cpu(A, B, alpha=-0.75, trans_a=ta, trans_b=tb))


@needs_gpu
@pytest.mark.parametrize("M,N,K", [(1024, 1024, 4096), (512, 512, 16384)])
def test_ozaki_rung_error_against_cublas_on_both_input_classes(rng, M, N, K):
    """The class's claim on the GPU: no worse than cuBLAS SGEMM on uniform inputs, within
    twice it on inputs spanning 2^-20..2^20 within rows and columns."""
    _skip_without_cublas()
    for gen, factor in ((rand, 1.0), (_wide, 2.0)):
        A, B = gen(rng, M, K), gen(rng, K, N)
        ref = reference(A, B)
        err = {name: np.linalg.norm(fastgemm.sgemm(A, B, kernel=name, backend="cuda") - ref) / np.linalg.norm(ref)
               for name in (OZAKI, "cublas")}
        assert err[OZAKI] <= factor * err["cublas"], (gen.__name__, err)


@needs_gpu
def test_ozaki_rung_recomputes_what_the_moduli_cannot_carry(rng):
    """Rows of A large where columns of B are small (A = Y D, B = D^-1 X, D over 2^-40..2^40):
    no region is certified, the IEEE kernel recomputes all of C, and the result is FP32-
    accurate; exact cancellation in one region is recomputed there alone."""
    M, N, K = 300, 260, 257
    d = np.exp2(rng.uniform(-40.0, 40.0, K))
    A = (rand(rng, M, K) * d[None, :]).astype(np.float32)
    B = (rand(rng, K, N) / d[:, None]).astype(np.float32)
    C = fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda")
    assert_matches(C, reference(A, B), "fp32", K, "misaligned ranges")
    np.testing.assert_array_equal(C, _ozaki_cpu(A, B))
    A, B = rand(rng, 256, 200), rand(rng, 200, 256)
    B[100:, 64:128] = B[:100, 64:128]
    A[64:128, 100:] = -A[64:128, :100]  # C[64:128, 64:128] cancels exactly
    C = fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda")
    np.testing.assert_array_equal(C, _ozaki_cpu(A, B))
    terms = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    assert np.all(np.abs(C - reference(A, B)) <= _fastgemm.tolerance_for("fp32", 200) * terms)


@needs_gpu
@pytest.mark.parametrize("name", OZAKI_FORMS)
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (1.5, -0.5)])
def test_ozaki_rung_nonfinite_lines_and_beta(rng, name, alpha, beta):
    """A NaN or an Inf makes its line's scale NaN: every region it reaches goes to the IEEE
    kernel, which must still see the C it was given when beta != 0. Every operand pass."""
    M, N, K = 1100, 700, 300
    A, B, C0 = rand(rng, M, K), rand(rng, K, N), rand(rng, M, N)
    A[1000, 7] = np.inf
    B[30, 650] = -np.inf
    A[40, 200] = np.nan
    B[9, :] = 0.0
    A[500, 9] = np.inf  # meets the zero row of B: row 500 of C is NaN
    C = C0.copy()
    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, kernel=name, backend="cuda")
    ref = ieee_reference(A, B, C0, alpha, beta, False, False)
    for test, what in ((np.isnan, "NaN"), (np.isposinf, "+Inf"), (np.isneginf, "-Inf")):
        assert np.array_equal(test(C), test(ref)), f"{what} pattern differs"
    finite = np.isfinite(ref)
    assert_matches(C[finite], ref[finite], "fp32_ozaki", K, "around non-finite inputs")


@needs_gpu
@pytest.mark.parametrize("scale_a,scale_b", [(2.0**100, 2.0**-100), (2.0**-120, 2.0**-10), (2.0**-140, 2.0**100),
                                             (2.0**127, 2.0**-30)])
def test_ozaki_rung_values_near_the_ends_of_the_range(rng, scale_a, scale_b):
    M, N, K = 300, 260, 129
    A = (rand(rng, M, K) * np.float64(scale_a)).astype(np.float32)
    B = (rand(rng, K, N) * np.float64(scale_b)).astype(np.float32)
    C = fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda")
    assert_matches(C, reference(A, B), "fp32_ozaki", K, f"A x {scale_a:g}, B x {scale_b:g}")
    np.testing.assert_array_equal(C, _ozaki_cpu(A, B))


@needs_gpu
def test_ozaki_rung_results_that_overflow(rng):
    M, N, K = 200, 300, 16
    A = (rng.uniform(0.5, 1.0, (M, K)) * 2.0**127).astype(np.float32)
    B = rng.uniform(0.5, 1.0, (K, N)).astype(np.float32)
    B[:, 0] *= np.float32(2.0**-30)
    C = fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda")
    assert np.all(np.isposinf(C[:, 1:]))
    assert_matches(C[:, :1], reference(A, B[:, :1]), "fp32", K, "finite column")


@needs_gpu
def test_ozaki_rung_k_beyond_the_exact_int32_chunk(rng):
    """K = 2^17 + 4099: the multipliers reduce their accumulators mod m after 1024 k-tiles;
    without it the odd moduli's sums would overflow int32. Bit for bit with the CPU reference,
    and within the class's tolerance."""
    K = (1 << 17) + 4099
    A = np.ones((130, K), np.float32)
    A[::7] = rand(rng, len(A[::7]), K)
    B = rand(rng, K, 260)
    C = fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda")
    np.testing.assert_array_equal(C, _ozaki_cpu(A, B))
    assert_matches(C, reference(A, B), "fp32_ozaki", K, "K > 2^17")


@needs_gpu
def test_ozaki_rung_k_of_one_is_one_fp32_rounding(rng):
    A, B = rand(rng, 300, 1), rand(rng, 1, 260)
    np.testing.assert_array_equal(fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda"), A * B)


@needs_gpu
def test_ozaki_rung_is_deterministic(rng):
    A, B = _wide(rng, 1500, 700), rand(rng, 700, 1300)
    first = fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda")
    np.testing.assert_array_equal(fastgemm.sgemm(A, B, kernel=OZAKI, backend="cuda"), first)


@needs_gpu
def test_info_reports_the_int8_tensor_core_probe():
    """On Hopper the cuda backend's probes include the INT8 tensor-core rate (wgmma s8 from
    shared memory), the ceiling of rung 15, and `fastgemm info` prints it."""
    import subprocess
    import sys

    from fastgemm import roofline

    c = roofline.cached_ceilings("cuda")
    int8 = [gops for unit, gops in c.matrix_peaks if unit.startswith("int8 tensor cores")]
    if not int8:
        pytest.skip("the INT8 probe needs an sm_90 GPU; this one measured none: " + repr(c.matrix_peaks))
    assert 100 <= int8[0] / 1000 <= 4000, c.matrix_peaks  # TOPS: about 1,900 on an H200
    out = subprocess.run([sys.executable, "-m", "fastgemm", "info"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "int8 tensor cores" in out.stdout, out.stdout + out.stderr


# --- split-K (split_k.cuh) and skinny (14_skinny.cu) ---------------------------------

# K-heavy and mid-size shapes where the tiles cannot fill 132 SMs, so the split-K
# variants do split (2 to 64 ways), with ragged tiles in m, n and k and prime sizes.
SPLIT_SHAPES = [(256, 256, 16384), (97, 131, 12289), (1024, 1024, 1024), (513, 769, 2047), (7, 300, 9001),
                (1, 1, 70000)]


@needs_gpu
@pytest.mark.parametrize("name", SPLIT_K)
@pytest.mark.parametrize("M,N,K", SPLIT_SHAPES)
def test_split_k_variants(rng, name, M, N, K):
    check_scaled_then_poisoned(rng, name, M, N, K, False, -0.75, 1.5, poisoned_calls=1)


@needs_gpu
@pytest.mark.parametrize("name", SPLIT_K)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_split_k_transposes(rng, name, ta, tb):
    M, N, K = 300, 260, 8191
    A = rand(rng, K, M) if ta else rand(rng, M, K)
    B = rand(rng, N, K) if tb else rand(rng, K, N)
    C0 = rand(rng, M, N)
    C = C0.copy()
    fastgemm.sgemm(A, B, C, alpha=2.0, beta=-0.5, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
    assert_matches(C, reference(A, B, C0, 2.0, -0.5, ta, tb), KERNELS[name].precision, K, f"{name} {ta} {tb}")


@needs_gpu
@pytest.mark.parametrize("name", SPLIT_K + ["skinny_m64", "skinny_n64", "fp32x3_skinny_m64", "fp32x3_skinny_n64"])
def test_split_reductions_are_deterministic(rng, name):
    """The partial slabs are added in split order for every element: the same inputs give
    the same bits, call after call. (The skinny m64 kernels get B^T, rows along k.)"""
    M, N, K = (16, 1000, 30000) if name.endswith("skinny_m64") else (1000, 16, 30000) \
        if name.endswith("skinny_n64") else (200, 300, 30000)
    tb = name.endswith("skinny_m64")
    A, B = rand(rng, M, K), rand(rng, N, K) if tb else rand(rng, K, N)
    first = fastgemm.sgemm(A, B, trans_b=tb, kernel=name, backend="cuda")
    for _ in range(3):
        np.testing.assert_array_equal(fastgemm.sgemm(A, B, trans_b=tb, kernel=name, backend="cuda"), first)
    assert_matches(first, reference(A, B, trans_b=tb), KERNELS[name].precision, K, name)


@needs_gpu
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (1.5, -0.5)])
@pytest.mark.parametrize("name,M,N,tb", [("fp32x3_wgmma_128x128_splitk", 300, 260, False),
                                         ("fp32x3_wgmma_64x128_splitk", 120, 260, False),
                                         ("fp32x3_wgmma_64x128_splitk", 120, 260, True),  # B^T read in place
                                         ("fp32x3_wgmma_16x128_splitk", 16, 260, True),
                                         ("fp32x3_wgmma_16x128_splitk", 300, 13, False),  # computed as C^T
                                         ("fp32x3_wgmma_64x128_splitk", 300, 100, True),
                                         ("fp32x3_skinny_m64", 16, 260, True),  # tensor cores: B^T rows along k
                                         ("fp32x3_skinny_m64", 40, 1000, True),
                                         ("fp32x3_skinny_n64", 300, 13, False)])  # A rows along k
def test_fp32x3_split_k_nonfinite_inputs(rng, alpha, beta, name, M, N, tb):
    """fp32x3's split-K reduction lists the 64 x 64 regions whose sums are not finite for
    the IEEE fallback, which must still see the C it was given (beta != 0); for a product
    computed as C^T, the regions are C's, not C^T's."""
    K = 4000  # few tiles for 132 SMs in every case: split several ways
    A, B, C0 = rand(rng, M, K), rand(rng, K, N), rand(rng, M, N)
    A[5, 7] = np.inf
    A[M * 17 // 30, 3000] = np.nan
    B[11, N * 40 // 260] = -np.inf
    B[9, :] = 0.0
    A[M * 23 // 30, 9] = np.inf  # meets the zero row of B: that row of C is NaN
    A[M // 3, 2500] = np.float32(3.4028e38)  # finite, but its TF32 big part is not
    C = C0.copy()
    fastgemm.sgemm(A, np.ascontiguousarray(B.T) if tb else B, C, alpha=alpha, beta=beta, trans_b=tb, kernel=name,
                   backend="cuda")
    ref = ieee_reference(A, B, C0, alpha, beta, False, False)
    # In float32, row M / 3's alpha-scaled sums beyond FLT_MAX are +-Inf: compare the
    # patterns of the reference as a float32 result would hold it.
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    for test, what in ((np.isnan, "NaN"), (np.isposinf, "+Inf"), (np.isneginf, "-Inf")):
        assert np.array_equal(test(C), test(ref32)), f"{what} pattern differs"
    finite = np.isfinite(ref32)
    assert_matches(C[finite], ref[finite], "fp32x3", K, "fp32x3 split-K around non-finite inputs")


# (M, N, K): one small side (1 to 64, with the 4 / 8 / 16 tile boundaries), the other large
# or ragged, K from 1 to many splits.
SKINNY_M = [(1, 1, 1), (1, 4099, 4096), (3, 1000, 517), (4, 4096, 1), (5, 257, 4099), (8, 1000, 3000),
            (12, 1001, 2052), (16, 4096, 4096), (17, 33, 65), (24, 2049, 1500), (32, 257, 1000), (33, 300, 700),
            (63, 2049, 3000), (64, 512, 20000), (2, 11, 100003)]


# The few-row wgmma tiles and the most rows (or columns) each takes. Their shapes: one or
# two tiles of rows, ragged everywhere, K from 1 to a split of many ways; and the same
# shapes transposed (few columns, many rows), which they compute as C^T.
FEW_ROWS = {"tf32_wgmma_64x128_splitk": 128, "fp32x3_wgmma_64x128_splitk": 128, "fp32x3_wgmma_32x128_splitk": 32,
            "fp32x3_wgmma_16x128_splitk": 16}
FEW_ROWS_SHAPES = [(1, 1, 1), (1, 4099, 4096), (7, 300, 3), (16, 4096, 4096), (17, 33, 65), (32, 257, 1000),
                   (33, 1500, 2000), (64, 1500, 2000), (65, 257, 95), (100, 2049, 777), (128, 131, 30000)]


def _skinny_shapes(name):
    if name in FEW_ROWS:
        most = FEW_ROWS[name]
        few = [s for s in FEW_ROWS_SHAPES if s[0] <= most]
        return few + [(n, m, k) for m, n, k in few if n > most]
    return SKINNY_M if name.endswith("skinny_m64") else [(n, m, k) for m, n, k in SKINNY_M]


SKINNY = ["skinny_m64", "skinny_n64", "fp32x3_skinny_m64", "fp32x3_skinny_n64"]


@needs_gpu
@pytest.mark.parametrize("name", SKINNY + sorted(FEW_ROWS))
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_skinny_shapes_and_transposes(rng, name, ta, tb):
    """Every transpose: both layouts of the big operand (rows along k, the x @ W^T case,
    and rows along the large dimension), beta != 0 and then poisoned C."""
    precision = KERNELS[name].precision
    for M, N, K in _skinny_shapes(name):
        A = rand(rng, K, M) if ta else rand(rng, M, K)
        B = rand(rng, N, K) if tb else rand(rng, K, N)
        C0 = rand(rng, M, N)
        C = C0.copy()
        what = f"{name} {M}x{N}x{K} ta={ta} tb={tb}"
        fastgemm.sgemm(A, B, C, alpha=0.5, beta=1.5, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
        assert_matches(C, reference(A, B, C0, 0.5, 1.5, ta, tb), precision, K, what)
        C = np.full((M, N), np.nan, dtype=np.float32)
        fastgemm.sgemm(A, B, C, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
        assert_matches(C, reference(A, B, None, 1.0, 0.0, ta, tb), precision, K, what + " poisoned")


@needs_gpu
@pytest.mark.parametrize("name", sorted(FEW_ROWS))
def test_few_row_wgmma_is_deterministic_and_refuses_many_rows(rng, name):
    """Same bits call after call, either way round; a problem with many rows and many
    columns is refused, naming the rule."""
    most = FEW_ROWS[name]
    for M, N in ((min(64, most), 700), (700, min(64, most))):
        A, B = rand(rng, M, 30000), rand(rng, 30000, N)
        first = fastgemm.sgemm(A, B, kernel=name, backend="cuda")
        for _ in range(2):
            np.testing.assert_array_equal(fastgemm.sgemm(A, B, kernel=name, backend="cuda"), first)
        assert_matches(first, reference(A, B), KERNELS[name].precision, 30000, f"{name} {M}x{N}")
    with pytest.raises(ConstraintError, match=f"M <= {most} or N <= {most}"):
        fastgemm.sgemm(rand(rng, most + 1, 8), rand(rng, 8, most + 1), kernel=name, backend="cuda")


@needs_gpu
@pytest.mark.parametrize("tb", [True, False])
def test_skinny_on_unaligned_device_rows(tb):
    """Device arrays as a framework hands them: W offset by one float and with an odd
    row pitch, so the big operand cannot be read in 16-byte loads (the scalar path)."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(11)
    M, N, K = 5, 1031, 777
    x = torch.rand((M, K), device="cuda", generator=g) * 2 - 1
    rows, cols = (N, K) if tb else (K, N)
    W = (torch.rand((rows, cols + 3), device="cuda", generator=g) * 2 - 1)[:, 1:cols + 1]
    C = torch.full((M, N), float("nan"), device="cuda")
    name = _fastgemm.cuda_sgemm("skinny_m64", M, N, K, x.data_ptr(), x.stride(0), W.data_ptr(), W.stride(0),
                                C.data_ptr(), C.stride(0), False, tb, 1.0, 0.0,
                                torch.cuda.current_stream().cuda_stream, C.device.index)
    torch.cuda.synchronize()
    assert name == "skinny_m64"
    ref = x.double() @ (W.double().t() if tb else W.double())
    assert_matches(C.cpu().numpy(), ref.cpu().numpy(), "fp32", K, f"unaligned W, trans_b={tb}")


@needs_gpu
@pytest.mark.parametrize("name,M,N", [("async_tma_64x256_splitk", 70, 300), ("async_tma_256x64_splitk", 300, 70),
                                      ("async_tma_128x256_splitk", 200, 300), ("async_tma_128x128_splitk", 200, 300)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("aligned", [True, False])
def test_split_ffma_tiles_read_device_operands_in_place_or_packed(name, M, N, ta, tb, aligned):
    """The split-K FFMA tiles read an operand stored with k contiguous (A untransposed, W
    of x @ W^T) straight from device memory when its rows start on 16 bytes, and through
    the transpose pass when they do not: both paths, every transpose, ragged tiles and a k
    range that is split."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(5)
    K = 4100

    def operand(rows, cols):
        pad = 0 if aligned else 1  # one float off a 16-byte boundary, and an odd row pitch
        pitch = (cols + 3) // 4 * 4 + 4 + pad
        return (torch.rand((rows, pitch), device="cuda", generator=g) * 2 - 1)[:, pad:cols + pad]

    A = operand(K, M) if ta else operand(M, K)
    B = operand(N, K) if tb else operand(K, N)
    C0 = torch.rand((M, N), device="cuda", generator=g)
    C = C0.clone()
    _fastgemm.cuda_sgemm(name, M, N, K, A.data_ptr(), A.stride(0), B.data_ptr(), B.stride(0), C.data_ptr(),
                         C.stride(0), ta, tb, -0.5, 2.0, torch.cuda.current_stream().cuda_stream, C.device.index)
    torch.cuda.synchronize()
    opa = A.double().t() if ta else A.double()
    opb = B.double().t() if tb else B.double()
    ref = -0.5 * (opa @ opb) + 2.0 * C0.double()
    assert_matches(C.cpu().numpy(), ref.cpu().numpy(), "fp32", K, f"{name} ta={ta} tb={tb} aligned={aligned}")


@needs_gpu
@pytest.mark.parametrize("name", ["skinny_m64", "skinny_n64"])
def test_skinny_gemv_layouts(name):
    """One vector against a matrix whose rows run along k goes to the GEMV kernel: rows
    that do or do not start on 16 bytes, a K that is not a multiple of 4 on aligned rows
    (the vector loads' tail), a vector with a stride or off a 16-byte boundary (copied
    to a buffer first), and few rows with a long K (split over blocks and summed in
    order: the same bits on every call)."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(5)

    def rand_t(rows, cols):
        return torch.rand((rows, cols), device="cuda", generator=g) * 2 - 1

    # (rows of the matrix L, K, its row pitch, the vector's stride and its offset in
    # floats from a 16-byte boundary, alpha, beta)
    cases = [(1031, 777, 778, 1, 0, 1.0, 0.0), (4099, 1001, 1004, 1, 1, 0.5, 1.5), (300, 4096, 4096, 3, 0, 1.0, 0.0),
             (40, 50000, 50000, 1, 0, -2.0, 0.25), (9, 3, 4, 2, 1, 1.0, 0.0)]
    for L, K, pitch, stride, offset, alpha, beta in cases:
        W = rand_t(L, pitch)[:, :K]  # rows along k
        v = rand_t(K * stride + offset, 1).reshape(-1)[offset:offset + K * stride:stride]  # the vector
        if name == "skinny_m64":  # C (1 x L) = v^T W^T: A is v stored K x 1 (trans_a), B = W^T
            M, N = 1, L
            args = (v.data_ptr(), stride, W.data_ptr(), pitch, True, True)
        else:  # C (L x 1) = W v: A = W, B is v stored K x 1
            M, N = L, 1
            args = (W.data_ptr(), pitch, v.data_ptr(), stride, False, False)
        C0 = rand_t(M, N)
        ref = alpha * (W.double() @ v.double()).reshape(M, N) + beta * C0.double()
        results = []
        for _ in range(2):
            C = C0.clone() if beta != 0.0 else torch.full((M, N), float("nan"), device="cuda")
            used = _fastgemm.cuda_sgemm(name, M, N, K, args[0], args[1], args[2], args[3], C.data_ptr(), C.stride(0),
                                        args[4], args[5], alpha, beta, torch.cuda.current_stream().cuda_stream,
                                        C.device.index)
            torch.cuda.synchronize()
            assert used == name
            results.append(C.cpu().numpy())
        np.testing.assert_array_equal(results[0], results[1])
        what = f"{name} L={L} K={K} pitch={pitch} stride={stride} offset={offset}"
        assert_matches(results[0], ref.cpu().numpy(), "fp32", K, what)


SMALL_TILE = ["small_tile_32x32", "small_tile_64x64"]


@needs_gpu
@pytest.mark.parametrize("name", SMALL_TILE)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_small_tile_shapes_and_transposes(rng, name, ta, tb):
    """Edges of both tiles in every dimension (1, primes, one past a tile, the 1024 cap),
    K shorter than one step and K of many steps, beta != 0 and then poisoned C."""
    for M, N, K in [(1, 1, 1), (33, 65, 129), (1024, 1024, 17), (97, 1, 5003), (31, 1023, 64), (257, 511, 15)]:
        A = rand(rng, K, M) if ta else rand(rng, M, K)
        B = rand(rng, N, K) if tb else rand(rng, K, N)
        C0 = rand(rng, M, N)
        C = C0.copy()
        what = f"{name} {M}x{N}x{K} ta={ta} tb={tb}"
        fastgemm.sgemm(A, B, C, alpha=-0.75, beta=1.5, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
        assert_matches(C, reference(A, B, C0, -0.75, 1.5, ta, tb), "fp32", K, what)
        C = np.full((M, N), np.nan, dtype=np.float32)
        fastgemm.sgemm(A, B, C, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
        assert_matches(C, reference(A, B, None, 1.0, 0.0, ta, tb), "fp32", K, what + " poisoned")


@needs_gpu
@pytest.mark.parametrize("name", SMALL_TILE)
@pytest.mark.parametrize("ta,tb", [(False, True), (True, False)])
def test_small_tile_on_unaligned_device_views(name, ta, tb):
    """Device arrays offset by one float with odd row pitches (C too): the loads and
    stores are scalar and bounds-checked, so no alignment is assumed anywhere."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(5)
    M, N, K = 203, 301, 397
    view = lambda r, c: (torch.rand((r, c + 3), device="cuda", generator=g) * 2 - 1)[:, 1:c + 1]  # noqa: E731
    A = view(K, M) if ta else view(M, K)
    B = view(N, K) if tb else view(K, N)
    C = torch.full((M, N + 3), float("nan"), device="cuda")[:, 1:N + 1]
    got = _fastgemm.cuda_sgemm(name, M, N, K, A.data_ptr(), A.stride(0), B.data_ptr(), B.stride(0), C.data_ptr(),
                               C.stride(0), ta, tb, 1.0, 0.0, torch.cuda.current_stream().cuda_stream, C.device.index)
    torch.cuda.synchronize()
    assert got == name
    ref = (A.double().t() if ta else A.double()) @ (B.double().t() if tb else B.double())
    assert_matches(C.cpu().numpy(), ref.cpu().numpy(), "fp32", K, f"{name} unaligned views ta={ta} tb={tb}")


@needs_gpu
def test_timing_off_takes_the_small_tile_for_small_problems_only(tmp_path):
    """FASTGEMM_AUTOTUNE=0: the backend's rule decides, and the answer is kept per class.
    The Ozaki rung only from 4096^2 outputs and K = 4096 on (where it beats fp32x3)."""
    code = (
        "import numpy as np, fastgemm\n"
        "shapes = [(256, 256, 256), (300, 200, 64), (2048, 2048, 256), (16, 4096, 512), (2048, 2048, 4096),"
        " (4096, 4096, 4096)]\n"
        "for M, N, K in shapes:\n"
        "    C = fastgemm.sgemm(np.ones((M, K), np.float32), np.ones((K, N), np.float32), backend='cuda')\n"
        "    assert (abs(C - K) <= K * 2.0 ** -20).all(), (M, N, K)\n"
        "t = fastgemm.autotune.table()\n"
        "print(*(t['cuda|fp32|nn|beta0|' + c] for c in ('256x256x256', '512x256x64', '2048x2048x256',"
        " '16x4096x512', '2048x2048x4096', '4096x4096x4096')))\n")
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path), FASTGEMM_AUTOTUNE="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    small, small_odd, big, skinny, mid_k, large = out.stdout.split()
    assert small == small_odd == "small_tile_32x32"
    assert not big.startswith("small_tile") and skinny == "skinny_m64", out.stdout
    assert not mid_k.startswith("ozaki"), out.stdout
    if _sm90():  # elsewhere the rung cannot launch and is no candidate
        assert large == OZAKI, out.stdout


# --- host arrays: the single-call path (direct_call.hpp) ----------------------------

@needs_gpu
def test_host_arrays_race_the_gpu_kernel_its_device_policy_picks(tmp_path):
    """numpy arrays with kernel="auto": the cuda backend enters the race against the CPU
    kernels with one kernel, the one its device-time policy picks for the problem (what
    torch tensors of the shape get), not every cuda kernel timed through the transfers."""
    code = ("import json, numpy as np, fastgemm\n"
            "rng = np.random.default_rng(3)\n"
            "A = rng.random((1536, 768), dtype=np.float32)\n"
            "B = rng.random((768, 1024), dtype=np.float32)\n"
            "C = fastgemm.sgemm(A, B)\n"
            "err = float(np.abs(C - A.astype(np.float64) @ B).max())\n"
            "print(json.dumps(dict(records=fastgemm.autotune.records(), table=fastgemm.autotune.table(), err=err)))\n")
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    auto = [r for r in got["records"] if r["shape_class"] == "auto|fp32|nn|beta0|2048x1024x1024"]
    assert len(auto) == 1, got["records"]
    gpu = [name for name in auto[0]["seconds"] if name.startswith("cuda/")]
    assert gpu == ["cuda/" + got["table"]["cuda|fp32|nn|beta0|2048x1024x1024"]], auto[0]
    assert any(name.startswith("cpu/") for name in auto[0]["seconds"]), auto[0]
    assert got["err"] < 1e-3 * 768

@needs_gpu
@pytest.mark.parametrize("name", ["cublas", "async_tma_128x256", "fp32x3_wgmma_128x128", "tf32_wgmma_256x128",
                                  "smem_tiling_32x32", "ozaki_int8_128x256"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_host_call_in_row_blocks(rng, name, ta, tb):
    """Over 16 MB of operands and at least 1024 rows: the host call cuts C into row blocks
    (768 + 768 + 764 here) whose uploads, GEMMs and downloads overlap. Every transpose,
    beta != 0 with a C whose rows are padded (ldc > N): the gaps must stay untouched."""
    if name == "cublas":
        _skip_without_cublas()
    M, N, K = 2300, 1500, 700
    A = rand(rng, K, M) if ta else rand(rng, M, K)
    B = rand(rng, N, K) if tb else rand(rng, K, N)
    buf = rand(rng, M, N + 5)
    C = buf[:, :N]
    C0 = C.copy()
    gaps = buf[:, N:].copy()
    fastgemm.sgemm(A, B, C, alpha=0.5, beta=-1.25, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
    assert_matches(C, reference(A, B, C0, 0.5, -1.25, ta, tb), KERNELS[name].precision, K, f"{name} {ta} {tb}")
    np.testing.assert_array_equal(buf[:, N:], gaps)
    C = np.full((M, N), np.nan, dtype=np.float32)  # beta = 0: C is not read
    fastgemm.sgemm(A, B, C, trans_a=ta, trans_b=tb, kernel=name, backend="cuda")
    assert_matches(C, reference(A, B, None, 1.0, 0.0, ta, tb), KERNELS[name].precision, K, f"{name} poisoned")


@needs_gpu
def test_host_call_rows_longer_than_a_staging_slot(rng):
    """A row of 2.1 M floats (8.4 MB) is longer than the largest pinned slot (8 MB): the
    staging copies cut rows into runs."""
    M, N, K = 3, 5, 2_100_000
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)
    fastgemm.sgemm(A, B, C, kernel="smem_tiling_32x32", backend="cuda")
    assert_matches(C, reference(A, B), "fp32", K, "long rows")


@needs_gpu
def test_host_call_buffers_are_reused_across_sizes(rng):
    """The staging ring and the device copies grow and are reused: a small call after a
    large one, and the other way round, each against float64 into poisoned C."""
    for M, N, K in [(7, 9, 5), (1500, 1700, 900), (33, 17, 65), (2100, 300, 4100), (1, 1, 1)]:
        A, B = rand(rng, M, K), rand(rng, K, N)
        C = np.full((M, N), np.nan, dtype=np.float32)
        fastgemm.sgemm(A, B, C, kernel="async_tma_128x128", backend="cuda")
        assert_matches(C, reference(A, B), "fp32", K, f"{M}x{N}x{K}")


@needs_gpu
def test_host_call_after_a_refused_call(rng):
    """A call refused for its shape leaves the next call of the same kernel working."""
    A, B = rand(rng, 256, 64), rand(rng, 64, 256)
    with pytest.raises(ConstraintError):
        fastgemm.sgemm(rand(rng, 250, 64), B, kernel="warptiling_128x128", backend="cuda")
    C = fastgemm.sgemm(A, B, kernel="warptiling_128x128", backend="cuda")
    assert_matches(C, reference(A, B), "fp32", 64, "after a refused call")


# --- device arrays -----------------------------------------------------------------

def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA GPU")
    return torch


@needs_gpu
@pytest.mark.parametrize("kernel", ["auto", "smem_tiling_32x32", "tf32_mma_sync_128x128", "cublas"])
def test_torch_tensors_in_place_no_copy(kernel):
    torch = _torch()
    if kernel == "cublas":
        _skip_without_cublas()
    g = torch.Generator(device="cuda").manual_seed(7)
    A = torch.rand((129, 65), device="cuda", generator=g) * 2 - 1
    B = torch.rand((65, 257), device="cuda", generator=g) * 2 - 1
    C = torch.full((129, 257), float("nan"), device="cuda")
    ptr = C.data_ptr()
    out = fastgemm.sgemm(A, B, C, kernel=kernel)
    assert out is C and C.data_ptr() == ptr
    ref = A.double() @ B.double()
    prec = "tf32" if "tf32" in kernel else "fp32x3"
    assert_matches(C.cpu().numpy(), ref.cpu().numpy(), prec, 65, kernel)


@needs_gpu
@pytest.mark.parametrize("alpha,K,beta", [(0.0, 33, 0.0), (0.0, 33, 1.0), (0.0, 33, -2.5), (1.5, 0, 0.5)])
def test_device_quick_return_reads_neither_a_nor_b(alpha, K, beta):
    """alpha == 0 or K == 0 on device arrays: C = beta * C, NaN in A and B never reaches it."""
    torch = _torch()
    A = torch.full((40, K), float("nan"), device="cuda")
    B = torch.full((K, 50), float("inf"), device="cuda")
    C0 = torch.rand((40, 50), device="cuda")
    C = C0.clone() if beta != 0.0 else torch.full((40, 50), float("nan"), device="cuda")
    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta)
    torch.cuda.synchronize()
    expected = torch.zeros_like(C0) if beta == 0.0 else C0 * beta
    assert torch.equal(C, expected)


@needs_gpu
def test_torch_new_output_layouts_and_streams():
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(3)
    A = torch.rand((64, 96), device="cuda", generator=g) * 2 - 1
    Bt = torch.rand((80, 96), device="cuda", generator=g) * 2 - 1
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        out = fastgemm.sgemm(A, Bt.t())
    side.synchronize()
    assert isinstance(out, torch.Tensor) and out.is_cuda and out.shape == (64, 80)
    ref = A.double() @ Bt.double().t()
    assert_matches(out.cpu().numpy(), ref.cpu().numpy(), "fp32x3", 96, "torch stream")
    # Column-major C (a transposed view) is written in place too.
    Ct = torch.full((80, 64), float("nan"), device="cuda").t()
    fastgemm.sgemm(A, Bt, Ct, trans_b=True)
    assert_matches(Ct.cpu().numpy(), ref.cpu().numpy(), "fp32x3", 96, "column-major C")


@needs_gpu
def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    rs = cupy.random.RandomState(5)
    A = rs.uniform(-1, 1, (77, 50)).astype(cupy.float32)
    B = rs.uniform(-1, 1, (50, 33)).astype(cupy.float32)
    out = fastgemm.sgemm(A, B)
    assert isinstance(out, cupy.ndarray)
    ref = cupy.asnumpy(A).astype(np.float64) @ cupy.asnumpy(B).astype(np.float64)
    assert_matches(cupy.asnumpy(out), ref, "fp32x3", 50, "cupy")


@needs_gpu
def test_mixed_host_and_device_is_refused():
    torch = _torch()
    with pytest.raises(TypeError):
        fastgemm.sgemm(torch.ones((4, 4), device="cuda"), np.ones((4, 4), np.float32))


# --- repeated calls replayed as CUDA graphs (src/cuda/repeated_calls.hpp) -------------

REPLAYED = ["cublas", "small_tile_32x32", "fp32x3_wgmma_128x128", "fp32x3_wgmma_128x128_splitk",
            "async_tma_128x256_splitk", "skinny_m64"]


def _torch_operands(torch, g, M, N, K):
    A = torch.rand((M, K), device="cuda", generator=g) * 2 - 1
    B = torch.rand((K, N), device="cuda", generator=g) * 2 - 1
    return A, B


@needs_gpu
@pytest.mark.parametrize("kernel", REPLAYED)
def test_repeated_calls_compute_the_values_behind_the_same_pointers(kernel):
    """The third and later identical calls run from a graph: each must read what the
    arrays hold when it runs (new values written in place, on the stream, between calls),
    and honour new scalars and a new output, which are new kinds of call."""
    torch = _torch()
    if kernel == "cublas":
        _skip_without_cublas()
    g = torch.Generator(device="cuda").manual_seed(17)
    M, N, K = (40, 520, 700) if kernel == "skinny_m64" else (300, 260, 700)
    A, B = _torch_operands(torch, g, M, N, K)
    C = torch.full((M, N), float("nan"), device="cuda")
    prec = "fp32x3" if "fp32x3" in kernel else "fp32"
    for i in range(6):
        A.copy_(torch.rand((M, K), device="cuda", generator=g) * 2 - 1)  # new values, same address
        if i == 4:
            B.mul_(-3.0)
        C.fill_(float("nan"))
        fastgemm.sgemm(A, B, C, kernel=kernel)
        ref = A.double() @ B.double()
        torch.cuda.synchronize()
        assert_matches(C.cpu().numpy(), ref.cpu().numpy(), prec, K, f"{kernel} call {i}")
    C0 = torch.rand((M, N), device="cuda", generator=g)
    for i in range(4):
        C = C0.clone()
        fastgemm.sgemm(A, B, C, alpha=0.5, beta=-2.0 if i < 3 else 1.5, kernel=kernel)
        ref = 0.5 * (A.double() @ B.double()) + (-2.0 if i < 3 else 1.5) * C0.double()
        torch.cuda.synchronize()
        assert_matches(C.cpu().numpy(), ref.cpu().numpy(), prec, K, f"{kernel} alpha/beta call {i}")


@needs_gpu
def test_repeated_calls_survive_a_workspace_that_grows_between_them():
    """A larger problem replaces the workspace's buffers; graphs recorded with the old
    ones must never run again."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(19)
    small = _torch_operands(torch, g, 200, 150, 3000)
    big = _torch_operands(torch, g, 700, 900, 20000)
    name = "fp32x3_wgmma_128x128_splitk"
    for round_ in range(2):
        for A, B in (small, small, small, big, small, small):
            C = torch.full((A.shape[0], B.shape[1]), float("nan"), device="cuda")
            fastgemm.sgemm(A, B, C, kernel=name)
            ref = A.double() @ B.double()
            torch.cuda.synchronize()
            assert_matches(C.cpu().numpy(), ref.cpu().numpy(), "fp32x3", A.shape[1], f"{name} round {round_}")
        big = _torch_operands(torch, g, 1500, 1100, 40000)  # grows again in the second round


@needs_gpu
def test_repeated_calls_on_two_streams_share_the_workspace_safely():
    """Replays on two streams at once, both through the one per-device workspace (A's
    small parts, partial tiles, counters): each stream's product must be its own."""
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(23)
    B = torch.rand((512, 256), device="cuda", generator=g) * 2 - 1
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    As = [torch.empty((256, 512), device="cuda") for _ in streams]
    outs = [torch.empty((256, 256), device="cuda") for _ in streams]
    torch.cuda.synchronize()
    for i in range(6):
        for s, A, C in zip(streams, As, outs):
            with torch.cuda.stream(s):
                A.uniform_(-1.0, 1.0)  # new values, queued on s before the product
                fastgemm.sgemm(A, B, C, kernel="fp32x3_wgmma_128x128_splitk")
        torch.cuda.synchronize()
        for k, (A, C) in enumerate(zip(As, outs)):
            ref = (A.double() @ B.double()).cpu().numpy()
            assert_matches(C.cpu().numpy(), ref, "fp32x3", 512, f"stream {k}, call {i}")


@needs_gpu
def test_graphs_can_be_turned_off():
    code = ("import torch, fastgemm\n"
            "A = torch.rand((96, 80), device='cuda'); B = torch.rand((80, 70), device='cuda')\n"
            "C = torch.empty((96, 70), device='cuda')\n"
            "for _ in range(4): fastgemm.sgemm(A, B, C, kernel='small_tile_32x32')\n"
            "torch.cuda.synchronize()\n"
            "assert torch.allclose(C, A @ B, atol=1e-4)\n"
            "print('ok')\n")
    _torch()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "FASTGEMM_CUDA_GRAPHS": "off"})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

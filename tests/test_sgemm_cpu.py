"""Every kernel of the cpu backend against a float64 reference, on square,
rectangular and ragged shapes, with alpha/beta and transposes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastgemm
from conftest import assert_matches, rand, reference

CPU_KERNELS = [k.name for k in fastgemm.kernels("cpu")]
PRECISION = {k.name: k.precision for k in fastgemm.kernels("cpu")}
INFO = {k.name: k for k in fastgemm.kernels("cpu")}


def refuses(kernel, A, B, C, **kw):
    """True (after checking the refusal) when `kernel`'s constraints exclude the problem:
    such a call must raise ConstraintError and leave C untouched."""
    M, N = C.shape
    K = A.shape[0] if kw.get("trans_a") else A.shape[1]
    if INFO[kernel].accepts(M, N, K, kw.get("trans_a", False), kw.get("trans_b", False),
                            kw.get("alpha", 1.0), kw.get("beta", 0.0)):
        return False
    before = C.copy()
    with pytest.raises(fastgemm.ConstraintError, match=kernel):
        fastgemm.sgemm(A, B, C, kernel=kernel, backend="cpu", **kw)
    np.testing.assert_array_equal(C, before)
    return True

# 1, primes and non-multiples of every tile size (8..256) and of the loop unrolls.
SHAPES = [(1, 1, 1), (7, 7, 7), (33, 17, 9), (1, 100, 57), (100, 1, 33), (64, 64, 64), (257, 33, 100),
          (31, 129, 263)]


def test_cpu_ladder_is_complete():
    names = set(CPU_KERNELS)
    orders = {"ijk", "ikj", "jik", "jki", "kij", "kji"}
    tiles = {f"tiled_ikj_{bs}" for bs in (8, 16, 32, 64, 128, 256)}
    assert orders | tiles | {"transposed_b", "transposed_b_split4", "ikj_threads"} <= names
    assert any(k.baseline for k in fastgemm.kernels("cpu")), "no BLAS baseline registered"


@pytest.mark.parametrize("kernel", CPU_KERNELS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kernel_matches_float64(kernel, shape, rng):
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)  # poisoned: beta = 0 must not read it
    if refuses(kernel, A, B, C):
        return
    out = fastgemm.sgemm(A, B, C, kernel=kernel, backend="cpu")
    assert out is C
    assert_matches(C, reference(A, B), PRECISION[kernel], K, f"{kernel} {shape}")


@pytest.mark.parametrize("kernel", CPU_KERNELS)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 1.0), (2.0, -1.5)])
def test_kernel_transposes_and_scalars(kernel, trans_a, trans_b, alpha, beta, rng):
    M, N, K = 37, 21, 45
    A = rand(rng, K, M) if trans_a else rand(rng, M, K)
    B = rand(rng, N, K) if trans_b else rand(rng, K, N)
    C0 = rand(rng, M, N)
    C = C0.copy()
    if refuses(kernel, A, B, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b):
        return
    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                   kernel=kernel, backend="cpu")
    ref = reference(A, B, C0, alpha, beta, trans_a, trans_b)
    assert_matches(C, ref, PRECISION[kernel], K, f"{kernel} ta={trans_a} tb={trans_b} a={alpha} b={beta}")


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("M,N,K", [(1, 300, 77), (300, 1, 77), (1, 1, 50), (1, 5, 0)])
def test_blas_baseline_matrix_times_vector(trans_a, trans_b, M, N, K, rng):
    """A matrix times a vector goes to the BLAS's sgemv: every transpose, operands whose
    rows are longer than the matrix (so the vector is read with a stride), alpha and beta,
    a poisoned C with beta == 0, and K == 0 (C = beta C, which sgemv alone would not do)."""
    if "openblas" not in CPU_KERNELS:
        pytest.skip("no BLAS baseline in this build")

    def stored(rows, cols):  # a view whose rows are 3 floats longer than `cols`
        return rand(rng, rows, cols + 3)[:, :cols]

    A = stored(K, M) if trans_a else stored(M, K)
    B = stored(N, K) if trans_b else stored(K, N)
    for alpha, beta in ((1.0, 0.0), (-1.5, 0.5)):
        C0 = rand(rng, M, N)
        C = np.full((M, N), np.nan, dtype=np.float32) if beta == 0.0 else C0.copy()
        fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, kernel="openblas",
                       backend="cpu")
        ref = reference(np.ascontiguousarray(A), np.ascontiguousarray(B), C0 if beta else None, alpha, beta,
                        trans_a, trans_b)
        assert_matches(C, ref, "fp32", K, f"openblas {M}x{N}x{K} ta={trans_a} tb={trans_b} beta={beta}")


@pytest.mark.parametrize("kernel", ["ijk", "ikj", "transposed_b", "tiled_ikj_32", "ikj_threads", "openblas"])
def test_beta_zero_ignores_nan_in_c(kernel, rng):
    if kernel not in CPU_KERNELS:
        pytest.skip(f"{kernel} is not built here (no BLAS baseline in this build)")
    A, B = rand(rng, 9, 5), rand(rng, 5, 11)
    C = np.full((9, 11), np.nan, dtype=np.float32)
    fastgemm.sgemm(A, B, C, beta=0.0, kernel=kernel, backend="cpu")
    assert np.all(np.isfinite(C))


def test_identical_kernels_agree_bitwise(rng):
    """The strict increasing-k loops compute every output with the same operations."""
    A, B = rand(rng, 65, 70), rand(rng, 70, 33)
    outs = [fastgemm.sgemm(A, B, kernel=k, backend="cpu") for k in ("ijk", "ikj", "kij", "tiled_ikj_16")]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_ikj_threads_deterministic_for_thread_count(rng):
    A, B = rand(rng, 200, 90), rand(rng, 90, 70)
    saved = fastgemm.get_num_threads()
    try:
        fastgemm.set_num_threads(2)
        first = fastgemm.sgemm(A, B, kernel="ikj_threads", backend="cpu")
        again = fastgemm.sgemm(A, B, kernel="ikj_threads", backend="cpu")
        fastgemm.set_num_threads(1)
        single = fastgemm.sgemm(A, B, kernel="ikj_threads", backend="cpu")
    finally:
        fastgemm.set_num_threads(saved)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, single)  # rows are independent: same sums either way


def test_auto_takes_sums_that_only_alpha_brings_into_range(tmp_path):
    """Terms of 1e60 (1e30 x 1e30) with alpha = 1e-30: the exact result, 2e31, fits in
    FP32, but every kernel that sums op(A) op(B) before scaling it overflows, as BLAS does.
    auto's check of its candidates must not call that a wrong result (it raised
    KernelError: every candidate failed); the result is 2e31 or infinite, never NaN."""
    code = textwrap.dedent("""
        import numpy as np, fastgemm
        A = np.full((2, 20), 1e30, np.float32); B = np.full((20, 2), 1e30, np.float32)
        C = fastgemm.sgemm(A, B, alpha=1e-30, backend="cpu")
        ok = np.all(np.isinf(C) & (C > 0) | (np.abs(C - 2e31) <= 2e31 * 1e-5))
        print(bool(ok))
    """)
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path))  # a class tuned afresh
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["True"], out.stdout + out.stderr

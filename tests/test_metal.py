"""The metal backend (Apple GPUs) and the Python-side Apple baselines.

GPU tests run only where fastgemm.backends() says metal is available, and each kernel only
where this GPU can run it: the device/family probe (fastgemm.metal.kernel_unavailable_reason,
then BackendUnavailableError from the run itself) turns "not on this GPU" into a skip with the
reason. GitHub's hosted macOS runners expose a paravirtual Apple5-family GPU without MPS, so
there the simple kernels run and the SIMD-group, tensor-op and MPS ones skip.

The tests at the top run everywhere: on Linux they check that the backend is listed as
unavailable with a reason, and that the helpers say so instead of failing.
"""

import numpy as np
import pytest

import fastgemm
from fastgemm import metal, mlx_baseline
from conftest import assert_matches, rand, reference

METAL_REASON = metal.unavailable_reason()
needs_metal = pytest.mark.skipif(METAL_REASON is not None,
                                 reason=f"metal backend unavailable here: {METAL_REASON}")

METAL_KERNELS = [k for k in fastgemm.kernels("metal")] if METAL_REASON is None else []
LADDER = [k.name for k in METAL_KERNELS if not k.baseline]
PRECISION = {k.name: k.precision for k in METAL_KERNELS}
INFO = {k.name: k for k in METAL_KERNELS}

# Edge shapes (1, primes, non-multiples of every tile) and tile multiples up to the largest
# constraint in the ladder (tensorops_sync: M % 128, N % 128, K % 1024).
SHAPES = [(1, 1, 1), (7, 13, 5), (33, 17, 9), (65, 130, 47), (64, 64, 64), (128, 128, 128),
          (256, 128, 256), (128, 128, 1024), (256, 256, 1024)]


def shapes_for(kernel, limit=3, **kw):
    return [s for s in SHAPES if INFO[kernel].accepts(*s, **kw)][:limit]


def run_or_skip(kernel, A, B, C, **kw):
    """sgemm on the metal backend; a kernel this GPU cannot run is a skip with the reason."""
    why = metal.kernel_unavailable_reason(kernel)
    if why:
        pytest.skip(f"{kernel} not runnable on this GPU: {why}")
    try:
        return fastgemm.sgemm(A, B, C, kernel=kernel, backend="metal", **kw)
    except fastgemm.BackendUnavailableError as e:
        pytest.skip(f"{kernel} not runnable on this GPU: {e}")


# --- everywhere -------------------------------------------------------------------------------

def test_metal_backend_is_listed_with_a_reason_when_unavailable():
    s = metal.status()
    assert s.name == "metal"
    if not s.available:
        assert s.reason, "an unavailable backend must say why"
        assert metal.kernel_unavailable_reason("naive").startswith("metal backend unavailable")
        with pytest.raises(fastgemm.BackendUnavailableError):
            fastgemm.sgemm(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                           kernel="naive", backend="metal")
    else:
        assert s.device


def test_mlx_baseline_reports_why_when_missing():
    why = mlx_baseline.unavailable_reason()
    assert (why is None) == mlx_baseline.available()
    if why is not None:
        assert "mlx" in why


@pytest.mark.skipif(not mlx_baseline.available(), reason="mlx is not installed")
def test_mlx_baseline_times_and_verifies():
    r = mlx_baseline.benchmark_mlx(67, 33, 45, warmup=1, iters=2)
    assert (r.kernel, r.backend, (r.M, r.N, r.K)) == ("mlx", "mlx", (67, 33, 45))
    assert len(r.host_times) == 2 and all(np.isfinite(r.host_times))
    assert r.extra["timing"] == mlx_baseline.TIMING_LABEL
    assert r.verified and r.passed, f"mlx rel_err {r.rel_err} > {r.tolerance}"


# --- on an Apple GPU --------------------------------------------------------------------------

@needs_metal
def test_metal_ladder_matches_metal_emu():
    """Both Metal backends read one ladder table: same kernel names, same constraints."""
    emu = {k.name: k for k in fastgemm.kernels("metal-emu")} if any(
        b.name == "metal-emu" and b.available for b in fastgemm.backends()) else None
    assert "mps" in INFO and INFO["mps"].baseline
    assert LADDER, "no metal ladder kernels registered"
    if emu is not None:
        assert set(LADDER) == {n for n, k in emu.items() if not k.baseline}
        for name in LADDER:
            assert INFO[name].constraints == emu[name].constraints, name


@needs_metal
@pytest.mark.parametrize("kernel", LADDER + ["mps"])
def test_kernel_matches_float64(kernel, rng):
    shapes = shapes_for(kernel, limit=4)
    assert shapes, f"no test shape satisfies {INFO[kernel].constraints}"
    for M, N, K in shapes:
        A, B = rand(rng, M, K), rand(rng, K, N)
        C = np.full((M, N), np.nan, dtype=np.float32)  # poisoned: beta = 0 must not read it
        run_or_skip(kernel, A, B, C)
        assert_matches(C, reference(A, B), PRECISION[kernel], K, f"{kernel} {(M, N, K)}")


@needs_metal
@pytest.mark.parametrize("kernel", LADDER + ["mps"])
@pytest.mark.parametrize("trans_a,trans_b,alpha,beta",
                         [(True, False, 1.0, 0.0), (False, True, -0.5, 1.0), (True, True, 2.0, -1.5)])
def test_kernel_transposes_and_scalars(kernel, trans_a, trans_b, alpha, beta, rng):
    kw = dict(trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta)
    shapes = shapes_for(kernel, limit=1, **kw)
    if not shapes:
        pytest.skip(f"{kernel} does not take {kw} (constraints {INFO[kernel].constraints})")
    M, N, K = shapes[0]
    A = rand(rng, K, M) if trans_a else rand(rng, M, K)
    B = rand(rng, N, K) if trans_b else rand(rng, K, N)
    C0 = rand(rng, M, N)
    C = C0.copy()
    run_or_skip(kernel, A, B, C, **kw)
    ref = reference(A, B, C0, alpha, beta, trans_a, trans_b)
    assert_matches(C, ref, PRECISION[kernel], K, f"{kernel} {kw}")


@needs_metal
@pytest.mark.parametrize("kernel", ["naive", "tiled_16", "mps"])
def test_zero_copy_and_copied_operands_agree(kernel, rng):
    """Page-aligned arrays (fastgemm.empty) are wrapped in place, others copied through the
    buffer pool; both paths, and strided views of C, give the same answer."""
    if kernel not in INFO:
        pytest.skip(f"{kernel} is not in this build's metal ladder")
    M, N, K = 70, 50, 30
    A, B = rand(rng, M, K), rand(rng, K, N)
    Aa, Ba = fastgemm.empty((M, K)), fastgemm.empty((K, N))
    Aa[...], Ba[...] = A, B
    Ca = fastgemm.empty((M, N))
    Ca[...] = np.nan
    run_or_skip(kernel, Aa, Ba, Ca)
    big = np.full((M, N + 9), 7.0, dtype=np.float32)  # strided C: the gap must survive
    run_or_skip(kernel, A, B, big[:, :N])
    ref = reference(A, B)
    assert_matches(Ca, ref, PRECISION[kernel], K, f"{kernel} zero-copy")
    assert_matches(big[:, :N], ref, PRECISION[kernel], K, f"{kernel} copied")
    assert np.all(big[:, N:] == 7.0), "elements between rows of C were overwritten"


@needs_metal
@pytest.mark.parametrize("kernel", LADDER)
def test_kernel_agrees_with_mps(kernel):
    """Seed 004's check: |C - C_MPS| <= 1e-3 + 1e-3 |C_MPS| on the same inputs."""
    if metal.kernel_unavailable_reason("mps"):
        pytest.skip(f"MPS not runnable on this GPU: {metal.kernel_unavailable_reason('mps')}")
    shapes = shapes_for(kernel, limit=10)
    M, N, K = shapes[-1]  # the largest accepted shape
    why = metal.kernel_unavailable_reason(kernel)
    if why:
        pytest.skip(f"{kernel} not runnable on this GPU: {why}")
    try:
        r = metal.verify_against_mps(kernel, M, N, K)
    except fastgemm.BackendUnavailableError as e:
        pytest.skip(f"{kernel} not runnable on this GPU: {e}")
    assert r.passed, (f"{kernel} {(M, N, K)}: max |C - C_MPS| {r.max_abs_diff_vs_mps:.3e} exceeds "
                      f"the tolerance by {r.worst_excess:.3e}")
    tol = fastgemm._fastgemm.tolerance_for(PRECISION[kernel], K)
    assert r.rel_err_kernel <= tol and r.rel_err_mps <= tol


@needs_metal
def test_native_benchmark_times_gpu_and_host():
    """The core's Bench runs metal kernels: verification passes and every iteration carries
    a GPU time (GPUEndTime - GPUStartTime) and a host time."""
    kernel = "naive" if "naive" in INFO else LADDER[0]
    why = metal.kernel_unavailable_reason(kernel)
    if why:
        pytest.skip(f"{kernel} not runnable on this GPU: {why}")
    r = fastgemm.benchmark(kernel, 96, 80, 72, backend="metal", warmup=1, iters=3)
    assert r.verified and r.passed
    assert len(r.device_times) == 3 and all(t > 0 and np.isfinite(t) for t in r.device_times)
    assert all(np.isfinite(t) for t in r.host_times)


@needs_metal
def test_unrunnable_kernels_are_reported_not_crashed():
    """Every kernel the status marks unavailable raises BackendUnavailableError with that
    reason when run, and never takes the process down."""
    props = dict(metal.status().properties)
    marked = [k[len("kernel "):] for k in props if k.startswith("kernel ")]
    for name in marked:
        shapes = shapes_for(name, limit=1)
        if not shapes:
            continue
        M, N, K = shapes[0]
        A, B = np.ones((M, K), np.float32), np.ones((K, N), np.float32)
        with pytest.raises(fastgemm.BackendUnavailableError):
            fastgemm.sgemm(A, B, kernel=name, backend="metal")

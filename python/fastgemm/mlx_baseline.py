"""MLX's matmul as a third Apple-GPU baseline, timed from Python.

MLX is lazy: ``a @ b`` only records the product and ``mx.eval`` runs it and waits, so each
timed iteration is ``mx.eval(a @ b)`` on the wall clock. That includes Python dispatch and
MLX's graph building, which the native baselines (mps, accelerate) do not pay: the result is
labelled ``timing = "host wall clock around mx.eval, includes Python dispatch"`` and its
device times are those host times (MLX exposes no GPU timestamps). Seed 004 quotes MLX at
3332 GFLOP/s against MPS's 3365 on an M5 at 4096^3 (the seed's numbers, not ours).

    from fastgemm.mlx_baseline import benchmark_mlx
    r = benchmark_mlx(2048)              # BenchResult(kernel="mlx", backend="mlx", ...)
    print(r.gflops, r.extra["timing"])
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np

from .api import BenchResult

__all__ = ["available", "unavailable_reason", "benchmark_mlx", "TIMING_LABEL"]

TIMING_LABEL = "host wall clock around mx.eval, includes Python dispatch"


def unavailable_reason() -> Optional[str]:
    """None when mlx imports, else why not."""
    try:
        import mlx.core  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        return f"mlx is not importable ({type(e).__name__}: {e}); pip install mlx (Apple silicon)"
    return None


def available() -> bool:
    return unavailable_reason() is None


def benchmark_mlx(M: int, N: Optional[int] = None, K: Optional[int] = None, *, warmup: int = 3,
                  iters: int = 10, seed: int = 0x5EED, verify: bool = True,
                  reference_rows: int = 64) -> BenchResult:
    """Times ``mx.eval(a @ b)`` on random float32 inputs in [-1, 1) on MLX's default device
    (the GPU on Apple silicon). Verification compares up to ``reference_rows`` rows with a
    float64 product, with the fp32 tolerance fastgemm's native verifier uses."""
    import mlx.core as mx

    from . import _fastgemm

    N = M if N is None else N
    K = M if K is None else K
    if iters < 1:
        raise ValueError("iters must be >= 1")
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1.0, 1.0, size=(M, K)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, size=(K, N)).astype(np.float32)
    a, b = mx.array(A), mx.array(B)
    mx.eval(a, b)  # inputs resident before timing

    times = []
    c = None
    for i in range(warmup + iters):
        start = time.perf_counter()
        c = a @ b
        mx.eval(c)
        elapsed = time.perf_counter() - start
        if i >= warmup:
            times.append(elapsed)

    C = np.asarray(c) if c is not None else np.zeros((M, N), np.float32)
    passed = max_abs = rel = tol = None
    if verify and M and N:
        rows = np.arange(M) if M <= reference_rows else \
            np.sort(rng.choice(M, size=reference_rows, replace=False))
        ref = A[rows].astype(np.float64) @ B.astype(np.float64)
        got = np.asarray(C[rows], dtype=np.float64)
        max_abs = float(np.max(np.abs(got - ref)))
        norm = float(np.linalg.norm(ref)) or 1.0
        rel = float(np.linalg.norm(got - ref)) / norm
        tol = _fastgemm.tolerance_for("fp32", max(K, 1))
        passed = bool(np.all(np.isfinite(got)) and rel <= tol)
    sample = C.reshape(-1)[:: max(1, C.size // 1024)] if C.size else C.reshape(-1)
    return BenchResult(
        kernel="mlx", backend="mlx", M=M, N=N, K=K,
        device_times=list(times), host_times=list(times), prep_times=[],
        threads=1, verified=bool(verify and M and N), passed=passed, max_abs_diff=max_abs,
        rel_err=rel, tolerance=tol, checksum=float(np.sum(sample, dtype=np.float64)),
        truncated=False, precision="fp32",
        extra={"timing": TIMING_LABEL, "mlx_device": str(mx.default_device()),
               "mlx_version": getattr(mx, "__version__", "?")},
    )

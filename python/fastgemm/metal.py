"""Apple-GPU helpers over the generic API: is the metal backend here, which ladder kernels
this GPU can run (and why not), and seed 004's check of a kernel against MPS.

Everything runs through :func:`fastgemm.sgemm` / :func:`fastgemm.benchmark` with
``backend="metal"``; the timing loops stay native. On a machine without the backend every
function here raises or returns the reason from :func:`fastgemm.backends`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from . import api
from .errors import BackendUnavailableError

__all__ = ["status", "unavailable_reason", "kernel_unavailable_reason", "verify_against_mps",
           "MpsComparison", "MPS_ATOL", "MPS_RTOL"]

# Seed 004's agreement check with MPS: |C - C_MPS| <= 1e-3 + 1e-3 * |C_MPS|, elementwise.
MPS_ATOL = 1e-3
MPS_RTOL = 1e-3


def status():
    """The metal backend's BackendStatus (``available``, ``reason``, ``device``, ``properties``)."""
    for b in api.backends():
        if b.name == "metal":
            return b
    raise BackendUnavailableError("this fastgemm has no metal backend entry")


def unavailable_reason() -> Optional[str]:
    """Why the metal backend cannot run here, or None when it can."""
    s = status()
    return None if s.available else (s.reason or "unavailable")


def kernel_unavailable_reason(kernel: str) -> Optional[str]:
    """Why this GPU cannot run ``kernel`` (GPU family, OS, MPS support), or None when the
    device-level checks pass. Pipeline limits are only known once the kernel is compiled:
    running it may still raise BackendUnavailableError with that reason."""
    why = unavailable_reason()
    if why:
        return f"metal backend unavailable: {why}"
    props: Dict[str, str] = dict(status().properties)
    text = props.get(f"kernel {kernel}")
    if text:
        return text.removeprefix("unavailable: ")
    return None


def _rand(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


@dataclass
class MpsComparison:
    """A kernel and MPS on the same inputs (seed 004's check) plus the float64 reference."""

    kernel: str
    M: int
    N: int
    K: int
    max_abs_diff_vs_mps: float
    worst_excess: float  # max(|C - C_MPS| - (atol + rtol*|C_MPS|)); <= 0 means agreement
    passed: bool  # every element within seed 004's tolerance of MPS
    rel_err_kernel: float  # ||C - ref||_F / ||ref||_F
    rel_err_mps: float


def verify_against_mps(kernel: str, M: int, N: Optional[int] = None, K: Optional[int] = None, *,
                       seed: int = 0x5EED, atol: float = MPS_ATOL,
                       rtol: float = MPS_RTOL) -> MpsComparison:
    """Runs ``kernel`` and the ``mps`` baseline through fastgemm.sgemm on the same random
    inputs in [-1, 1) and compares them elementwise with seed 004's tolerance
    ``|C - C_MPS| <= atol + rtol * |C_MPS|``. Both are also compared with a float64
    reference (relative Frobenius error), since agreeing with MPS is not exactness.
    Outputs start as NaN, so an element a kernel never writes fails the check."""
    N = M if N is None else N
    K = M if K is None else K
    rng = np.random.default_rng(seed)
    A, B = _rand(rng, M, K), _rand(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)
    C_mps = np.full((M, N), np.nan, dtype=np.float32)
    api.sgemm(A, B, C, kernel=kernel, backend="metal")
    api.sgemm(A, B, C_mps, kernel="mps", backend="metal")
    ref = A.astype(np.float64) @ B.astype(np.float64)
    diff = np.abs(C.astype(np.float64) - C_mps)
    bound = atol + rtol * np.abs(C_mps.astype(np.float64))
    finite = bool(np.all(np.isfinite(C)) and np.all(np.isfinite(C_mps)))
    excess = float(np.max(diff - bound)) if diff.size else 0.0
    norm = float(np.linalg.norm(ref)) or 1.0
    return MpsComparison(
        kernel=kernel, M=M, N=N, K=K,
        max_abs_diff_vs_mps=float(np.max(diff)) if diff.size else 0.0,
        worst_excess=excess if finite else float("inf"),
        passed=finite and excess <= 0.0,
        rel_err_kernel=float(np.linalg.norm(C - ref)) / norm,
        rel_err_mps=float(np.linalg.norm(C_mps - ref)) / norm,
    )

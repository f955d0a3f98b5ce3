"""Shared test helpers: random inputs (never zeros), float64 references, tolerances
from the precision class (the same rule the native verifier uses)."""

import os

import numpy as np
import pytest

# Keep autotune measurements of the test run out of the user's cache.
os.environ.setdefault("FASTGEMM_CACHE_DIR", os.path.join(os.path.dirname(__file__), ".cache"))

import fastgemm  # noqa: E402
from fastgemm import _fastgemm  # noqa: E402


@pytest.fixture
def rng(request):
    # A fresh but reproducible stream per test.
    seed = abs(hash(request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)


def rand(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def reference(A, B, C=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    a = A.astype(np.float64).T if trans_a else A.astype(np.float64)
    b = B.astype(np.float64).T if trans_b else B.astype(np.float64)
    out = alpha * (a @ b)
    if beta != 0.0:
        out = out + beta * C.astype(np.float64)
    return out


def assert_matches(C, ref, precision="fp32", K=1, what=""):
    """Relative Frobenius error within the precision class's tolerance, no NaN/Inf."""
    assert C.shape == ref.shape, what
    assert np.all(np.isfinite(C)), f"{what}: non-finite output (unwritten element?)"
    tol = _fastgemm.tolerance_for(precision, max(K, 1))
    denom = np.linalg.norm(ref)
    err = np.linalg.norm(C.astype(np.float64) - ref)
    rel = err / denom if denom > 0 else err
    assert rel <= tol, f"{what}: relative error {rel:.3e} > tolerance {tol:.3e}"
    if denom > 0:
        # No single element may be far off even if the norm hides it.
        worst = np.max(np.abs(C - ref))
        assert worst <= 64 * tol * np.max(np.abs(ref)), f"{what}: max abs diff {worst:.3e}"


def available_backends():
    return [b.name for b in fastgemm.backends() if b.available]

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


# --- Reliability and property tests (tests/test_properties.py, tests/test_reliability.py) ---
#
# Hypothesis profiles, chosen with FASTGEMM_HYPOTHESIS_PROFILE:
#   ci (default): a few thousand examples per backend, the whole property file in ~2 min
#                 on 2 cores; derandomized under CI=true so a red build reproduces.
#   nightly:      20x the examples and larger shapes; also runs the tests marked `slow`
#                 (heavy limit cases such as 2^31-element operands).
#   dev:          a quick smoke run while editing.
PROFILE = os.environ.get("FASTGEMM_HYPOTHESIS_PROFILE", "ci")
NIGHTLY = PROFILE == "nightly"

try:
    from hypothesis import HealthCheck, settings

    _common = dict(deadline=None, print_blob=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])
    settings.register_profile("ci", max_examples=100, derandomize=bool(os.environ.get("CI")), **_common)
    settings.register_profile("nightly", max_examples=2000, **_common)
    settings.register_profile("dev", max_examples=15, **_common)
    settings.load_profile(PROFILE)
except ImportError:  # hypothesis is a test extra; test_properties.py skips without it
    pass


def pytest_collection_modifyitems(config, items):
    """Tests marked `slow` belong to the nightly profile: other runs deselect them (and
    pytest's summary counts them as deselected), FASTGEMM_HYPOTHESIS_PROFILE=nightly runs
    them."""
    if NIGHTLY:
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]


def available_kernels():
    """(backend, KernelInfo) for every kernel of every available backend."""
    return [(b, k) for b in available_backends() for k in fastgemm.kernels(b)]


def is_fast_math(info) -> bool:
    """Kernels built with -ffast-math (teaching rungs) make no IEEE NaN/Inf promise."""
    flags = info.flags or ""
    return "-ffast-math" in flags and "no -ffast-math" not in flags

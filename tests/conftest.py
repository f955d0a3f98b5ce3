"""Shared test helpers: random inputs (never zeros), float64 references, tolerances
from the precision class (the same rule the native verifier uses)."""

import os
import signal
import zlib

import numpy as np
import pytest

# Keep autotune measurements of the test run out of the user's cache.
os.environ.setdefault("FASTGEMM_CACHE_DIR", os.path.join(os.path.dirname(__file__), ".cache"))

# Several tests send SIGINT to child interpreters and expect KeyboardInterrupt there. An
# ignored SIGINT survives exec, and CPython leaves it ignored: a run started in the
# background from a script (`pytest &`, which ignores SIGINT) would give every such child
# a deaf ear and the tests would hang until their timeouts. A handler, unlike SIG_IGN, is
# reset by exec, so the children start with CPython's own.
if hasattr(signal, "SIGINT") and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import fastgemm  # noqa: E402
from fastgemm import _fastgemm  # noqa: E402


@pytest.fixture
def rng(request):
    # A fresh but reproducible stream per test: seeded from the test's id with a stable
    # hash (Python's hash() of a str changes from one interpreter to the next).
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def rand(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


class Reference(np.ndarray):
    """A float64 reference result that also carries `magnitude`: |alpha op(A) op(B)| +
    |beta C| elementwise. alpha A B + beta C can cancel to a value far smaller than its
    two terms (a 1x1x1 product, say), and a correct fp32 kernel's rounding error is
    relative to the terms, not to what is left of them. Without beta the magnitude is
    |result| itself."""


def reference(A, B, C=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    a = A.astype(np.float64).T if trans_a else A.astype(np.float64)
    b = B.astype(np.float64).T if trans_b else B.astype(np.float64)
    out = alpha * (a @ b)
    magnitude = np.abs(out)
    if beta != 0.0:
        term = beta * C.astype(np.float64)
        out = out + term
        magnitude = magnitude + np.abs(term)
    out = out.view(Reference)
    out.magnitude = magnitude
    return out


def ieee_reference(a, b, c, alpha, beta, trans_a, trans_b):
    """alpha*op(A)op(B) + beta*C with every product formed (no BLAS underneath), in float64:
    Inf*0 = NaN, Inf + -Inf = NaN, NaN anywhere in a dot product gives NaN."""
    a = a.astype(np.float64).T if trans_a else a.astype(np.float64)
    b = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    M, K = a.shape
    N = b.shape[1]
    core = np.zeros((M, N))
    if alpha != 0.0 and K != 0:  # else reference BLAS returns early: A and B are not read
        with np.errstate(invalid="ignore", over="ignore"):
            for k in range(K):  # every product formed: no BLAS shortcut underneath
                core += a[:, k, None] * b[None, k, :]
            core = alpha * core
    if beta != 0.0:  # beta == 0: C is not read
        with np.errstate(invalid="ignore", over="ignore"):
            core = core + beta * c.astype(np.float64)
    return core


def assert_matches(C, ref, precision="fp32", K=1, what=""):
    """Relative Frobenius error within the precision class's tolerance, no NaN/Inf. The
    error is relative to the reference's magnitude (see Reference) when it has one."""
    assert C.shape == ref.shape, what
    assert np.all(np.isfinite(C)), f"{what}: non-finite output (unwritten element?)"
    ref_values = np.asarray(ref)
    magnitude = getattr(ref, "magnitude", None)
    magnitude = np.abs(ref_values) if magnitude is None else magnitude
    tol = _fastgemm.tolerance_for(precision, max(K, 1))
    denom = np.linalg.norm(magnitude)
    err = np.linalg.norm(C.astype(np.float64) - ref_values)
    rel = err / denom if denom > 0 else err
    assert rel <= tol, f"{what}: relative error {rel:.3e} > tolerance {tol:.3e}"
    if denom > 0:
        # No single element may be far off even if the norm hides it.
        worst = np.max(np.abs(C - ref_values))
        assert worst <= 64 * tol * np.max(magnitude), f"{what}: max abs diff {worst:.3e}"


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

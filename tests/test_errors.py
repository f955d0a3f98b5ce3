"""Bad input gets a specific exception that names the problem; nothing crashes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fastgemm
from fastgemm import errors
from conftest import rand


@pytest.fixture
def ab(rng):
    return rand(rng, 8, 6), rand(rng, 6, 4)


def test_wrong_dtype_names_the_fix(ab):
    A, B = ab
    with pytest.raises(TypeError, match=r"float64.*astype\(numpy.float32\)") as e:
        fastgemm.sgemm(A.astype(np.float64), B)
    assert isinstance(e.value, errors.DTypeError)
    with pytest.raises(errors.DTypeError):
        fastgemm.sgemm(A, B.astype(np.int32))


def test_wrong_rank(ab):
    A, B = ab
    with pytest.raises(errors.ShapeError, match="2-D"):
        fastgemm.sgemm(A.ravel(), B)
    with pytest.raises(ValueError, match="2-D"):
        fastgemm.sgemm(A, B[None])


def test_inner_dimension_mismatch(ab):
    A, B = ab
    with pytest.raises(errors.ShapeError, match="inner dimensions"):
        fastgemm.sgemm(A, B.T.copy())
    with pytest.raises(errors.ShapeError):
        fastgemm.sgemm(A, B, trans_a=True)


def test_bad_c(ab):
    A, B = ab
    with pytest.raises(errors.ShapeError, match="shape"):
        fastgemm.sgemm(A, B, np.zeros((8, 5), np.float32))
    with pytest.raises(errors.DTypeError):
        fastgemm.sgemm(A, B, np.zeros((8, 4), np.float64))
    ro = np.zeros((8, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(errors.ShapeError, match="read-only"):
        fastgemm.sgemm(A, B, ro)
    with pytest.raises(TypeError):
        fastgemm.sgemm(A, B, [[0.0] * 4] * 8)


def test_beta_without_c(ab):
    A, B = ab
    with pytest.raises(ValueError, match="beta"):
        fastgemm.sgemm(A, B, beta=1.0)


def test_unknown_kernel_and_backend(ab):
    A, B = ab
    with pytest.raises(errors.NotFoundError, match="unknown kernel 'nope'.*available: ") as e:
        fastgemm.sgemm(A, B, kernel="nope", backend="cpu")
    assert isinstance(e.value, KeyError)
    with pytest.raises(errors.NotFoundError, match="unknown backend 'tpu'"):
        fastgemm.sgemm(A, B, backend="tpu")
    with pytest.raises(errors.NotFoundError):
        fastgemm.kernels("tpu")


def test_unavailable_backend_says_why(ab):
    A, B = ab
    missing = [b for b in fastgemm.backends() if not b.available]
    if not missing:
        pytest.skip("every backend is available on this machine")
    b = missing[0]
    with pytest.raises(errors.BackendUnavailableError, match=b.name) as e:
        fastgemm.sgemm(A, B, backend=b.name)
    assert isinstance(e.value, RuntimeError) and b.reason in str(e.value)


def test_constraint_violation_names_the_rule(ab):
    constrained = [k for k in fastgemm.kernels() if k.constraints and
                   any(b.name == k.backend and b.available for b in fastgemm.backends())]
    for k in constrained:
        # Find a small problem that breaks the first constraint.
        for M, N, K, ta, tb, alpha, beta in [(7, 7, 7, False, False, 1.0, 0.0), (1, 3, 5, True, True, 2.0, 1.0),
                                             (2**31, 1, 1, False, False, 1.0, 0.0)]:
            if not k.accepts(M, N, K, ta, tb, alpha, beta) and M < 1000:
                A = np.ones((K, M) if ta else (M, K), np.float32)
                B = np.ones((N, K) if tb else (K, N), np.float32)
                C = np.ones((M, N), np.float32)
                with pytest.raises(errors.ConstraintError, match=k.name):
                    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb,
                                   kernel=k.name, backend=k.backend)
                break


def test_a_transposed_view_refused_for_its_flag_gets_the_fix():
    """x @ W.T for a kernel that wants B stored N x K (trans_b): the refusal says to pass W
    with trans_b=True, which then runs; refusals the flag cannot mend get no such hint."""
    x = np.random.default_rng(5).random((16, 64), dtype=np.float32)
    W = np.random.default_rng(6).random((32, 64), dtype=np.float32)
    with pytest.raises(errors.ConstraintError, match=r"B is a transposed view of a 32 x 64 row-major array: "
                                                     r"pass that array \(B.T\) with trans_b=True"):
        fastgemm.sgemm(x, W.T, kernel="direct_dot", backend="cpu")
    C = fastgemm.sgemm(x, W, trans_b=True, kernel="direct_dot", backend="cpu")
    assert np.abs(C - x.astype(np.float64) @ W.T.astype(np.float64)).max() < 1e-4
    W_stored_kxn = np.ascontiguousarray(W.T)  # a plain array: no view to flip
    with pytest.raises(errors.ConstraintError) as e:
        fastgemm.sgemm(x, W_stored_kxn, kernel="direct_dot", backend="cpu")
    assert "transposed view" not in str(e.value)
    with pytest.raises(errors.ConstraintError) as e:  # gemv needs M or N = 1: no flag mends that
        fastgemm.sgemm(x, W.T, kernel="gemv", backend="cpu")
    assert "transposed view" not in str(e.value)


def test_scalar_types(ab):
    A, B = ab
    with pytest.raises(TypeError, match="alpha"):
        fastgemm.sgemm(A, B, alpha="2")
    with pytest.raises(TypeError, match="beta"):
        fastgemm.sgemm(A, B, beta=1j)


def test_benchmark_bad_arguments():
    with pytest.raises(ValueError):
        fastgemm.benchmark("ikj", -1)
    with pytest.raises(ValueError):
        fastgemm.benchmark("ikj", 8, iters=0)
    with pytest.raises(errors.NotFoundError):
        fastgemm.benchmark("no_such_kernel", 8)


# Each refusal: the call, the fastgemm class, the built-in class it also is, and a word of
# its message (the argument it names).
REFUSALS = [
    (lambda A, B: fastgemm.sgemm(A, B, trans_a="T"), errors.ArgumentTypeError, TypeError, "trans_a"),
    (lambda A, B: fastgemm.sgemm(A, B, alpha="2"), errors.ArgumentTypeError, TypeError, "alpha"),
    (lambda A, B: fastgemm.sgemm(A, B, alpha=1e300), errors.ArgumentError, ValueError, "alpha"),
    (lambda A, B: fastgemm.sgemm(A, B, beta=1.0), errors.ArgumentError, ValueError, "pass C="),
    (lambda A, B: fastgemm.sgemm(A, B, [[0.0] * 4] * 8), errors.ArgumentTypeError, TypeError, "C must be"),
    (lambda A, B: fastgemm.sgemm(A, B, kernel=7), errors.ArgumentTypeError, TypeError, "kernel"),
    (lambda A, B: fastgemm.sgemm(A, B, kernel=""), errors.ArgumentError, ValueError, "kernel"),
    (lambda A, B: fastgemm.sgemm(A, B, precision="fp16"), errors.ArgumentError, ValueError, "precision"),
    (lambda A, B: fastgemm.sgemm(None, B), errors.ArgumentTypeError, TypeError, "A"),
    (lambda A, B: fastgemm.matmul(A, B, out=[0.0]), errors.ArgumentTypeError, TypeError, "out"),
    (lambda A, B: fastgemm.benchmark("ikj", 8, iters=0), errors.ArgumentError, ValueError, "iters"),
    (lambda A, B: fastgemm.benchmark("ikj", 8, max_seconds=-1), errors.ArgumentError, ValueError, "max_seconds"),
    (lambda A, B: fastgemm.set_num_threads(0), errors.ArgumentError, ValueError, "n must be"),
    (lambda A, B: fastgemm.empty((4, 4), align=24), errors.ArgumentError, ValueError, "align"),
    (lambda A, B: fastgemm.benchmark("ikj", 2**20, backend="cpu"), errors.OutOfMemoryError, MemoryError,
     "GiB of memory is available"),
]


@pytest.mark.parametrize("call, cls, builtin, word", REFUSALS, ids=[c[1].__name__ + "-" + c[3] for c in REFUSALS])
def test_every_refusal_is_a_fastgemm_error_and_the_builtin_class(ab, call, cls, builtin, word):
    """One `except fastgemm.FastgemmError` catches every refusal, and `except ValueError`
    (TypeError, MemoryError) still catches the ones users expect under that name."""
    with pytest.raises(cls) as e:
        call(*ab)
    assert isinstance(e.value, errors.FastgemmError) and isinstance(e.value, builtin)
    assert word in str(e.value), str(e.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS caps allocations only on Linux")
@pytest.mark.skipif(bool(os.environ.get("FASTGEMM_SANITIZED")),
                    reason="AddressSanitizer aborts on a failed operator new instead of throwing std::bad_alloc")
def test_an_allocation_the_core_cannot_make_is_an_out_of_memory_error():
    """The system's allocator refusing inside the native core (std::bad_alloc) surfaces
    as OutOfMemoryError, a FastgemmError and a MemoryError. A child process with its
    address space capped makes the refusal happen; the benchmark's own check of free
    memory (which reads the machine's, not the cap) lets the problem through."""
    child = textwrap.dedent("""
        import re, resource, fastgemm
        with open("/proc/self/status") as f:
            mapped = int(re.search(r"VmSize:\\s*(\\d+) kB", f.read()).group(1)) * 1024
        cap = mapped + (512 << 20)  # the operands need 1.5 GiB (six copies of C at 256 MiB)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            fastgemm.benchmark("ikj", 8192, 8192, 1, backend="cpu", warmup=0, iters=1, verify=False)
            print("RAN")
        except fastgemm.OutOfMemoryError as e:
            print("OOM", isinstance(e, MemoryError), isinstance(e, fastgemm.FastgemmError), e)
    """)
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("OOM True True out of memory"), proc.stdout + proc.stderr[-2000:]

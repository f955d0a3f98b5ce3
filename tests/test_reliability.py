"""Reliability: odd inputs never crash or hang the interpreter, sizes past 32-bit
indices are computed or refused up front, memory does not grow over many calls,
many threads get correct results with the GIL released, and Ctrl-C stops a long
native call quickly (in the verification phase too).

Anything that could kill the interpreter runs in a subprocess with a timeout, so a
crash is reported as a failing test (with the case that crashed), not as a dead run.
Heavy limit cases are marked `slow` and run under FASTGEMM_HYPOTHESIS_PROFILE=nightly.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import fastgemm
from fastgemm import errors
from conftest import NIGHTLY, available_backends, available_kernels, rand

HERE = os.path.dirname(os.path.abspath(__file__))
CPU_KERNELS = [k.name for k in fastgemm.kernels("cpu")]


def run_python(code, timeout, env=None):
    """Runs code in a fresh interpreter; returns the CompletedProcess (never raises on rc)."""
    full_env = dict(os.environ, PYTHONFAULTHANDLER="1", **(env or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=HERE, env=full_env)


def describe_exit(proc):
    if proc.returncode < 0:
        return f"killed by signal {signal.Signals(-proc.returncode).name}"
    return f"exit code {proc.returncode}"


# --- Odd inputs: a fuzzer in a subprocess -------------------------------------------------

FUZZ_CHILD = r'''
import json, sys, numbers
import numpy as np
import fastgemm
from fastgemm import errors

rng = np.random.default_rng(int(sys.argv[1]))
cases = int(sys.argv[2])
backends = [b.name for b in fastgemm.backends()]
kernels = [(k.backend, k.name) for b in backends for k in fastgemm.kernels(b)]
# -ffast-math rungs waive IEEE NaN/Inf semantics (docs/reliability.md): checked on finite data only.
fast_math = {k.name for b in backends for k in fastgemm.kernels(b)
             if "-ffast-math" in k.flags and "no -ffast-math" not in k.flags}
# Every refusal is a FastgemmError (each also derives from the built-in class users expect).
ALLOWED = (errors.FastgemmError,)

def f32(shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)

def matrix(rows, cols):
    """A float32 matrix with these dimensions in an odd but legal layout."""
    kind = rng.integers(0, 9)
    x = f32((rows, cols))
    if kind == 1: return np.asfortranarray(x)
    if kind == 2: return f32((rows, 2 * cols + 1))[:, ::2][:, :cols] if cols else x
    if kind == 3: return x[::-1]
    if kind == 4: return x[:, ::-1]
    if kind == 5:
        raw = np.empty(rows * cols * 4 + 1, np.uint8)
        v = raw[1:].view(np.float32).reshape(rows, cols); v[...] = x; return v
    if kind == 6: return np.broadcast_to(x[:1], (rows, cols)) if rows else x  # stride 0, read-only
    if kind == 7: return x.T.copy().T
    return x

def junk():
    choices = [
        lambda: f32((3, 4)).astype(np.float64), lambda: f32((3, 4)).astype(np.float16),
        lambda: np.ones((3, 4), np.int32), lambda: np.ones((3, 4), bool),
        lambda: np.ones((3, 4), np.complex64), lambda: f32((3, 4)).astype(">f4"),
        lambda: np.array([[object(), 1.0]], dtype=object), lambda: np.float32(1.0),
        lambda: np.zeros((), np.float32), lambda: f32((5,)), lambda: f32((2, 3, 4)),
        lambda: [[1.0, 2.0], [3.0, 4.0]], lambda: None, lambda: "matrix", lambda: 3,
        lambda: np.zeros((0, 0), np.float32), lambda: np.zeros((0, 7), np.float32),
        lambda: np.matrix(f32((3, 3))), lambda: np.ma.masked_array(f32((3, 3))),
        lambda: np.lib.stride_tricks.as_strided(f32((16,)), shape=(4, 4), strides=(4, 4)),
        lambda: np.lib.stride_tricks.as_strided(np.zeros(64, np.uint8), shape=(3, 3), strides=(5, 3)).view(np.uint8),
        lambda: f32((4, 4))[:, :, None][:, :, 0],
    ]
    return choices[rng.integers(0, len(choices))]()

def flag():
    if rng.random() < 0.9:
        return [False, True, 0, 1, np.bool_(True)][rng.integers(0, 5)]
    return ["N", "T", None, 2][rng.integers(0, 4)]

def scalar():
    return [0.0, 1.0, -1.0, 2.5, 0, 1, np.float32(0.5), float("nan"), float("inf"), True, "2", 1j,
            10**400, None, np.float64(-3.0)][rng.integers(0, 15)]

def name(kind):
    if rng.random() < 0.1:
        return ["", "nope", None, 7, "CPU"][rng.integers(0, 5)]
    pool = [k for _, k in kernels] + ["auto"] if kind == "kernel" else backends + ["auto"]
    return pool[rng.integers(0, len(pool))]

def ieee_reference(a, b, c, alpha, beta, ta, tb):
    a = a.astype(np.float64).T if ta else a.astype(np.float64)
    b = b.astype(np.float64).T if tb else b.astype(np.float64)
    M, K = a.shape; N = b.shape[1]
    core = np.zeros((M, N))
    if alpha != 0 and K:
        with np.errstate(all="ignore"):
            for k in range(K): core += a[:, k, None] * b[None, k, :]
            core = alpha * core
    if beta != 0:
        with np.errstate(all="ignore"): core = core + beta * c.astype(np.float64)
    return core

for case in range(cases):
    M, N, K = (int(rng.choice([0, 1, 2, 3, 7, 17, 33])) for _ in range(3))
    ta, tb = flag(), flag()
    logical_ta = ta if isinstance(ta, (bool, np.bool_)) or ta in (0, 1) else False
    logical_tb = tb if isinstance(tb, (bool, np.bool_)) or tb in (0, 1) else False
    A = matrix(*((K, M) if logical_ta else (M, K)))
    B = matrix(*((N, K) if logical_tb else (K, N)))
    C = matrix(M, N) if rng.random() < 0.7 else None
    if C is not None and not C.flags.writeable:
        C = C.copy() if rng.random() < 0.5 else C
    roll = rng.random()
    if roll < 0.15: A = junk()
    elif roll < 0.3: B = junk()
    elif roll < 0.45: C = junk()
    elif roll < 0.55: A, B = B, A  # mismatched inner dimensions, mostly
    alpha = scalar() if rng.random() < 0.15 else float(rng.choice([0.0, 1.0, -1.0, 0.75]))
    beta = scalar() if rng.random() < 0.15 else float(rng.choice([0.0, 1.0, -0.5]))
    kernel = name("kernel") if rng.random() < 0.6 else "auto"
    backend = name("backend") if rng.random() < 0.4 else "cpu"
    desc = dict(case=case, A=getattr(A, "shape", type(A).__name__), B=getattr(B, "shape", type(B).__name__),
                C=getattr(C, "shape", type(C).__name__), ta=repr(ta), tb=repr(tb), alpha=repr(alpha),
                beta=repr(beta), kernel=repr(kernel), backend=repr(backend))
    print("CASE", json.dumps(desc), flush=True)
    snapshot = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in (A, B, C)]
    try:
        out = fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, kernel=kernel,
                             backend=backend)
    except ALLOWED as e:
        if not str(e).strip():
            print("EMPTY-MESSAGE", type(e).__name__, flush=True); sys.exit(3)
        continue
    except BaseException as e:
        print("UNEXPECTED", type(e).__name__, e, flush=True); sys.exit(2)
    # It ran: the result must be right (reference BLAS semantics, loose tolerance).
    a0, b0, c0 = snapshot
    if kernel in fast_math and not np.isfinite([float(alpha), float(beta)]).all():
        continue
    if not np.isfinite(float(alpha)) and np.size(out) and np.asarray(a0).size:
        # alpha = Inf or NaN: which outputs are NaN and which Inf depends on where alpha is
        # applied (alpha * sum, or sum of alpha * a * b as reference BLAS does); none is finite.
        if np.isfinite(np.asarray(out)).any():
            print("WRONG finite output with alpha", alpha, json.dumps(desc), flush=True); sys.exit(4)
        continue
    ref = ieee_reference(np.asarray(a0), np.asarray(b0), np.asarray(c0) if c0 is not None else None,
                         float(alpha), float(beta), bool(ta), bool(tb))
    got = np.asarray(out, dtype=np.float64)
    same_nan = np.array_equal(np.isnan(got), np.isnan(ref))
    fin = np.isfinite(ref)
    close = same_nan and np.array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)]) and \
        np.allclose(got[fin], ref[fin], rtol=1e-3, atol=1e-3 * max(1, K))
    if not close:
        print("WRONG", json.dumps(desc), flush=True); sys.exit(4)
print("DONE", cases, flush=True)
'''


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzzed_odd_inputs_never_crash_or_give_wrong_results(seed):
    """Random junk and odd-but-legal arguments: every call either raises a documented
    exception with a message, or returns the reference result. Runs in a subprocess."""
    cases = 3000 if NIGHTLY else 400
    proc = subprocess.run([sys.executable, "-c", FUZZ_CHILD, str(seed), str(cases)], capture_output=True,
                          text=True, timeout=300, cwd=HERE, env=dict(os.environ, PYTHONFAULTHANDLER="1"))
    last = [line for line in proc.stdout.splitlines() if line.startswith("CASE")][-1:]
    assert proc.returncode == 0 and f"DONE {cases}" in proc.stdout, (
        f"fuzz child {describe_exit(proc)} at {last}\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}")


# --- Specific bad inputs (beyond tests/test_errors.py) -----------------------------------

@pytest.fixture
def ab(rng):
    return rand(rng, 6, 5), rand(rng, 5, 4)


@pytest.mark.parametrize("flag", ["N", "T", "n", None, 2, -1, 0.5, [True]])
def test_trans_flags_must_be_booleans(ab, flag):
    """'N' would be truthy and silently transpose: only booleans (or 0/1) are accepted."""
    A, B = ab
    with pytest.raises(TypeError, match="trans_a must be True or False"):
        fastgemm.sgemm(A, B, trans_a=flag)
    with pytest.raises(TypeError, match="trans_b must be True or False"):
        fastgemm.sgemm(A, B.T, trans_b=flag)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64, np.uint8, bool, np.complex64,
                                   ">f4", object])
def test_every_wrong_dtype_is_a_dtype_error(ab, dtype):
    A, B = ab
    for args in [(A.astype(dtype), B), (A, B.astype(dtype))]:
        with pytest.raises(errors.DTypeError, match="float32"):
            fastgemm.sgemm(*args)
    with pytest.raises(errors.DTypeError, match="float32"):
        fastgemm.sgemm(A, B, np.zeros((6, 4), dtype))


@pytest.mark.parametrize("shape", [(), (6,), (1, 6, 5), (6, 5, 1)])
def test_every_wrong_rank_is_a_shape_error(ab, shape):
    A, B = ab
    bad = np.zeros(shape, np.float32)
    with pytest.raises(errors.ShapeError, match="2-D"):
        fastgemm.sgemm(bad, B)
    with pytest.raises(errors.ShapeError, match="2-D"):
        fastgemm.sgemm(A, bad)
    with pytest.raises(errors.ShapeError, match="shape"):
        fastgemm.sgemm(A, B, bad)


def test_non_array_operands(ab):
    A, B = ab
    for bad in [None, "A", 3, object()]:
        with pytest.raises(errors.FastgemmError):
            fastgemm.sgemm(bad, B)
    with pytest.raises(errors.ArgumentTypeError, match="numpy.ndarray"):
        fastgemm.sgemm(A, B, [[0.0] * 4] * 6)


def test_read_only_c_and_broadcast_c(ab):
    A, B = ab
    with pytest.raises(errors.ShapeError, match="read-only"):
        fastgemm.sgemm(A, B, np.broadcast_to(np.float32(0), (6, 4)))


def test_unaligned_operands_are_copied_not_misread(ab):
    A, B = ab
    raw = np.zeros(A.size * 4 + 1, np.uint8)
    Au = raw[1:].view(np.float32).reshape(A.shape)
    Au[...] = A
    assert not Au.flags.aligned
    rawc = np.zeros(6 * 4 * 4 + 1, np.uint8)
    Cu = rawc[1:].view(np.float32).reshape(6, 4)
    for kernel in ["ikj", "packed", "openblas", "auto"]:
        if kernel != "auto" and kernel not in CPU_KERNELS:
            continue
        Cu[...] = np.nan
        fastgemm.sgemm(Au, B, Cu, kernel=kernel, backend="cpu")
        np.testing.assert_allclose(Cu, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)


def test_empty_output_still_checks_names_and_backends(ab):
    A = np.zeros((0, 5), np.float32)
    B = np.zeros((5, 4), np.float32)
    assert fastgemm.sgemm(A, B).shape == (0, 4)
    with pytest.raises(errors.NotFoundError):
        fastgemm.sgemm(A, B, kernel="nope", backend="cpu")
    with pytest.raises(errors.NotFoundError):
        fastgemm.sgemm(A, B, backend="tpu")
    missing = [b for b in fastgemm.backends() if not b.available]
    if missing:
        with pytest.raises(errors.BackendUnavailableError):
            fastgemm.sgemm(A, B, backend=missing[0].name)


def test_empty_output_of_a_huge_broadcast_operand_copies_nothing():
    """N == 0: nothing is computed, so a 2^31-row broadcast A must not be materialised."""
    A = np.broadcast_to(np.float32(1), (2**31, 3))
    B = np.zeros((3, 0), np.float32)
    C = fastgemm.sgemm(A, B, kernel="ikj", backend="cpu")
    assert C.shape == (2**31, 0)


@pytest.mark.parametrize("alpha,beta", [(float("nan"), 0.0), (1.0, float("nan")), (float("inf"), 0.0)])
def test_non_finite_scalars_follow_ieee(ab, alpha, beta):
    A, B = ab
    C = np.ones((6, 4), np.float32)
    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, kernel="ikj", backend="cpu")
    assert not np.any(np.isfinite(C))


def test_errors_carry_actionable_messages(ab):
    A, B = ab
    cases = [
        (lambda: fastgemm.sgemm(A.astype(np.float64), B), "astype(numpy.float32)"),
        (lambda: fastgemm.sgemm(A, A), "inner dimensions differ"),
        (lambda: fastgemm.sgemm(A, B, kernel="nope", backend="cpu"), "available:"),
        (lambda: fastgemm.sgemm(A, B, beta=1.0), "pass C="),
        (lambda: fastgemm.sgemm(A, B, np.zeros((4, 6), np.float32)), "op(A) @ op(B) is 6x4"),
    ]
    for fn, text in cases:
        with pytest.raises(errors.FastgemmError) as e:
            fn()
        assert text in str(e.value), f"message {str(e.value)!r} lacks {text!r}"


def test_benchmark_absurd_sizes_are_refused_cleanly():
    """Checked in a subprocess: a crash or an OOM kill would be a failure, not a dead run."""
    proc = run_python("""
        import fastgemm
        for args in [(10**6,), (2**40, 2**40, 2**40), (3 * 2**31, 2**31, 1), (60000,)]:
            try:
                fastgemm.benchmark("ikj", *args, backend="cpu", warmup=0, iters=1)
                print("RAN", args)
            except MemoryError as e:
                print("MemoryError", args, e)
            except ValueError as e:
                print("ValueError", args, e)
        print("END")
    """, timeout=120)
    assert proc.returncode == 0 and "END" in proc.stdout, f"{describe_exit(proc)}\n{proc.stdout}\n{proc.stderr}"
    assert "RAN" not in proc.stdout
    assert "64-bit offset" in proc.stdout or "GiB" in proc.stdout, proc.stdout


# --- Limits: 64-bit offsets ------------------------------------------------------------

BIG = 2**31 + 7  # one past what a 32-bit int indexes


def lazily_mapped(elements):
    """An 8+ GiB float32 buffer that costs no memory until touched (calloc'd zero pages),
    or None when the address space cannot be reserved."""
    try:
        return np.zeros(elements, np.float32)
    except MemoryError:
        return None


def strided_rows(buf, rows, cols, ld, offset=0):
    return np.lib.stride_tricks.as_strided(buf[offset:], shape=(rows, cols), strides=(ld * 4, 4))


@pytest.fixture(scope="module")
def huge_buffer():
    buf = lazily_mapped(BIG + 64)
    if buf is None:
        pytest.skip("cannot reserve 8 GiB of address space here")
    return buf


LD_KERNELS = [k for k in ("ijk", "ikj", "jki", "kji", "transposed_b", "tiled_ikj_32", "ikj_threads",
                          "packed", "packed_scalar", "openblas") if k in CPU_KERNELS]


@pytest.mark.parametrize("kernel", LD_KERNELS)
@pytest.mark.parametrize("which", ["A", "B", "C", "A_trans"])
def test_leading_dimension_past_2_31(huge_buffer, kernel, which):
    """Two rows 2^31+7 elements apart (offsets past int32) through each kernel family: the
    result is right, or the kernel refuses with ConstraintError before any work (the BLAS
    baseline takes 32-bit leading dimensions). Only a few pages of the 8 GiB are touched."""
    rng = np.random.default_rng(7)
    M, N, K = 2, 5, 2  # the strided operand has 2 rows, so it spans BIG + a few elements
    a0, b0, c0 = rand(rng, M, K), rand(rng, K, N), rand(rng, M, N)
    A, B, C, trans_a = a0.copy(), b0.copy(), c0.copy(), False
    huge_buffer[:8] = 0.0
    if which == "A":
        A = strided_rows(huge_buffer, M, K, BIG)
        A[...] = a0
    elif which == "A_trans":
        A, trans_a = strided_rows(huge_buffer, K, M, BIG), True
        A[...] = a0.T
    elif which == "B":
        B = strided_rows(huge_buffer, K, N, BIG)
        B[...] = b0
    else:
        C = strided_rows(huge_buffer, M, N, BIG)
        C[...] = c0
    try:
        fastgemm.sgemm(A, B, C, beta=1.0, trans_a=trans_a, kernel=kernel, backend="cpu")
    except errors.ConstraintError as e:
        assert kernel == "openblas" and "32-bit" in str(e)
        return
    np.testing.assert_allclose(C, a0.astype(np.float64) @ b0 + c0, rtol=1e-5, atol=1e-5)


def test_span_overflowing_64_bit_offsets_is_refused():
    """Dimensions whose element span overflows int64 bytes raise ShapeError before work."""
    with pytest.raises(errors.ShapeError, match="64-bit offset"):
        fastgemm.benchmark("ikj", 2**40, 2**40, 2**40, backend="cpu", warmup=0, iters=1)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [k for k in ("ikj", "ijk", "packed", "openblas") if k in CPU_KERNELS])
def test_row_of_2_31_plus_7_elements(kernel):
    """1 x (2^31+7) x 1: C has more elements than int32 counts (8 GiB written). B is a
    column view into lazily mapped zeros with a few non-zeros planted at the far end."""
    buf = lazily_mapped(BIG)
    if buf is None:
        pytest.skip("cannot reserve 8 GiB here")
    A = np.full((1, 1), 2.0, np.float32)
    B = buf.reshape(1, BIG)
    B[0, [0, 2**31 - 1, 2**31, BIG - 1]] = [1.0, 3.0, 5.0, 7.0]
    try:
        C = np.empty((1, BIG), np.float32)
    except MemoryError:
        pytest.skip("cannot allocate 8 GiB for C")
    try:
        fastgemm.sgemm(A, B, C, kernel=kernel, backend="cpu")
    except errors.ConstraintError as e:
        assert kernel == "openblas" and "2147483647" in str(e)
        return
    assert C[0, [0, 2**31 - 1, 2**31, BIG - 1]].tolist() == [2.0, 6.0, 10.0, 14.0]
    assert C[0, 12345] == 0.0 and C[0, 2**31 + 3] == 0.0


# --- Memory: no growth over many calls ------------------------------------------------

def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
@pytest.mark.skipif(bool(os.environ.get("FASTGEMM_SANITIZED")),
                    reason="ASan's quarantine holds freed memory: RSS says nothing under sanitizers")
def test_no_memory_growth_over_10k_calls(rng):
    A, B = rand(rng, 17, 13), rand(rng, 13, 11)
    C = np.zeros((17, 11), np.float32)
    bad = np.zeros((17, 11), np.float64)
    kernels = [k for k in ("ikj", "transposed_b", "packed", "openblas", "auto") if k in CPU_KERNELS + ["auto"]]

    def burst(n):
        for i in range(n):
            fastgemm.sgemm(A, B, C, beta=0.5, kernel=kernels[i % len(kernels)], backend="cpu")
            fastgemm.sgemm(A, B.T, trans_b=True, kernel="ikj", backend="cpu")
            try:  # error paths must not leak either
                fastgemm.sgemm(A, B, bad)
            except errors.DTypeError:
                pass
            try:
                fastgemm.sgemm(A, B, kernel="nope", backend="cpu")
            except errors.NotFoundError:
                pass

    burst(1000)  # warm-up: caches, autotune table, allocator pools
    before = rss_bytes()
    burst(10_000)
    grown = rss_bytes() - before
    assert grown < 16 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 10^4 calls"


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
@pytest.mark.skipif(bool(os.environ.get("FASTGEMM_SANITIZED")),
                    reason="ASan's quarantine holds freed memory: RSS says nothing under sanitizers")
def test_no_memory_growth_over_repeated_benchmarks():
    for _ in range(20):
        fastgemm.benchmark("ikj", 64, backend="cpu", warmup=0, iters=1)
    before = rss_bytes()
    for _ in range(300):
        fastgemm.benchmark("ikj", 64, backend="cpu", warmup=0, iters=1)
    grown = rss_bytes() - before
    assert grown < 16 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 300 benchmarks"


# --- Concurrency -----------------------------------------------------------------------

def test_many_threads_get_correct_results(rng):
    """16 Python threads, different kernels and shapes at once, each checking its own
    results (kernel='auto' included: the autotune table is shared)."""
    kernels = [k for k in ("ikj", "ikj_threads", "packed", "openblas", "transposed_b_split4", "auto")
               if k in CPU_KERNELS + ["auto"]]
    failures = []
    seeds = rng.integers(0, 2**31, size=16)

    def worker(t):
        local = np.random.default_rng(int(seeds[t]))
        try:
            for i in range(25):
                M, N, K = (int(x) for x in local.integers(1, 70, size=3))
                A, B = rand(local, M, K), rand(local, K, N)
                C0 = rand(local, M, N)
                C = C0.copy()
                kernel = kernels[(t + i) % len(kernels)]
                fastgemm.sgemm(A, B, C, alpha=0.5, beta=-1.0, kernel=kernel, backend="cpu")
                ref = 0.5 * (A.astype(np.float64) @ B) - C0
                if not np.allclose(C, ref, rtol=1e-4, atol=1e-4 * K):
                    failures.append((t, i, kernel, M, N, K))
        except Exception as e:  # surfaced below
            failures.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    assert not failures, failures[:5]


def _slow_call_size():
    # jki walks A and C down columns: ~0.3 s or more at 384^3 here. A long call makes
    # "the Python thread stalled for the whole call" unmistakable.
    return 384


@pytest.mark.parametrize("entry", ["sgemm", "benchmark"])
def test_gil_is_released_during_native_work(entry):
    """While one thread is inside a long native call, another Python thread keeps running.
    If the GIL were held, the watcher's longest gap between loop turns would be the whole
    call; released, it stays a small fraction of it."""
    n = _slow_call_size()
    A = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype(np.float32)
    call_time = []
    started = threading.Event()

    def native():
        started.set()
        t0 = time.perf_counter()
        if entry == "sgemm":
            fastgemm.sgemm(A, A, kernel="jki", backend="cpu")
        else:
            fastgemm.benchmark("jki", n, backend="cpu", warmup=0, iters=1, verify=False)
        call_time.append(time.perf_counter() - t0)

    th = threading.Thread(target=native)
    th.start()
    started.wait()
    last = time.perf_counter()
    longest = 0.0
    while th.is_alive():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
        time.sleep(0.001)
    th.join()
    assert call_time[0] > 0.05, "call too short to tell (machine much faster than expected?)"
    assert longest < 0.5 * call_time[0], (
        f"the Python thread stalled {longest:.3f} s during a {call_time[0]:.3f} s native call: GIL held?")


# --- Ctrl-C -----------------------------------------------------------------------------

SIGINT_CHILD = """
import sys, time
import numpy as np
import fastgemm
phase = sys.argv[1]
print("ready", flush=True)
t = time.time()
try:
    if phase == "verify":        # one jki call at 2048^3 takes a minute: stop inside it
        fastgemm.benchmark("jki", 2048, backend="cpu", warmup=0, iters=3, verify=True)
    elif phase == "timing":
        fastgemm.benchmark("jki", 2048, backend="cpu", warmup=1, iters=3, verify=False)
    else:
        A = np.ones((2048, 2048), np.float32)
        fastgemm.sgemm(A, A, kernel="jki", backend="cpu")
    print("finished", time.time() - t, flush=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt", time.time() - t, flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("phase", ["verify", "timing", "sgemm"])
def test_ctrl_c_stops_a_long_native_call_quickly(phase):
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_CHILD, phase], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=HERE)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # inside the native call by now (set-up takes well under a second)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        latency = time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "KeyboardInterrupt" in out, f"{describe_exit(proc)}: {out}\n{err[-2000:]}"
    assert proc.returncode == 0
    assert latency < 10, f"took {latency:.1f} s to stop"


def test_interrupt_flag_does_not_leak_into_the_next_call(rng):
    """After an interrupted call, the next call runs to completion normally."""
    proc = run_python("""
        import os, signal, threading, numpy as np, fastgemm
        A = np.ones((1024, 1024), np.float32)
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            fastgemm.sgemm(A, A, kernel="jki", backend="cpu")
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
        B = np.ones((64, 64), np.float32)
        C = fastgemm.sgemm(B, B, kernel="jki", backend="cpu")
        print("ok" if np.all(C == 64) else "wrong")
    """, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["interrupted", "ok"], proc.stdout

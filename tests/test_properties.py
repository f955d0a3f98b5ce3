"""Property tests (hypothesis): fastgemm.sgemm has BLAS semantics for every available
backend and kernel, against a float64 numpy reference.

Each kernel of each available backend is one test case, so new backends and kernels
are covered as soon as they register. Problems a kernel does not accept (per
KernelInfo.accepts) must raise ConstraintError instead. Drawn per example: shapes
including 0 and 1, alpha/beta including 0, 1, -1 and other values, transposes, and the
memory layout of every operand (C order, Fortran order, padded rows, strided,
negative strides, unaligned). Slow teaching loops (a low bench_flops_cap) get small
shapes only. Example counts come from the profile (tests/conftest.py).

The guarantees checked here are the ones docs/reliability.md states:
  * beta == 0: C is not read (NaN or Inf already in C does not propagate);
  * alpha == 0 or K == 0: A and B are not read, C = beta * C (reference BLAS and
    OpenBLAS return early there);
  * otherwise IEEE semantics: NaN or Inf in A or B reaches every output whose dot
    product touches it, Inf * 0 = NaN (no kernel skips a multiply because one factor
    is 0), +Inf + -Inf = NaN;
  * inputs are never written, nothing outside C's view is written, C may share memory
    with A or B (the result is as if the inputs were copied first).
"""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fastgemm  # noqa: E402
from fastgemm import errors  # noqa: E402
from fastgemm import _fastgemm  # noqa: E402
from conftest import NIGHTLY, available_kernels, ieee_reference, is_fast_math  # noqa: E402

KERNELS = available_kernels()
KERNEL_IDS = [f"{b}/{k.name}" for b, k in KERNELS]
BACKENDS = sorted({b for b, _ in KERNELS})

# Kernels whose benchmark cap marks them as slow per element get small shapes.
SLOW_CAP = 2.0 * 1024**3


def max_dim(info) -> int:
    if info.bench_flops_cap <= SLOW_CAP:
        return 40 if NIGHTLY else 20
    return 300 if NIGHTLY else 96


# --- strategies -------------------------------------------------------------------------

SPECIAL_SCALARS = [0.0, 1.0, -1.0, 0.5, -2.5, 3.0]
scalars = st.one_of(st.sampled_from(SPECIAL_SCALARS),
                    st.floats(-4.0, 4.0, width=32, allow_nan=False, allow_infinity=False,
                              allow_subnormal=False))


def dims(limit):
    # Edge sizes often, anything up to the limit otherwise (primes, non-multiples of tiles).
    return st.one_of(st.sampled_from([0, 1, 2, 3]), st.integers(1, limit), st.integers(1, max(1, limit // 8)))


LAYOUTS = ["C", "F", "padded_rows", "padded_cols_F", "col_step", "row_step", "neg_rows", "neg_cols",
           "neg_both", "unaligned"]

SENTINEL = np.float32(7.0e5)  # outside [-1, 1): an unexpected write shows


def place(values, layout):
    """A view with the contents of `values` in the given memory layout.

    Returns (view, buffer, mask): `buffer` is the whole allocation the view lives in,
    filled with SENTINEL elsewhere, and `mask` marks the view's elements in it, so a
    test can check that nothing outside the view was written.
    """
    r, c = values.shape

    def inside(buf, view_of):
        buf[...] = SENTINEL
        view = view_of(buf)
        view[...] = values
        mask = np.zeros(buf.shape, bool)
        view_of(mask)[...] = True
        return view, buf, mask

    if layout == "C":
        return inside(np.empty((r, c), np.float32), lambda b: b)
    if layout == "F":
        return inside(np.empty((r, c), np.float32, order="F"), lambda b: b)
    if layout == "padded_rows":  # row-major with leading dimension > cols
        return inside(np.empty((r, c + 3), np.float32), lambda b: b[:, :c])
    if layout == "padded_cols_F":  # column-major with leading dimension > rows
        return inside(np.empty((c, r + 5), np.float32), lambda b: b[:, :r].T)
    if layout == "col_step":  # non-unit inner stride: fastgemm copies
        return inside(np.empty((r, 2 * c + 1), np.float32), lambda b: b[:, 1::2][:, :c])
    if layout == "row_step":
        return inside(np.empty((2 * r + 1, c), np.float32), lambda b: b[1::2][:r])
    if layout == "neg_rows":
        return inside(np.empty((r, c), np.float32), lambda b: b[::-1])
    if layout == "neg_cols":
        return inside(np.empty((r, c), np.float32), lambda b: b[:, ::-1])
    if layout == "neg_both":
        return inside(np.empty((r + 1, c + 2), np.float32), lambda b: b[:r, :c][::-1, ::-1])
    if layout == "unaligned":  # C-contiguous data at an odd address: fastgemm copies
        raw = np.empty(r * c * 4 + 1, np.uint8)
        view = raw[1:].view(np.float32).reshape(r, c)
        view[...] = values
        return view, view, np.ones((r, c), bool)
    raise AssertionError(layout)


def uniform(rng, shape):
    """Uniform in [-1, 1), never exactly 0 (a 0 would hide a skipped term)."""
    x = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    x[x == 0] = np.float32(0.25)
    return x


@st.composite
def problems(draw, info):
    limit = max_dim(info)
    M, N, K = draw(dims(limit)), draw(dims(limit)), draw(dims(limit))
    trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
    alpha = draw(scalars)
    beta = draw(scalars)
    if info.constraints and draw(st.booleans()):
        # Half of the examples of a constrained kernel move to a problem it accepts; the
        # rest check that ConstraintError is raised when it does not.
        M, N, K, trans_a, trans_b, alpha, beta = fit_to_constraints(info, M, N, K, trans_a, trans_b,
                                                                    alpha, beta)
    give_c = beta != 0.0 or draw(st.booleans())
    layouts = [draw(st.sampled_from(LAYOUTS)) for _ in range(3)]
    seed = draw(st.integers(0, 2**32 - 1))
    return dict(M=M, N=N, K=K, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta,
                give_c=give_c, layouts=layouts, seed=seed)


def reference(a, b, c, alpha, beta, trans_a, trans_b):
    a = a.astype(np.float64).T if trans_a else a.astype(np.float64)
    b = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    out = alpha * (a @ b) if alpha != 0.0 and a.shape[1] else np.zeros((a.shape[0], b.shape[1]))
    if beta != 0.0:
        out = out + beta * c.astype(np.float64)
    return out


def check_close(C, ref, info, K, what, bound=None):
    """Elementwise: |C - ref| <= tol * (|alpha| |op(A)| |op(B)| + |beta| |C0|), the classic
    GEMM rounding bound, with tol = max(the precision class's tolerance at K, (K + 2) u).
    Bounding by the size of the terms (not of the result) keeps cancellation from making
    tiny shapes flaky, while a missing or doubled term (about bound / K) still fails."""
    assert C.shape == ref.shape, what
    assert np.all(np.isfinite(C)), f"{what}: non-finite output (unwritten element?)"
    if C.size == 0:
        return
    if bound is None:
        bound = np.abs(ref)
    tol = max(_fastgemm.tolerance_for(info.precision, max(K, 1)), (K + 2) * 2.0**-24)
    err = np.abs(C.astype(np.float64) - ref)
    limit = tol * bound + 1e-30
    bad = err > limit
    if np.any(bad):
        i, j = np.argwhere(bad)[0]
        raise AssertionError(f"{what}: {int(bad.sum())} elements off, e.g. C[{i},{j}] = {C[i, j]!r}, "
                             f"reference {ref[i, j]!r}, allowed error {limit[i, j]:.3e}")


def term_bound(a, b, c, alpha, beta, trans_a, trans_b):
    """|alpha| |op(A)| |op(B)| + |beta| |C|: the size of what is summed per element."""
    return reference(np.abs(a), np.abs(b), np.abs(c), abs(alpha), abs(beta), trans_a, trans_b)


def fit_to_constraints(info, M, N, K, trans_a, trans_b, alpha, beta):
    """Moves a drawn problem to the nearest one the kernel accepts, reading the rules
    from KernelInfo.constraints (Constraint::describe: "M % 64 == 0", "K >= 16",
    "M == N == K", "trans_a == False", "alpha == 1 and beta == 0"). Unknown rules are
    left alone; callers check accepts() afterwards."""
    d = {"M": M, "N": N, "K": K}
    for rule in info.constraints:
        words = rule.split()
        if len(words) == 5 and words[1] == "%" and words[0] in d:
            v = int(words[2])
            d[words[0]] = -(-d[words[0]] // v) * v
        elif len(words) == 3 and words[1] == ">=" and words[0] in d:
            d[words[0]] = max(d[words[0]], int(words[2]))
        elif len(words) == 3 and words[1] == "<=" and words[0] in d:
            d[words[0]] = min(d[words[0]], int(words[2]))
        elif rule == "M == N == K":
            d["M"] = d["N"] = d["K"] = max(d.values())
        elif rule == "trans_a == False":
            trans_a = False
        elif rule == "trans_b == False":
            trans_b = False
        elif rule == "alpha == 1 and beta == 0":
            alpha, beta = 1.0, 0.0
    return d["M"], d["N"], d["K"], trans_a, trans_b, alpha, beta


def call(info, backend, A, B, C, p):
    return fastgemm.sgemm(A, B, C, alpha=p["alpha"], beta=p["beta"], trans_a=p["trans_a"],
                          trans_b=p["trans_b"], kernel=info.name, backend=backend)


def accepts(info, p, M=None, N=None, K=None):
    return info.accepts(p["M"] if M is None else M, p["N"] if N is None else N, p["K"] if K is None else K,
                        p["trans_a"], p["trans_b"], p["alpha"], p["beta"])


# --- BLAS semantics on finite inputs, every layout ------------------------------------

@pytest.mark.parametrize("backend,info", KERNELS, ids=KERNEL_IDS)
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_sgemm_matches_float64(backend, info, data):
    p = data.draw(problems(info))
    M, N, K = p["M"], p["N"], p["K"]
    note(str(p))
    rng = np.random.default_rng(p["seed"])
    a_shape = (K, M) if p["trans_a"] else (M, K)
    b_shape = (N, K) if p["trans_b"] else (K, N)
    a0, b0, c0 = uniform(rng, a_shape), uniform(rng, b_shape), uniform(rng, (M, N))
    A, bufA, _ = place(a0, p["layouts"][0])
    B, bufB, _ = place(b0, p["layouts"][1])
    bufA0, bufB0 = bufA.copy(), bufB.copy()
    if p["give_c"]:
        if p["beta"] == 0.0:
            c0[...] = np.nan  # beta == 0 must not read C
        C, bufC, maskC = place(c0, p["layouts"][2])
        bufC0 = bufC.copy()
    else:
        C = None

    if not accepts(info, p):
        with pytest.raises(errors.ConstraintError, match=info.name):
            call(info, backend, A, B, C, p)
        return
    out = call(info, backend, A, B, C, p)

    what = f"{backend}/{info.name} {p}"
    if C is not None:
        assert out is C, "sgemm must return the C it was given"
        # Nothing outside C's view was touched.
        np.testing.assert_array_equal(bufC[~maskC], bufC0[~maskC], err_msg=f"{what}: wrote outside C")
    assert out.shape == (M, N) and out.dtype == np.float32
    # Inputs are never written.
    np.testing.assert_array_equal(bufA, bufA0, err_msg=f"{what}: A was modified")
    np.testing.assert_array_equal(bufB, bufB0, err_msg=f"{what}: B was modified")
    args = (a0, b0, c0, p["alpha"], p["beta"], p["trans_a"], p["trans_b"])
    check_close(out, reference(*args), info, K, what, term_bound(*args))


# --- NaN and Inf: reference-BLAS propagation ------------------------------------------

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0], np.float32)


def sprinkle(rng, x, count):
    """Put NaN, +Inf, -Inf or 0 at `count` random positions of x (in place)."""
    if x.size == 0:
        return
    for _ in range(count):
        i = rng.integers(0, x.shape[0])
        j = rng.integers(0, x.shape[1])
        x[i, j] = SPECIALS[rng.integers(0, len(SPECIALS))]


@pytest.mark.parametrize("backend,info", KERNELS, ids=KERNEL_IDS)
@settings(max_examples=max(10, settings().max_examples // 3))
@given(M=st.integers(0, 9), N=st.integers(0, 9), K=st.integers(0, 9), trans_a=st.booleans(),
       trans_b=st.booleans(), alpha=st.sampled_from([0.0, 1.0, -1.0, 2.5]),
       beta=st.sampled_from([0.0, 1.0, -0.5]), counts=st.tuples(*[st.integers(0, 3)] * 3),
       zero_rows=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_nan_inf_propagate_like_reference_blas(backend, info, M, N, K, trans_a, trans_b, alpha, beta,
                                               counts, zero_rows, seed):
    if is_fast_math(info):
        pytest.skip(f"{info.name} is built with -ffast-math, which waives IEEE NaN/Inf semantics "
                    "(documented in docs/reliability.md)")
    M, N, K, trans_a, trans_b, alpha, beta = fit_to_constraints(info, M, N, K, trans_a, trans_b, alpha, beta)
    assume(info.accepts(M, N, K, trans_a, trans_b, alpha, beta))
    rng = np.random.default_rng(seed)
    a = uniform(rng, (K, M) if trans_a else (M, K))
    b = uniform(rng, (N, K) if trans_b else (K, N))
    c = uniform(rng, (M, N))
    sprinkle(rng, a, counts[0])
    sprinkle(rng, b, counts[1])
    sprinkle(rng, c, counts[2])
    if zero_rows and K:
        # Whole zero rows of op(B) meet Inf in A: a kernel that skips a*b when a or b is 0
        # (the old reference BLAS did) would miss the NaN of Inf * 0.
        bk = b.T if trans_b else b
        bk[rng.integers(0, K)] = 0.0
        ak = a.T if trans_a else a
        if M:
            ak[rng.integers(0, M), rng.integers(0, K)] = np.inf
    ref = ieee_reference(a, b, c, alpha, beta, trans_a, trans_b)
    C = c.copy()
    fastgemm.sgemm(a, b, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                   kernel=info.name, backend=backend)
    what = f"{backend}/{info.name}: M={M} N={N} K={K} ta={trans_a} tb={trans_b} alpha={alpha} beta={beta}"
    got = C.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"{what}: NaN pattern\n{a}\n{b}\n{c}")
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref), err_msg=f"{what}: +Inf pattern")
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref), err_msg=f"{what}: -Inf pattern")
    finite = np.isfinite(ref)
    with np.errstate(invalid="ignore"):
        bound = term_bound(np.nan_to_num(a), np.nan_to_num(b), np.nan_to_num(c), alpha, beta, trans_a, trans_b)
    check_close(C[finite], ref[finite], info, K, what, bound[finite])


# --- C sharing memory with A or B -------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@given(n=st.integers(1, 24), kind=st.sampled_from(["A_is_C", "B_is_C", "A_is_C_T", "shifted", "all_same"]),
       alpha=scalars, beta=scalars, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_c_aliasing_inputs_is_handled(backend, n, kind, alpha, beta, seed, data):
    """C overlapping A or B gives the result of the same call on copies of the inputs."""
    infos = [k for b, k in KERNELS if b == backend]
    info = data.draw(st.sampled_from(infos + [None]), label="kernel (None = auto)")
    kernel = "auto" if info is None else info.name
    if info is not None:
        m2, n2, k2, _, _, alpha, beta = fit_to_constraints(info, n, n, n, False, False, alpha, beta)
        n = max(m2, n2, k2)
        assume(info.accepts(n, n, n, False, False, alpha, beta))
    rng = np.random.default_rng(seed)
    buf = uniform(rng, (n + 1, n + 1))  # (n + 1)^2: "shifted" overlaps by all but one row/column
    X = buf[:n, :n]
    other = uniform(rng, (n, n))
    if kind == "A_is_C":
        A, B, C = X, other, X
    elif kind == "B_is_C":
        A, B, C = other, X, X
    elif kind == "A_is_C_T":
        A, B, C = X.T, other, X
    elif kind == "shifted":  # partial overlap: C is A moved by one row and column
        A, B, C = buf[:n, :n], other, buf[1:, 1:]
    else:
        A, B, C = X, X, X
    A0, B0, C0 = A.copy(), B.copy(), C.copy()
    expected = reference(A0, B0, C0, alpha, beta, False, False)
    out = fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, kernel=kernel, backend=backend)
    assert out is C
    check_close(C, expected, info or fastgemm.kernels(backend)[0], n, f"{backend}/{kernel} {kind}",
                term_bound(A0, B0, C0, alpha, beta, False, False))


@pytest.mark.parametrize("backend", BACKENDS)
def test_c_overlapping_itself_is_refused(backend):
    base = np.zeros(64, np.float32)
    C = np.lib.stride_tricks.as_strided(base, shape=(4, 4), strides=(4, 4))  # rows share elements
    A, B = np.ones((4, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(errors.ShapeError, match="overlaps itself"):
        fastgemm.sgemm(A, B, C, backend=backend)


# --- Constraints: accepts() and sgemm agree, whatever the layout ------------------------

CONSTRAINED = [(b, k) for b, k in KERNELS if k.constraints]


@pytest.mark.skipif(not CONSTRAINED, reason="no available kernel registers constraints")
@pytest.mark.parametrize("backend,info", CONSTRAINED, ids=[f"{b}/{k.name}" for b, k in CONSTRAINED])
@given(M=st.integers(0, 130), N=st.integers(0, 130), K=st.integers(0, 130), trans_a=st.booleans(),
       trans_b=st.booleans(), alpha=st.sampled_from([1.0, 2.0, 0.0]), beta=st.sampled_from([0.0, 1.0]),
       layout_c=st.sampled_from(["C", "F"]), layout_a=st.sampled_from(["C", "F"]))
def test_constraints_decide_accept_or_raise(backend, info, M, N, K, trans_a, trans_b, alpha, beta, layout_c,
                                             layout_a):
    rng = np.random.default_rng(M * 1000003 + N * 1009 + K)
    a0 = uniform(rng, (K, M) if trans_a else (M, K))
    b0 = uniform(rng, (N, K) if trans_b else (K, N))
    c0 = uniform(rng, (M, N))
    A = place(a0, layout_a)[0]
    C = place(c0, layout_c)[0]
    kw = dict(alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, kernel=info.name, backend=backend)
    if info.accepts(M, N, K, trans_a, trans_b, alpha, beta):
        fastgemm.sgemm(A, b0, C, **kw)
        args = (a0, b0, c0, alpha, beta, trans_a, trans_b)
        check_close(C, reference(*args), info, K, f"{info.name}", term_bound(*args))
    else:
        with pytest.raises(errors.ConstraintError, match=info.name) as e:
            fastgemm.sgemm(A, b0, C, **kw)
        assert "requires" in str(e.value)

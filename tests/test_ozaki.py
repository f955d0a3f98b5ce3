"""Precision class fp32_ozaki on the CPU: the scheme of src/ozaki/ozaki_scheme.hpp through
its reference kernel (cpu/ozaki_reference), which the cuda rung must match bit for bit.

- A numpy model of the scheme (scaling, exact integer product, unscaling, certificate)
  written from docs/ozaki.md predicts the kernel's output exactly: this checks the residue
  products, the chunked int32 sums and the CRT reconstruction without trusting them.
- Accuracy against float64 on the two input classes of the class's guarantee, uniform(-1, 1)
  and magnitudes spanning 2^-20..2^20 within rows and columns: no worse than OpenBLAS SGEMM
  on uniform inputs, within twice it on wide-range inputs.
- The fallback rules: lines with NaN or Inf, ranges the moduli cannot carry (rows of A and
  columns of B large where the other is small), cancellation, values near the ends of FP32's
  range and K beyond the int32 chunk never give a result outside the class's tolerance.
- Edge shapes, transposes, alpha and beta, poisoned C, thread counts."""

import math

import numpy as np
import pytest

import fastgemm
from fastgemm import _fastgemm
from conftest import assert_matches, ieee_reference, rand, reference

KERNEL = "ozaki_reference"
CPU = {k.name: k for k in fastgemm.kernels("cpu")}
HAVE_BLAS = "openblas" in CPU

MODULI = [256, 255, 253, 251, 247, 241, 239]
P = math.prod(MODULI)
REGION = 64
U = 2.0**-24


def wide(rng, *shape):
    """Random signs, magnitudes log-uniform over [2^-20, 2^20]: every row and column spans
    the whole range."""
    return (rng.choice([-1.0, 1.0], shape) * np.exp2(rng.uniform(-20.0, 20.0, shape))).astype(np.float32)


def ozaki(A, B, **kw):
    return fastgemm.sgemm(A, B, kernel=KERNEL, backend="cpu", **kw)


def rel_error(C, ref):
    return float(np.linalg.norm(C.astype(np.float64) - ref) / np.linalg.norm(ref))


# --- The scheme restated in numpy -----------------------------------------------------------

def norm_bound(K):
    half_p = float(P) * 0.5 * (1.0 - 2.0**-12)
    return math.sqrt(half_p) * (1.0 - 2.0**-20) - math.sqrt(K)


def line_scales(lines, K):
    """Per line (rows of `lines`, K long): factor f, its inverse, the scaled integers and the
    bound terms (e, n), as docs/ozaki.md defines them."""
    x = lines.astype(np.float64)
    pad = (-K) % 32
    squares = np.pad(x * x, ((0, 0), (0, pad))).reshape(len(x), -1, 32)
    partial = np.cumsum(squares, axis=1)[:, -1, :].copy()  # partial p: k = p, p + 32, ... in order
    for w in (16, 8, 4, 2, 1):
        partial[:, :w] += partial[:, w:2 * w]
    sums = partial[:, 0]
    R = norm_bound(K)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = R / np.sqrt(sums)
    f = (f.view(np.int64) & ~np.int64((1 << 24) - 1)).view(np.float64)
    f = np.where(sums == 0, 1.0, f)
    bad = ~(sums <= 1e300)
    f = np.where(bad, np.nan, f)
    inverse = 1.0 / f
    scaled = x * np.where(bad, 1.0, f)[:, None]
    ints = np.rint(scaled)
    inexact = (ints != scaled).any(axis=1)
    e = np.where(inexact, 0.5 * inverse, 0.0)
    n = np.abs(ints).sum(axis=1) * inverse
    return ints.astype(np.int64), inverse, e, n, bad


def model(A, B):
    """(result, certified region mask) of the scheme for C = A @ B (alpha 1, beta 0)."""
    M, K = A.shape
    N = B.shape[1]
    ai, ainv, ae, an, abad = line_scales(A, K)
    bi, binv, be, bn, bbad = line_scales(B.T, K)
    exact = ai @ bi.T  # |A' B'| < P/2 < 2^63: int64 is exact
    with np.errstate(invalid="ignore", over="ignore"):
        result = ((exact.astype(np.float64) * ainv[:, None]) * binv[None, :]).astype(np.float32)
        bound = ae[:, None] * (K * be[None, :] + bn[None, :]) + an[:, None] * be[None, :] + 2.0**-149
    tau = (K - 1) * U * (1 - 2.0**-20)
    certified = np.zeros((-(-M // REGION), -(-N // REGION)), bool)
    margin = np.full(certified.shape, np.inf)
    for r in range(certified.shape[0]):
        for c in range(certified.shape[1]):
            rows, cols = slice(r * REGION, (r + 1) * REGION), slice(c * REGION, (c + 1) * REGION)
            with np.errstate(invalid="ignore", over="ignore"):
                sc = float((result[rows, cols].astype(np.float64) ** 2).sum())
                sb = float((bound[rows, cols] ** 2).sum())
            certified[r, c] = sc <= 1e300 and sb <= tau * tau * sc
            margin[r, c] = math.sqrt(sb / sc) / tau if sc > 0 and sc <= 1e300 and tau > 0 else np.inf
    return result, certified, margin


def expand(mask, M, N):
    return np.kron(mask, np.ones((REGION, REGION), bool))[:M, :N]


# --- The kernel --------------------------------------------------------------------------------

def test_registered_as_a_reference_of_its_class():
    k = CPU[KERNEL]
    assert k.precision == "fp32_ozaki"
    assert not k.auto_candidate, "a reference kernel must not be chosen by kernel='auto'"
    assert k.bench_flops_cap < float("inf")
    assert k.params["moduli"] == len(MODULI) and k.params["region"] == REGION
    assert k.source == "src/cpu/ozaki_reference.cpp"


def test_class_tolerance_is_twice_fp32():
    for K in (1, 100, 8192):
        assert _fastgemm.tolerance_for("fp32_ozaki", K) == pytest.approx(2 * _fastgemm.tolerance_for("fp32", K))


# --- The cuda rung's integer arithmetic, modelled in numpy with its IEEE operations -------------

def test_one_fma_with_the_float_reciprocal_gives_the_symmetric_residue():
    """ozaki_residue.cuh reduces y mod an odd m with no correction step: q = rint(y fl(1/m))
    (one FMA with 1.5 x 2^23) must be round(y / m) for every |y| < 2^22, so that y - q m is
    the canonical residue in [-(m-1)/2, (m-1)/2]. Checked for every such y."""
    y = np.arange(-(1 << 22) + 1, 1 << 22, dtype=np.float64)
    for m in MODULI[1:]:
        inv = np.float64(np.float32(1.0) / np.float32(m))  # IEEE FP32 division, as on the device
        r = y - np.rint(y * inv) * m  # y * inv is exact in FP64; rint rounds it as the FMA does
        canonical = np.mod(y + (m - 1) // 2, m) - (m - 1) // 2
        assert np.array_equal(r, canonical), m


def _fmaf(a, b, c):
    """fmaf on float32 arrays: the FP64 product and sum are exact for these operands."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def test_quotient_from_biased_residues_is_the_references(rng):
    """The rung rebuilds C' from residues biased to u = r + 128 (crt_from_biased in
    15_ozaki_int8.cu); its FP32 quotient estimate must round to the true quotient of
    S = sum r_l E_l by P, as crt_reconstruct's does, for every C' the scheme can produce
    (|C'| < P/2 (1 - 2^-12)). 200000 values of C', both ends of the range included."""
    from fractions import Fraction
    E = [(P // m) * pow(P // m, -1, m) % P for m in MODULI]
    hi = [np.float32(round(Fraction(e, P) * 4096) / 4096) for e in E]
    lo = [np.float32(float(Fraction(e, P) - Fraction(float(h)))) for e, h in zip(E, hi)]
    limit = int(P // 2 * (1 - 2.0**-12))
    C = np.concatenate([rng.integers(-limit, limit, 200000, dtype=np.int64), [-limit, limit, 0, 1, -1]])
    zero = np.zeros(len(C), np.float32)
    ref_exact, ref_rest, u_exact, u_rest = zero, zero, zero, zero
    S = [0] * len(C)
    for m, e, h, l in zip(MODULI, E, hi, lo):
        r = (np.mod(C + m // 2, m) - m // 2) if m == 256 else (np.mod(C + (m - 1) // 2, m) - (m - 1) // 2)
        rf, uf = r.astype(np.float32), (r + 128).astype(np.float32)
        ref_exact, ref_rest = _fmaf(rf, np.float32(h), ref_exact), _fmaf(rf, np.float32(l), ref_rest)
        u_exact, u_rest = _fmaf(uf, np.float32(h), u_exact), _fmaf(uf, np.float32(l), u_rest)
        S = [s + int(ri) * e for s, ri in zip(S, r)]
    bias_hi = np.float32(sum(np.float32(128.0) * h for h in hi))
    bias_lo = np.float32(sum(128.0 * float(l) for l in lo))
    q_ref = np.rint(ref_exact + ref_rest)
    q_dev = np.rint((u_exact - bias_hi) + (u_rest - bias_lo))
    q_true = np.array([(s - int(c)) // P for s, c in zip(S, C)], dtype=np.float64)
    assert np.array_equal(q_ref, q_true) and np.array_equal(q_dev, q_true)


@pytest.mark.parametrize("inputs", ["uniform", "wide"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (130, 67, 300), (70, 129, 1025)], ids=lambda s: "x".join(map(str, s)))
def test_matches_the_numpy_model_bit_for_bit(rng, inputs, shape):
    """Where the model certifies (every region, on these inputs, by a wide margin), the kernel
    returns the model's bits: the exact integer product went through residues, int32 sums and
    the CRT without a single bit lost."""
    M, N, K = shape
    gen = rand if inputs == "uniform" else wide
    A, B = gen(rng, M, K), gen(rng, K, N)
    expected, certified, margin = model(A, B)
    assert certified.all() and margin.max() < 0.5, f"certificate margins {margin.max():.3f}"
    np.testing.assert_array_equal(ozaki(A, B), expected)


@pytest.mark.parametrize("trans_a,trans_b", [(False, True), (True, False), (True, True)])
def test_model_agreement_holds_for_every_transpose(rng, trans_a, trans_b):
    M, N, K = 67, 90, 211
    A, B = rand(rng, M, K), wide(rng, K, N)
    expected, certified, _ = model(A, B)
    assert certified.all()
    a = np.ascontiguousarray(A.T) if trans_a else A
    b = np.ascontiguousarray(B.T) if trans_b else B
    np.testing.assert_array_equal(ozaki(a, b, trans_a=trans_a, trans_b=trans_b), expected)


# --- Accuracy on the classes the guarantee names ------------------------------------------------

SIZES = [(128, 128, 256), (128, 128, 1024), (96, 80, 4096)]


@pytest.mark.skipif(not HAVE_BLAS, reason="no BLAS baseline in this build (needs scipy-openblas32)")
@pytest.mark.parametrize("shape", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_uniform_inputs_no_worse_than_openblas(rng, shape):
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    ref = reference(A, B)
    err, blas = rel_error(ozaki(A, B), ref), rel_error(fastgemm.sgemm(A, B, kernel="openblas", backend="cpu"), ref)
    assert err <= blas, f"ozaki {err:.3e}, OpenBLAS {blas:.3e}"


@pytest.mark.skipif(not HAVE_BLAS, reason="no BLAS baseline in this build (needs scipy-openblas32)")
@pytest.mark.parametrize("shape", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_wide_range_inputs_within_twice_openblas(rng, shape):
    M, N, K = shape
    A, B = wide(rng, M, K), wide(rng, K, N)
    ref = reference(A, B)
    err, blas = rel_error(ozaki(A, B), ref), rel_error(fastgemm.sgemm(A, B, kernel="openblas", backend="cpu"), ref)
    assert err <= 2 * blas, f"ozaki {err:.3e}, OpenBLAS {blas:.3e}"
    assert_matches(ozaki(A, B), ref, "fp32_ozaki", K, "wide range")


# --- Fallback rules -------------------------------------------------------------------------------

def test_ranges_the_moduli_cannot_carry_are_recomputed_in_fp32(rng):
    """A = Y D, B = D^-1 X with D spanning 2^-40..2^40 along k: every product a b is moderate,
    but each row of A and column of B is dominated by other k than the products that matter,
    so the scaled integers lose them. The certificate sees it and every region is recomputed
    in IEEE FP32: the result is FP32-accurate, not the scheme's 80% error."""
    M, N, K = 96, 130, 257
    d = np.exp2(rng.uniform(-40.0, 40.0, K))
    A = (rand(rng, M, K) * d[None, :]).astype(np.float32)
    B = (rand(rng, K, N) / d[:, None]).astype(np.float32)
    scheme, certified, _ = model(A, B)
    ref = reference(A, B)
    assert not certified.any() and rel_error(scheme, ref) > 1e-2  # the scheme alone would be wrong
    assert_matches(ozaki(A, B), ref, "fp32", K, "misaligned ranges")


def within_fp32_bound(C, A, B, what):
    """|C - AB| <= fp32 tolerance x (|A||B|) elementwise: the classical bound, which holds
    where the sum cancels too (there no bound relative to the result can)."""
    K = A.shape[1]
    terms = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    err = np.abs(C.astype(np.float64) - A.astype(np.float64) @ B.astype(np.float64))
    tol = _fastgemm.tolerance_for("fp32", K)
    assert np.all(err <= tol * terms), f"{what}: worst {np.max(err / terms):.3e} of the terms, tolerance {tol:.3e}"


def test_cancellation_is_recomputed_not_certified(rng):
    """C = A B with the second half of each row of A the negated first half and B's two halves
    equal: every element of C is exactly zero. No bound relative to the result holds there,
    so the certificate rejects every region and IEEE FP32 recomputes them."""
    M, K = 70, 300
    A = rand(rng, M, K)
    A[:, K // 2:] = -A[:, :K // 2]
    X = rand(rng, K // 2, 64)
    B = np.vstack([X, X]).astype(np.float32)
    _, certified, _ = model(A, B)
    assert not certified.any()
    within_fp32_bound(ozaki(A, B), A, B, "exact cancellation")


def test_one_region_falls_back_the_rest_is_the_scheme(rng):
    """Cancellation confined to one 64 x 64 region: only that region is recomputed; the others
    carry the scheme's bits."""
    M, N, K = 128, 128, 200
    A, B = rand(rng, M, K), rand(rng, K, N)
    B[K // 2:, 64:] = B[: K // 2, 64:]
    A[64:, K // 2:] = -A[64:, : K // 2]  # rows 64.. of A cancel against columns 64.. of B
    expected, certified, _ = model(A, B)
    assert certified.tolist() == [[True, True], [True, False]]
    C = ozaki(A, B)
    np.testing.assert_array_equal(C[:64], expected[:64])
    np.testing.assert_array_equal(C[64:, :64], expected[64:, :64])
    within_fp32_bound(C[64:, 64:], A[64:], B[:, 64:], "the cancelling region")


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 2.0)])
def test_nan_and_inf_lines_follow_ieee(rng, alpha, beta):
    """A NaN in a row of A, an Inf in a column of B and an Inf meeting a zero: the lines that
    hold them cannot be scaled, so their regions are recomputed in IEEE FP32, and NaN and Inf
    land where reference BLAS puts them; everything else keeps the class's accuracy."""
    M, N, K = 140, 150, 90
    A, B, C0 = rand(rng, M, K), rand(rng, K, N), rand(rng, M, N)
    A[3, 17] = np.nan
    B[40, 100] = np.inf
    A[77, 40] = 0.0  # Inf * 0 = NaN in C[77, 100]
    A[120, 5] = -np.inf
    C = C0.copy()
    ozaki(A, B, C=C, alpha=alpha, beta=beta)
    ref = ieee_reference(A, B, C0, alpha, beta, False, False)
    np.testing.assert_array_equal(np.isnan(C), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(C), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(C), np.isneginf(ref))
    finite = np.isfinite(ref)
    clean = reference(np.nan_to_num(A, posinf=0, neginf=0), np.nan_to_num(B, posinf=0, neginf=0), C0, alpha, beta)
    assert_matches(C[finite], clean[finite], "fp32_ozaki", K, "finite part")


@pytest.mark.parametrize("scale_a,scale_b", [(2.0**100, 2.0**-100), (2.0**-120, 2.0**-10), (2.0**60, 2.0**60),
                                             (2.0**-140, 2.0**100), (2.0**127, 2.0**-30)],
                         ids=["big-small", "tiny", "big-big", "subnormal-A", "near-max"])
def test_values_near_the_ends_of_the_range(rng, scale_a, scale_b):
    """Scaling is exact (FP64) and the integers do not depend on the operands' exponent, so
    inputs near FLT_MAX, tiny and subnormal inputs keep the class's accuracy."""
    M, N, K = 70, 66, 129
    A = (rand(rng, M, K) * np.float64(scale_a)).astype(np.float32)
    B = (rand(rng, K, N) * np.float64(scale_b)).astype(np.float32)
    assert_matches(ozaki(A, B), reference(A, B), "fp32_ozaki", K, f"A x {scale_a:g}, B x {scale_b:g}")


def test_results_that_overflow_take_the_ieee_path(rng):
    """Positive products of 2^127-sized values overflow every partial sum: IEEE FP32 gives Inf,
    and so does the kernel, whose non-finite results are never certified. Column 0 of B is
    small, so its results are finite; they share the regions that are recomputed and keep
    FP32 accuracy."""
    M, N, K = 40, 30, 16
    A = (rng.uniform(0.5, 1.0, (M, K)) * 2.0**127).astype(np.float32)
    B = rng.uniform(0.5, 1.0, (K, N)).astype(np.float32)
    B[:, 0] *= np.float32(2.0**-30)
    C = ozaki(A, B)
    assert np.all(np.isposinf(C[:, 1:]))
    assert_matches(C[:, :1], reference(A, B[:, :1]), "fp32", K, "finite column")


def test_k_beyond_the_exact_int32_chunk(rng):
    """K = 2^17 + 4099: residue products of the odd moduli would overflow int32 in one sum
    (127^2 K > 2^31); the kernel reduces between chunks of 2^17 and the integer product stays
    exact: the model's int64 product gives the same bits. (Equal inputs round their scaled
    integers the same way, so the scheme's error here is the aligned worst case, sqrt(K)/R,
    still far inside the class.)"""
    K = (1 << 17) + 4099
    A = np.ones((3, K), np.float32)
    B = np.ones((K, 2), np.float32)
    B[::3, 1] = rand(rng, len(B[::3, 1]))
    expected, certified, _ = model(A, B)
    assert certified.all()
    C = ozaki(A, B)
    np.testing.assert_array_equal(C, expected)
    assert_matches(C, reference(A, B), "fp32_ozaki", K, "K > 2^17")


def test_long_k_random_inputs_keep_the_accuracy(rng):
    M, N, K = 3, 5, (1 << 17) + 1000
    A, B = rand(rng, M, K), wide(rng, K, N)
    assert_matches(ozaki(A, B), reference(A, B), "fp32_ozaki", K, "K > 2^17")


def test_k_of_one_is_one_fp32_rounding(rng):
    """One product cannot be carried better than FP32's single rounding: K = 1 always takes
    the IEEE path, so C is exactly fl(a b)."""
    A, B = rand(rng, 9, 1), rand(rng, 1, 7)
    np.testing.assert_array_equal(ozaki(A, B), A * B)


# --- Shapes, layouts, scalars ------------------------------------------------------------------

EDGE = [(0, 5, 7), (5, 0, 7), (4, 6, 0), (1, 1, 1), (1, 97, 13), (97, 1, 13), (13, 17, 19), (65, 63, 129),
        (127, 129, 64)]


@pytest.mark.parametrize("shape", EDGE, ids=lambda s: "x".join(map(str, s)))
def test_edge_shapes_with_poisoned_c(rng, shape):
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, np.float32)  # beta = 0: never read
    out = ozaki(A, B, C=C)
    assert out is C
    assert_matches(C, reference(A, B), "fp32_ozaki", K, f"{shape}")


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 1.0), (2.0, -1.5)])
def test_transposes_and_scalars(rng, trans_a, trans_b, alpha, beta):
    M, N, K = 70, 65, 131
    A = rand(rng, K, M) if trans_a else rand(rng, M, K)
    B = rand(rng, N, K) if trans_b else rand(rng, K, N)
    C0 = rand(rng, M, N)
    C = C0.copy()
    ozaki(A, B, C=C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    assert_matches(C, reference(A, B, C0, alpha, beta, trans_a, trans_b), "fp32_ozaki", K,
                   f"ta={trans_a} tb={trans_b} alpha={alpha} beta={beta}")


def test_strided_views_and_leading_dimensions(rng):
    """Padded rows and column-major storage reach the kernel as leading dimensions and
    transposes; the bits do not depend on the layout."""
    A, B = rand(rng, 90, 75), rand(rng, 75, 66)
    plain = ozaki(A, B)
    padded = np.zeros((90, 80), np.float32)
    padded[:, :75] = A
    np.testing.assert_array_equal(ozaki(padded[:, :75], np.asfortranarray(B)), plain)


def test_the_same_bits_for_any_thread_count(rng):
    A, B = wide(rng, 150, 140), rand(rng, 140, 130)
    saved = fastgemm.get_num_threads()
    try:
        fastgemm.set_num_threads(1)
        one = ozaki(A, B)
        fastgemm.set_num_threads(max(2, saved))
        many = ozaki(A, B)
    finally:
        fastgemm.set_num_threads(saved)
    np.testing.assert_array_equal(one, many)


# --- The Metal twin (shaders/15_ozaki_int8.metal) through metal-emu -----------------------------

EMU = {k.name: k for k in fastgemm.kernels("metal-emu")} if "metal-emu" in {
    b.name for b in fastgemm.backends() if b.available} else {}
TWIN = "ozaki_int8_32x32"
needs_emu = pytest.mark.skipif(TWIN not in EMU, reason="metal-emu backend not built")


def twin(A, B, **kw):
    return fastgemm.sgemm(A, B, kernel=TWIN, backend="metal-emu", **kw)


@needs_emu
def test_metal_twin_is_in_the_metal_ladder():
    k = EMU[TWIN]
    assert k.precision == "fp32_ozaki" and k.ladder_step == 15
    assert k.source == "shaders/15_ozaki_int8.metal" and not k.constraints
    assert k.params["moduli"] == len(MODULI)


@needs_emu
def test_metal_twin_is_exact_where_the_scaled_integers_are():
    """Integer inputs scaled by powers of two stay integers: no rounding anywhere in the
    scheme, so every tile certifies and C is the exactly rounded product, where FP32 sums
    (partial sums past 2^24) round on the way."""
    rng = np.random.default_rng(15)
    M, N, K = 70, 45, 512
    A = rng.integers(-1024, 1025, (M, K)).astype(np.float32)
    B = rng.integers(-1024, 1025, (K, N)).astype(np.float32)
    exact = A.astype(np.int64) @ B.astype(np.int64)
    C = twin(A, B)
    np.testing.assert_array_equal(C, exact.astype(np.float32))
    assert np.any(C != A @ B)  # the exact result is not what FP32 sums give


@needs_emu
@pytest.mark.skipif(not HAVE_BLAS, reason="no BLAS baseline in this build (needs scipy-openblas32)")
def test_metal_twin_accuracy_on_both_input_classes(rng):
    M, N, K = 96, 80, 1024
    for gen, factor in ((rand, 1.0), (wide, 2.0)):
        A, B = gen(rng, M, K), gen(rng, K, N)
        ref = reference(A, B)
        err = rel_error(twin(A, B), ref)
        blas = rel_error(fastgemm.sgemm(A, B, kernel="openblas", backend="cpu"), ref)
        assert err <= factor * blas, (gen.__name__, err, blas)


@needs_emu
def test_metal_twin_fallback_rules(rng):
    M, N, K = 70, 66, 129
    d = np.exp2(rng.uniform(-40.0, 40.0, K))
    A = (rand(rng, M, K) * d[None, :]).astype(np.float32)
    B = (rand(rng, K, N) / d[:, None]).astype(np.float32)
    assert_matches(twin(A, B), reference(A, B), "fp32", K, "misaligned ranges")
    A, B = rand(rng, M, K), rand(rng, K, N)
    A[3, 17], B[40, 50], A[60, 40] = np.nan, np.inf, -np.inf
    C = twin(A, B)
    ref = ieee_reference(A, B, None, 1.0, 0.0, False, False)
    np.testing.assert_array_equal(np.isnan(C), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(C), np.isinf(ref))
    finite = np.isfinite(ref)
    clean = reference(np.nan_to_num(A, posinf=0, neginf=0), np.nan_to_num(B, posinf=0, neginf=0))
    assert_matches(C[finite], clean[finite], "fp32_ozaki", K, "finite part")
    A1, B1 = rand(rng, 9, 1), rand(rng, 1, 7)
    np.testing.assert_array_equal(twin(A1, B1), A1 * B1)  # K = 1: one FP32 rounding
    big = (rng.uniform(0.5, 1.0, (20, 16)) * 2.0**127).astype(np.float32)
    assert np.all(np.isposinf(twin(big, rng.uniform(0.5, 1.0, (16, 30)).astype(np.float32))))


# --- benchmarks/gemmul8_compare.py without a GPU -------------------------------------------------

BENCH_DIR = __import__("pathlib").Path(__file__).resolve().parent.parent / "benchmarks"


def test_gemmul8_compare_without_a_gpu_exits_2_with_one_line(tmp_path):
    import subprocess
    import sys

    status = next(b for b in fastgemm.backends() if b.name == "cuda") if "cuda" in {
        b.name for b in fastgemm.backends()} else None
    if status is not None and status.available:
        pytest.skip("a CUDA GPU is usable here: the no-GPU exit cannot be reached")
    out = subprocess.run([sys.executable, str(BENCH_DIR / "gemmul8_compare.py"), "--gemmul8", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gemmul8_compare: ") and out.stdout == "", out.stderr
    assert "GPU" in lines[0] or "cuda backend" in lines[0]


def test_gemmul8_compare_build_only_names_what_is_missing(tmp_path):
    """--build-only needs no GPU: a folder that is not a GEMMul8 checkout, or a cuBLAS
    include folder without cublas_v2.h, ends it with one line naming the argument."""
    import subprocess
    import sys

    script = str(BENCH_DIR / "gemmul8_compare.py")
    checkout = tmp_path / "GEMMul8"
    for args, argument in ((["--gemmul8", str(tmp_path / "empty")], "not a GEMMul8 checkout"),
                           (["--gemmul8", str(tmp_path), "--cublas-include", str(tmp_path)], "--cublas-include")):
        if argument == "--cublas-include":
            (checkout / "include").mkdir(parents=True)
            (checkout / "include" / "gemmul8.hpp").write_text("// a header, for the checkout test\n")
        out = subprocess.run([sys.executable, script, "--build-only"] + args, capture_output=True, text=True,
                             timeout=120)
        lines = [line for line in out.stderr.splitlines() if line.strip()]
        assert out.returncode == 2 and out.stdout == "", out.stderr
        assert len(lines) == 1 and lines[0].startswith("gemmul8_compare: ") and argument in lines[0], out.stderr


def test_gemmul8_compare_rows_are_a_shape_suite():
    """The --json document renders with benchmarks/results_table.py as a shape suite, the
    ratios against cuBLAS SGEMM taken from the times."""
    import importlib.util
    import sys

    def load(name):
        spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    compare, results_table = load("gemmul8_compare"), load("results_table")
    measured = [{"n": 4096, "inputs": "uniform",
                 "libraries": {"cublas": {"ms": 2.7, "rel_err": 1.2e-6},
                               "fastgemm ozaki_int8_128x256": {"ms": 0.9, "rel_err": 1.5e-7},
                               "GEMMul8 7 moduli fast": {"ms": 1.35, "rel_err": 6.7e-7}}}]
    doc = compare.suite_rows(measured)
    assert results_table.detect_format(doc, "test") == "suite"
    assert doc["rows"][0]["libraries"]["fastgemm ozaki_int8_128x256"]["ratio"] == pytest.approx(3.0)
    backend, lines = results_table.render_suite(doc, "test")
    text = "\n".join(lines)
    assert backend == "cuda" and "GEMMul8 7 moduli fast" in text and "4096^3 uniform" in text

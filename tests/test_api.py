"""The public Python contract: layouts, in-place C, zero sizes, auto selection, errors."""

import numpy as np
import pytest

import fastgemm
from fastgemm import _fastgemm
from fastgemm.errors import ConstraintError
from conftest import assert_matches, rand, reference


def test_version_matches_package_metadata():
    from importlib.metadata import version

    assert fastgemm.__version__ == version("fastgemm")


def test_default_call_returns_new_c_order_array(rng):
    A, B = rand(rng, 50, 30), rand(rng, 30, 20)
    C = fastgemm.sgemm(A, B)
    assert C.dtype == np.float32 and C.shape == (50, 20) and C.flags.c_contiguous
    assert_matches(C, reference(A, B), K=30)


@pytest.mark.parametrize("kernel", ["ikj", "transposed_b", "openblas", "auto"])
def test_fortran_order_operands_and_output(kernel, rng):
    if kernel == "openblas" and kernel not in {k.name for k in fastgemm.kernels("cpu")}:
        pytest.skip("built without a BLAS baseline")
    A = np.asfortranarray(rand(rng, 23, 19))
    B = np.asfortranarray(rand(rng, 19, 41))
    C0 = np.asfortranarray(rand(rng, 23, 41))
    C = C0.copy(order="F")
    out = fastgemm.sgemm(A, B, C, alpha=0.5, beta=2.0, kernel=kernel, backend="cpu")
    assert out is C and C.flags.f_contiguous
    assert_matches(C, reference(A, B, C0, 0.5, 2.0), K=19)


def test_strided_and_negative_stride_views(rng):
    big_a = rand(rng, 60, 80)
    big_b = rand(rng, 90, 70)
    A = big_a[::2, 1:40:3]          # non-unit inner stride: one copy
    B = big_b[::-3, ::2][: A.shape[1]]  # negative outer stride
    C_big = np.zeros((40, 100), dtype=np.float32)
    C = C_big[5:5 + A.shape[0], 3:3 + B.shape[1]]  # a window: leading dimension 100
    fastgemm.sgemm(A, B, C, kernel="ikj", backend="cpu")
    assert_matches(C, reference(A, B), K=A.shape[1])
    # Nothing outside the window was touched.
    mask = np.ones_like(C_big, dtype=bool)
    mask[5:5 + A.shape[0], 3:3 + B.shape[1]] = False
    assert np.all(C_big[mask] == 0)


def test_non_contiguous_c_written_back(rng):
    A, B = rand(rng, 12, 7), rand(rng, 7, 10)
    C_big = rand(rng, 12, 30)
    C = C_big[:, ::3]
    C0 = C.copy()
    fastgemm.sgemm(A, B, C, beta=1.0, kernel="ikj", backend="cpu")
    assert_matches(C, reference(A, B, C0, 1.0, 1.0), K=7)


def test_c_aliasing_an_input_is_handled(rng):
    A = rand(rng, 16, 16)
    B = rand(rng, 16, 16)
    expected = reference(A, B, A, 1.0, 1.0)
    fastgemm.sgemm(A, B, A, beta=1.0, kernel="ikj", backend="cpu")  # C is A
    assert_matches(A, expected, K=16)


@pytest.mark.parametrize("M,N,K", [(0, 5, 3), (4, 0, 3), (4, 5, 0), (0, 0, 0)])
def test_zero_sized_dimensions_follow_blas(M, N, K, rng):
    A, B = rand(rng, M, K), rand(rng, K, N)
    C0 = rand(rng, M, N)
    for kernel in ("ijk", "ikj", "transposed_b", "auto"):
        C = C0.copy()
        fastgemm.sgemm(A, B, C, alpha=3.0, beta=0.5, kernel=kernel, backend="cpu")
        # K == 0: C = beta * C; M or N == 0: nothing to do.
        np.testing.assert_allclose(C, 0.5 * C0, rtol=1e-6)
    out = fastgemm.sgemm(A, B)
    assert out.shape == (M, N)
    assert np.all(out == 0)


def test_auto_kernel_is_measured_and_correct(rng):
    A, B = rand(rng, 96, 64), rand(rng, 64, 80)
    C = fastgemm.sgemm(A, B, kernel="auto", backend="cpu")
    assert_matches(C, reference(A, B), K=64)
    chosen = _fastgemm.select_kernel("cpu", 96, 80, 64, False, False, 1.0, 0.0)
    assert chosen.auto_candidate
    candidates = [k for k in fastgemm.kernels("cpu") if k.auto_candidate]
    if len(candidates) > 1:
        key = _fastgemm.shape_class("cpu", 96, 80, 64, False, False, 0.0)
        assert fastgemm._autotune.table().get(key) == chosen.name


@pytest.mark.parametrize("M,N,K", [(2, 2, 4), (300, 300, 300)])
def test_auto_tunes_a_product_that_overflows_float32(M, N, K):
    """Results beyond FP32's range are +-Inf in every IEEE kernel, while the tuning
    check's float64 reference stays finite: auto must still choose a kernel, and return
    the IEEE answer."""
    _fastgemm.clear_tuning_table()
    A = np.ones((M, K), np.float32)
    A[0, 0] = A[M - 1, 1] = 3e38
    B = A.T.copy()
    C = fastgemm.sgemm(A, B, kernel="auto", backend="cpu")
    expected = fastgemm.sgemm(A, B, kernel="packed", backend="cpu")
    np.testing.assert_array_equal(np.isinf(C), np.isinf(expected))
    assert np.isposinf(C[0, 0]) and np.isposinf(C[M - 1, M - 1])
    finite = np.isfinite(expected)
    np.testing.assert_allclose(C[finite], expected[finite], rtol=1e-5)


def test_backends_describe_themselves():
    names = {b.name: b for b in fastgemm.backends()}
    assert {"cpu", "metal", "metal-emu", "cuda"} <= set(names)
    assert names["cpu"].available and names["cpu"].device
    for b in names.values():
        assert b.available or b.reason, f"{b.name} is unavailable without a reason"


def test_kernel_info_fields():
    for k in fastgemm.kernels():
        assert k.name and k.backend and k.description and k.source
        assert k.precision in ("fp32", "tf32", "fp32x3", "fp32_ozaki")
        assert isinstance(k.constraints, list) and isinstance(k.params, dict)
    tiled = next(k for k in fastgemm.kernels("cpu") if k.name == "tiled_ikj_64")
    assert tiled.params == {"BS": 64} and tiled.ladder_step > 0


def test_threads_setting_round_trips():
    saved = fastgemm.get_num_threads()
    try:
        fastgemm.set_num_threads(1)
        assert fastgemm.get_num_threads() == 1
        with pytest.raises(ValueError):
            fastgemm.set_num_threads(0)
    finally:
        fastgemm.set_num_threads(saved)


def test_empty_is_page_aligned():
    x = fastgemm.empty((33, 17))
    assert x.dtype == np.float32 and x.shape == (33, 17) and x.ctypes.data % 16384 == 0
    z = fastgemm.zeros((5, 5))
    assert np.all(z == 0) and z.ctypes.data % 16384 == 0


# --- one set of argument rules (python/fastgemm/arguments.py) -----------------------------

A4 = np.ones((4, 4), np.float32)


@pytest.mark.parametrize("value", [1e39, -1e39, 1e-50, 2**2000])
@pytest.mark.parametrize("which", ["alpha", "beta"])
def test_scalars_outside_float32_are_refused_by_name(which, value):
    """alpha and beta are float32 in SGEMM: a finite value that would become Inf or 0 is
    refused, on every path, instead of silently changing the result."""
    C = A4.copy()
    for call in (lambda: fastgemm.sgemm(A4, A4, C, **{which: value}),
                 lambda: fastgemm.benchmark("ikj", 8, **{which: value})):
        with pytest.raises(ValueError, match=which):
            call()


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 3.4e38, 1e-45])
def test_scalars_float32_can_hold_are_accepted(value):
    fastgemm.sgemm(A4, A4, A4.copy(), alpha=value, beta=0.0)


@pytest.mark.parametrize("value,error", [(None, TypeError), (32, TypeError), (b"fp32", TypeError),
                                          ("fp64", ValueError), ("", ValueError)])
def test_precision_is_checked_the_same_on_every_path(value, error):
    """The wrong kind of value is a TypeError, an unknown name a ValueError, on the native
    fast path and the general path alike (matmul too)."""
    F = np.asfortranarray(np.ones((4, 3), np.float32))[:, :2]
    for A, B in ((A4, A4), (F, np.ones((2, 4), np.float32))):
        with pytest.raises(error, match="precision"):
            fastgemm.sgemm(A, B, precision=value)
    with pytest.raises(error, match="precision"):
        fastgemm.matmul(A4, A4, precision=value)


@pytest.mark.parametrize("name,error", [("", ValueError), ("packed\0junk", ValueError), ("\ud800", ValueError),
                                         (5, TypeError), (b"cpu", TypeError)])
def test_names_are_checked_the_same_on_every_path(name, error):
    """The native fast path and the general path (a Fortran-order A takes the latter)
    refuse a bad kernel or backend name with the same class."""
    F = np.asfortranarray(np.ones((4, 3), np.float32))[:, :2]
    for kw in ({"kernel": name}, {"backend": name}):
        for A in (A4, F):
            B = A4 if A is A4 else np.ones((2, 4), np.float32)
            with pytest.raises(error):
                fastgemm.sgemm(A, B, **kw)
    if not isinstance(name, bytes):
        with pytest.raises(error):
            fastgemm.kernels(name)
    with pytest.raises(TypeError):
        fastgemm.kernels(b"cpu")


def test_a_c_with_unaligned_but_separate_rows_is_accepted(rng):
    """Rows 14 bytes apart and 3 floats wide do not overlap: such a C is legal (written
    through a copy, since its rows are unaligned)."""
    buf = np.zeros(80, np.uint8)
    base = buf[2:2 + 4 * 14].view(np.uint8)
    C = np.ndarray((3, 3), dtype=np.float32, buffer=base, offset=0, strides=(14, 4))
    A, B = rand(rng, 3, 5), rand(rng, 5, 3)
    out = fastgemm.sgemm(A, B, C)
    assert out is C
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [{"align": 0}, {"align": 3}, {"align": -64}, {"align": 2.5}])
def test_empty_checks_its_alignment(kw):
    with pytest.raises((ValueError, TypeError), match="align"):
        fastgemm.empty(16, **kw)


@pytest.mark.parametrize("shape", [-1, (4, -2), ("abc",), 2.5])
def test_empty_checks_its_shape(shape):
    with pytest.raises((ValueError, TypeError), match="shape"):
        fastgemm.empty(shape)


def test_benchmark_bench_must_be_a_bench():
    with pytest.raises(TypeError, match="bench"):
        fastgemm.benchmark("ikj", 8, bench="junk")


def test_a_broadcast_view_too_big_to_copy_is_refused_naming_it():
    # A zero-stride view of 2 x 2^40 elements has no layout a kernel reads in place, and
    # its copy (8 TiB) fits no machine: refused before numpy is asked for the memory.
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(2, 2**40), strides=(0, 0))
    with pytest.raises(MemoryError, match=r"^A \(shape \(2, 1099511627776\)"):
        fastgemm.sgemm(big, big.T)


def test_a_named_kernel_refuses_before_copying_a_broadcast_view():
    """The BLAS baseline takes 32-bit dimensions: K = 2^31 + 7 is refused by its
    constraint, before the 8 GiB copy of the zero-stride operands is attempted."""
    z = np.zeros(1, np.float32)
    A = np.lib.stride_tricks.as_strided(z, shape=(1, 2**31 + 7), strides=(0, 0))
    B = np.lib.stride_tricks.as_strided(z, shape=(2**31 + 7, 1), strides=(0, 0))
    blas = next(k.name for k in fastgemm.kernels("cpu") if k.baseline)
    with pytest.raises(ConstraintError, match=blas):
        fastgemm.sgemm(A, B, kernel=blas, backend="cpu")


def test_accepts_refuses_a_problem_that_cannot_exist():
    k = fastgemm.kernels("cpu")[0]
    with pytest.raises(ValueError):
        k.accepts(-1, 2, 3)
    with pytest.raises(ValueError):
        k.check(2, -2, 3)


IEEE_SCALARS = [(float("nan"), 0.0), (float("inf"), 1.0), (1.0, float("-inf")), (3e38, 0.0)]


@pytest.mark.parametrize("alpha, beta", IEEE_SCALARS, ids=["alpha-nan", "alpha-inf", "beta-minus-inf", "overflow"])
def test_benchmark_verifies_ieee_results_by_ieee_rules(alpha, beta):
    """A NaN or infinite alpha or beta, or a product past float32's range, gives a
    non-finite C that IEEE prescribes: the benchmark checks those elements by IEEE's
    rules and passes every kernel that keeps them (the -ffast-math rungs waive them)."""
    for k in fastgemm.kernels("cpu"):
        if "-ffast-math" in k.flags and "no -ffast-math" not in k.flags:
            continue
        trans_b = not k.accepts(17, 13, 9) and k.accepts(17, 13, 9, trans_b=True)
        if not k.accepts(17, 13, 9, trans_b=trans_b):
            continue
        r = fastgemm.benchmark(k.name, 17, 13, 9, backend="cpu", alpha=alpha, beta=beta, trans_b=trans_b,
                               warmup=0, iters=1)
        assert r.passed, (k.name, r.rel_err, r.ieee_elements)
        assert r.ieee_elements > 0 and r.to_dict()["ieee_elements"] == r.ieee_elements


def test_benchmark_with_an_ordinary_alpha_checks_every_element_by_tolerance():
    r = fastgemm.benchmark("ikj", 17, 13, 9, backend="cpu", alpha=2.0, beta=-1.0, warmup=0, iters=1)
    assert r.passed and r.ieee_elements == 0

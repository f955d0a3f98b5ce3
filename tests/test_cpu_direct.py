"""The direct kernels (direct, direct_dot, gemv: operands read where they lie, no
packing) against a float64 reference on the shapes they exist for: small and odd
sizes, skinny problems, both vector cases with every transpose, strided views, K and N
long enough to cross every block and chunk boundary, and threads."""

import numpy as np
import pytest

import fastgemm
from conftest import assert_matches, rand, reference

CPU = {k.name: k for k in fastgemm.kernels("cpu")}
DIRECT = ["direct", "direct_dot", "gemv"]


@pytest.fixture
def threads():
    saved = fastgemm.get_num_threads()
    yield fastgemm.set_num_threads
    fastgemm.set_num_threads(saved)


def operands(rng, M, N, K, trans_a, trans_b, pad=0):
    """op(A) M x K and op(B) K x N as stored, optionally as views with `pad` spare
    columns per row (a leading dimension larger than the row)."""
    def stored(rows, cols):
        full = rand(rng, rows, cols + pad)
        return full[:, :cols] if pad else full
    A = stored(K, M) if trans_a else stored(M, K)
    B = stored(N, K) if trans_b else stored(K, N)
    return A, B


def check(kernel, M, N, K, trans_a, trans_b, rng, alpha=1.0, beta=0.0, pad=0):
    A, B = operands(rng, M, N, K, trans_a, trans_b, pad)
    C0 = rand(rng, M, N)
    C = C0.copy() if beta != 0.0 else np.full((M, N), np.nan, dtype=np.float32)
    out = fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                         kernel=kernel, backend="cpu")
    assert out is C
    ref = reference(A, B, C0, alpha, beta, trans_a, trans_b)
    assert_matches(C, ref, "fp32", K, f"{kernel} {M}x{N}x{K} ta={trans_a} tb={trans_b}")
    return A, B, C


def test_registered_with_constraints():
    for name in DIRECT:
        info = CPU[name]
        assert info.auto_candidate and info.precision == "fp32" and not info.baseline
        assert info.source.startswith("src/cpu/direct/") and info.isa
    assert CPU["direct"].constraints == []
    assert set(CPU["direct_dot"].constraints) == {"trans_a == False", "trans_b == True"}
    assert CPU["gemv"].constraints == ["M == 1 or N == 1"]
    assert not CPU["gemv"].accepts(2, 2, 2) and CPU["gemv"].accepts(1, 9, 9) and CPU["gemv"].accepts(9, 1, 9)


# Every tile edge: 1..7 rows around the 6-row tile, columns around 16/64-wide tiles and
# masked vectors, K around the unrolls, and past the 768 / 4096 depth-block limits.
SMALL = [(1, 1, 1), (2, 3, 5), (6, 64, 7), (7, 65, 13), (13, 17, 19), (5, 100, 3), (64, 64, 64),
         (97, 33, 129), (12, 31, 800), (3, 130, 1031)]


@pytest.mark.parametrize("shape", SMALL, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_direct_every_layout(shape, trans_a, trans_b, rng):
    check("direct", *shape, trans_a, trans_b, rng)
    check("direct", *shape, trans_a, trans_b, rng, alpha=-0.75, beta=1.5, pad=3)


@pytest.mark.parametrize("shape", SMALL + [(4, 5, 4097), (9, 3, 9001)], ids=lambda s: "x".join(map(str, s)))
def test_direct_dot(shape, rng):
    check("direct_dot", *shape, False, True, rng)
    check("direct_dot", *shape, False, True, rng, alpha=2.0, beta=-1.0, pad=5)


def test_direct_dot_refuses_other_layouts(rng):
    for ta, tb in ((False, False), (True, False), (True, True)):
        A, B = operands(rng, 4, 4, 4, ta, tb)
        with pytest.raises(fastgemm.ConstraintError, match="direct_dot"):
            fastgemm.sgemm(A, B, trans_a=ta, trans_b=tb, kernel="direct_dot", backend="cpu")


# Both vector cases, with the vector stored contiguously or strided (a row of a
# transposed operand), outputs along a row or down a column, and N past the 2048-wide
# chunks of the rows form.
VECTORS = [(1, 1, 1), (1, 1, 300), (1, 17, 1), (1, 4100, 33), (1, 37, 2500), (300, 1, 129),
           (5000, 1, 7), (2, 1, 2), (1, 2, 2), (1, 64, 64)]


@pytest.mark.parametrize("shape", VECTORS, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_gemv_every_layout(shape, trans_a, trans_b, rng):
    check("gemv", *shape, trans_a, trans_b, rng)
    check("gemv", *shape, trans_a, trans_b, rng, alpha=0.5, beta=-2.0, pad=2)


def test_gemv_writes_a_column_of_a_strided_c(rng):
    """N == 1 into a column of a wider C: only that column changes."""
    A, x = rand(rng, 50, 40), rand(rng, 40, 1)
    big = rand(rng, 50, 7)
    before = big.copy()
    C = big[:, 3:4]
    fastgemm.sgemm(A, x, C, kernel="gemv", backend="cpu")
    assert_matches(C, reference(A, x), "fp32", 40, "gemv column")
    np.testing.assert_array_equal(np.delete(big, 3, axis=1), np.delete(before, 3, axis=1))


@pytest.mark.parametrize("kernel,shape,tb", [("direct", (300, 700, 200), False), ("direct", (700, 90, 50), True),
                                             ("direct_dot", (64, 900, 300), True),
                                             ("direct_dot", (900, 8, 300), True),
                                             ("gemv", (1, 3000, 1500), False), ("gemv", (1, 3000, 1500), True),
                                             ("gemv", (3000, 1, 1500), False)])
def test_threads_give_identical_results(kernel, shape, tb, threads, rng):
    """Big enough to split across threads: every thread count gives the same bits (each
    element's summation order is independent of the split) and the right answer."""
    M, N, K = shape
    A, B = operands(rng, M, N, K, False, tb)
    outs = []
    for n in (1, 2, 3):
        threads(n)
        outs.append(fastgemm.sgemm(A, B, trans_b=tb, kernel=kernel, backend="cpu"))
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    assert_matches(outs[0], reference(A, B, trans_b=tb), "fp32", K, kernel)


@pytest.mark.parametrize("kernel", DIRECT)
def test_special_values_propagate(kernel, rng):
    """IEEE semantics: NaN in A reaches exactly the outputs that read it; Inf stays Inf."""
    M, N, K = (1, 33, 20) if kernel == "gemv" else (9, 33, 20)
    A, B = operands(rng, M, N, K, False, kernel == "direct_dot")
    A[0, 3] = np.nan
    C = fastgemm.sgemm(A, B, trans_b=kernel == "direct_dot", kernel=kernel, backend="cpu")
    assert np.isnan(C[0]).all() and np.isfinite(C[1:]).all()

"""fastgemm.matmul against np.matmul: a property sweep over shapes (empty, 1, odd),
1-D operands, stacked batches with broadcasting, transposed and strided views, and
`out`, on every available backend; and the errors np.matmul raises, with fastgemm's
exception classes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastgemm
from conftest import Reference, assert_matches

BACKENDS = [b.name for b in fastgemm.backends() if b.available]
# The emulator runs shaders on the CPU at a tiny fraction of a GPU's speed: keep its
# problems small.
MAX_DIM = {"metal-emu": 9}


def as_float32(rng, shape, view):
    """A float32 array of `shape`, stored as asked: contiguous, as the transpose of a
    contiguous array, or as a strided slice of a larger one."""
    if view == "transposed" and len(shape) >= 2:
        base = rng.uniform(-1, 1, shape[:-2] + (shape[-1], shape[-2])).astype(np.float32)
        return np.swapaxes(base, -1, -2)
    if view == "strided" and len(shape) >= 1:
        base = rng.uniform(-1, 1, shape[:-1] + (2 * shape[-1] + 1,)).astype(np.float32)
        return base[..., 1::2]
    return rng.uniform(-1, 1, shape).astype(np.float32)


batch = st.lists(st.integers(1, 3), min_size=0, max_size=2)


@st.composite
def problems(draw, max_dim):
    dims = st.integers(0, max_dim)
    M, N, K = draw(dims), draw(dims), draw(dims)
    kind = draw(st.sampled_from(["matrix", "vector-left", "vector-right", "vectors"]))
    a_shape = (K,) if kind in ("vector-left", "vectors") else (M, K)
    b_shape = (K,) if kind in ("vector-right", "vectors") else (K, N)
    if kind == "matrix":
        bb = draw(batch)
        # Broadcasting: each operand keeps some stack axes, possibly of size 1.
        a_batch = tuple(draw(st.sampled_from([d, 1])) for d in bb)[draw(st.integers(0, len(bb))):]
        b_batch = tuple(draw(st.sampled_from([d, 1])) for d in bb)
        a_shape, b_shape = a_batch + a_shape, b_batch + b_shape
    views = st.sampled_from(["contiguous", "transposed", "strided"])
    return a_shape, b_shape, draw(views), draw(views), draw(st.booleans()), draw(st.integers(0, 2**31))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_matches_np_matmul(backend, data):
    a_shape, b_shape, a_view, b_view, with_out, seed = data.draw(problems(MAX_DIM.get(backend, 12)))
    rng = np.random.default_rng(seed)
    a, b = as_float32(rng, a_shape, a_view), as_float32(rng, b_shape, b_view)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if with_out:
        out = np.full(expected.shape, np.nan, dtype=np.float32)
        got = fastgemm.matmul(a, b, out=out, backend=backend)
        assert got is out
    else:
        got = fastgemm.matmul(a, b, backend=backend)
    got = np.asarray(got)  # two vectors give a float32 scalar, as in numpy
    assert got.shape == expected.shape and got.dtype == np.float32
    K = a.shape[-1]
    if got.size:
        # Errors are relative to the size of the terms, |a| @ |b|: a short dot product
        # can cancel to far less than its terms.
        as_rows = (lambda x: x.reshape(-1, x.shape[-1])) if got.ndim else (lambda x: x.reshape(1, 1))
        ref = as_rows(expected).view(Reference)
        ref.magnitude = as_rows(np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))))
        assert_matches(as_rows(got), ref, "fp32", K, f"{a_shape} @ {b_shape}")


def test_vector_results_drop_their_axes(rng):
    a, b = rng.uniform(-1, 1, (5,)).astype(np.float32), rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    assert fastgemm.matmul(a, b).shape == (3,)
    assert fastgemm.matmul(b.T, a).shape == (3,)
    dot = fastgemm.matmul(a, a)
    assert type(dot) is type(np.matmul(a, a)) is np.float32  # a scalar, as numpy returns
    assert np.isclose(dot, np.dot(a.astype(np.float64), a), rtol=1e-5)


def test_array_likes_are_read_as_float32():
    got = fastgemm.matmul([[1, 2], [3, 4]], [1.0, 1.0])
    assert got.dtype == np.float32 and got.tolist() == [3.0, 7.0]


def test_out_overlapping_an_operand_gets_every_product_first(rng):
    """x = x @ y for a stack: writing x[0] must not change the x[1] still to be read."""
    x = rng.uniform(-1, 1, (3, 4, 4)).astype(np.float32)
    y = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    expected = np.matmul(x.astype(np.float64), y)
    fastgemm.matmul(x, y, out=x)
    assert_matches(x.reshape(-1, 4), expected.reshape(-1, 4), "fp32", 4, "in place")


@pytest.mark.parametrize("a,b,error,match", [
    (np.float32(2.0), np.ones((2, 2), np.float32), fastgemm.ShapeError, "scalar"),
    (np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), fastgemm.ShapeError, "last axis of a"),
    (np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32), fastgemm.ShapeError, "broadcast"),
    (np.ones((2, 2)), np.ones((2, 2), np.float32), fastgemm.DTypeError, "float64"),
    (np.ma.masked_array(np.ones((2, 2), np.float32)), np.ones((2, 2), np.float32), TypeError, "mask"),
    (None, np.ones((2, 2), np.float32), TypeError, "None"),
    ("text", np.ones((2, 2), np.float32), TypeError, "float32"),
])
def test_errors_name_the_argument(a, b, error, match):
    with pytest.raises(error, match=match):
        fastgemm.matmul(a, b)


def test_out_must_fit(rng):
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(fastgemm.ShapeError, match="out has shape"):
        fastgemm.matmul(a, b, out=np.empty((2, 5), np.float32))
    with pytest.raises(fastgemm.DTypeError, match="out has dtype float64"):
        fastgemm.matmul(a, b, out=np.empty((2, 4)))
    ro = np.empty((2, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(fastgemm.ShapeError, match="read-only"):
        fastgemm.matmul(a, b, out=ro)


def test_out_that_overlaps_itself_is_refused_and_regular_layouts_are_not(rng):
    """A stack whose matrices share memory (stride 0 across it) would keep only the last
    product, as sgemm refuses for C; numpy's own layouts, interleaved or reversed, run."""
    a, b = rng.random((3, 4, 5), dtype=np.float32), rng.random((3, 5, 6), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    shared = np.lib.stride_tricks.as_strided(np.zeros((4, 6), np.float32), shape=(3, 4, 6), strides=(0, 24, 4))
    with pytest.raises(fastgemm.ShapeError, match="out overlaps itself"):
        fastgemm.matmul(a, b, out=shared)
    square = np.lib.stride_tricks.as_strided(np.zeros(8, np.float32), shape=(4, 6), strides=(4, 4))
    with pytest.raises(fastgemm.ShapeError, match="out overlaps itself"):
        fastgemm.matmul(a[0], b[0], out=square)
    for out in (np.zeros((4, 6, 3), np.float32).transpose(2, 0, 1), np.zeros((3, 4, 6), np.float32)[::-1, ::-1]):
        fastgemm.matmul(a, b, out=out)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# --- GPU arrays: fastgemm.matmul on PyTorch CUDA tensors ------------------------------

def _cuda_torch():
    if not getattr(fastgemm._fastgemm, "built_with_cuda", False):
        pytest.skip("fastgemm was built without the cuda backend (no nvcc)")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU for torch")
    status = next(b for b in fastgemm.backends() if b.name == "cuda")
    if not status.available:
        pytest.skip(f"no usable CUDA GPU: {status.reason}")
    return torch


def on_gpu(torch, x, view):
    """x's values on the GPU, stored the way as_float32 stored them (same view kind)."""
    if view == "transposed" and x.ndim >= 2:
        return torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, -1, -2))).cuda().transpose(-1, -2)
    if view == "strided" and x.ndim >= 1:
        base = np.zeros(x.shape[:-1] + (2 * x.shape[-1] + 1,), np.float32)
        base[..., 1::2] = x
        return torch.from_numpy(base).cuda()[..., 1::2]
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_gpu_tensors_match_np_matmul(data):
    torch = _cuda_torch()
    a_shape, b_shape, a_view, b_view, with_out, seed = data.draw(problems(40))
    rng = np.random.default_rng(seed)
    a, b = as_float32(rng, a_shape, a_view), as_float32(rng, b_shape, b_view)
    ta, tb = on_gpu(torch, a, a_view), on_gpu(torch, b, b_view)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if with_out:
        out = torch.full(expected.shape, float("nan"), device="cuda")
        got = fastgemm.matmul(ta, tb, out=out)
        assert got is out
    else:
        got = fastgemm.matmul(ta, tb)
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.dtype == torch.float32
    got = got.cpu().numpy()
    assert got.shape == expected.shape
    if got.size:
        as_rows = (lambda x: x.reshape(-1, x.shape[-1])) if got.ndim else (lambda x: x.reshape(1, 1))
        ref = as_rows(expected).view(Reference)
        ref.magnitude = as_rows(np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))))
        assert_matches(as_rows(got), ref, "fp32", a.shape[-1], f"{a_shape} @ {b_shape} (GPU)")


# A stack whose every operand steps through its stack axes evenly (contiguous, or
# broadcast as a whole) is one launch; b repeated along one axis of a's but not the
# other is one launch per outer index.
@pytest.mark.parametrize("a_shape,b_shape,launches", [
    ((6, 33, 20), (6, 20, 17), [6]), ((6, 33, 20), (20, 17), [6]), ((5, 20), (4, 1, 20, 17), [4]),
    ((2, 3, 33, 20), (1, 1, 20, 17), [6]), ((2, 3, 33, 20), (3, 20, 17), [3, 3])])
def test_gpu_stack_is_one_batched_launch(monkeypatch, rng, a_shape, b_shape, launches):
    torch = _cuda_torch()
    calls = []
    native = fastgemm._fastgemm.cuda_sgemm_batched

    def counted(*args):
        calls.append(args[13])  # the batch count
        return native(*args)

    monkeypatch.setattr(fastgemm._fastgemm, "cuda_sgemm_batched", counted)
    a = rng.uniform(-1, 1, a_shape).astype(np.float32)
    b = rng.uniform(-1, 1, b_shape).astype(np.float32)
    got = fastgemm.matmul(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()).cpu().numpy()
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert calls == launches
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_gpu_out_overlapping_an_operand_is_written_after_the_products(rng):
    torch = _cuda_torch()
    a = torch.from_numpy(rng.uniform(-1, 1, (3, 16, 16)).astype(np.float32)).cuda()
    b = torch.from_numpy(rng.uniform(-1, 1, (3, 16, 16)).astype(np.float32)).cuda()
    expected = (a.double() @ b.double()).cpu().numpy()
    got = fastgemm.matmul(a, b, out=a)
    assert got is a
    np.testing.assert_allclose(a.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_gpu_named_kernel_and_mixed_devices(rng):
    torch = _cuda_torch()
    a = rng.uniform(-1, 1, (2, 40, 24)).astype(np.float32)
    b = rng.uniform(-1, 1, (24, 8)).astype(np.float32)
    got = fastgemm.matmul(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), kernel="naive")
    np.testing.assert_allclose(got.cpu().numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="host array"):
        fastgemm.matmul(torch.from_numpy(a).cuda(), b)
    with pytest.raises(fastgemm.errors.ShapeError, match="last axis"):
        fastgemm.matmul(torch.from_numpy(a).cuda(), torch.from_numpy(a).cuda())

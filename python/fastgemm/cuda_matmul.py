"""fastgemm.matmul on GPU arrays (PyTorch, CuPy, any __cuda_array_interface__ or CUDA
DLPack producer): np.matmul's semantics on the cuda backend, without copies.

A stack of products goes to the GPU as one strided-batched launch where that is the
faster way: when one product is too small to fill the GPU (below 1e10 FLOPs), the stack
axes are folded into as few (count, stride) runs as the operands' strides allow (one,
for contiguous or broadcast operands) and each run is a single cuBLAS strided-batched
SGEMM, FP32 arithmetic. A product big enough to fill the GPU on its own runs through
fastgemm.sgemm with kernel="auto", one launch per matrix, where fastgemm's own kernels
beat the vendor call. A named kernel runs matrix by matrix, as named.

Operands keep their layout: each matrix may be row- or column-major, the stack axes
any strides (0 where a stack axis broadcasts). An operand whose matrices are neither
is copied once; an ``out`` whose matrices are not row-major, or that overlaps an
operand, receives the result through one staging array.
"""

from __future__ import annotations

import math

import numpy as np

from . import _fastgemm
from .cuda import _View, _contiguous, _new_like, _row_major, _stream_of, check_request
from .errors import ArgumentError, ShapeError
from .matmul_shapes import product_shapes

__all__ = ["matmul"]

# A product of at least this many FLOPs fills the GPU by itself: the stack runs one
# fastgemm.sgemm(kernel="auto") per matrix rather than one batched cuBLAS launch.
_FILLS_GPU_FLOPS = 1e10


def matmul(a, b, out=None, *, kernel="auto", backend="auto", precision="fp32"):
    """a @ b with np.matmul's semantics for float32 GPU arrays (see the module docstring)."""
    check_request(precision, backend, (("a", a), ("b", b), ("out", out)))
    va, vb = _View(a, "a", stack=True), _View(b, "b", stack=True)
    batch, M, N, K, shape = product_shapes(va.shape, vb.shape)
    if va.device >= 0 and vb.device >= 0 and va.device != vb.device:
        raise ArgumentError(f"a is on cuda:{va.device} and b on cuda:{vb.device}; put them on one device")
    a_vec, b_vec = len(va.shape) == 1, len(vb.shape) == 1
    a_shape, a_str = _with_matrix_axes(va, a_vec, False)
    b_shape, b_str = _with_matrix_axes(vb, False, b_vec)

    if out is None:
        result = _new_like(va, *shape)
        vc = _View(result, "out", stack=True)
    else:
        result, vc = out, _View(out, "out", stack=True)
        if vc.shape != shape:
            raise ShapeError(f"out has shape {vc.shape}, but matmul of {va.shape} and {vb.shape} is {shape}")
        if getattr(vc, "readonly", False):
            raise ShapeError("out is read-only; pass a writable array")
    if math.prod(shape) == 0:
        return result

    c_shape, c_str = _with_matrix_axes(vc, a_vec, b_vec)
    ldc = _rows_of(c_shape[-2:], c_str[-2:])
    staged = ldc is None or _overlaps(vc, va) or _overlaps(vc, vb)
    if staged:
        # Written after every product is formed, into a plain C-order array first.
        target = _new_like(va, *(batch + (M, N)))
        vt = _View(target, "out", stack=True)
        c_shape, c_str, ldc = vt.shape, vt.strides, max(N, 1)
    else:
        target, vt = result, vc

    lda, ta = _matrix_layout(a_shape, a_str)
    if lda is None:
        va = _View(_contiguous(va.obj), "a", stack=True)
        a_shape, a_str = _with_matrix_axes(va, a_vec, False)
        lda, ta = _matrix_layout(a_shape, a_str)
    ldb, tb = _matrix_layout(b_shape, b_str)
    if ldb is None:
        vb = _View(_contiguous(vb.obj), "b", stack=True)
        b_shape, b_str = _with_matrix_axes(vb, False, b_vec)
        ldb, tb = _matrix_layout(b_shape, b_str)

    strides = [_stack_strides(batch, s[:-2], st[:-2]) for s, st in ((a_shape, a_str), (b_shape, b_str),
                                                                    (c_shape, c_str))]
    runs = _fold(batch, strides)
    device = vt.device if vt.device >= 0 else va.device
    stream = _stream_of(vt)
    per_matrix = kernel not in ("auto", "cublas") or 2.0 * M * N * K >= _FILLS_GPU_FLOPS
    outer, (count, sa, sb, sc) = runs[:-1], runs[-1]
    for index in np.ndindex(*(r[0] for r in outer)):
        base_a = va.ptr + 4 * sum(i * r[1] for i, r in zip(index, outer))
        base_b = vb.ptr + 4 * sum(i * r[2] for i, r in zip(index, outer))
        base_c = vt.ptr + 4 * sum(i * r[3] for i, r in zip(index, outer))
        if per_matrix:
            for j in range(count):
                _fastgemm.cuda_sgemm(kernel, M, N, K, base_a + 4 * j * sa, lda, base_b + 4 * j * sb, ldb,
                                     base_c + 4 * j * sc, ldc, ta, tb, 1.0, 0.0, stream, device, precision)
        else:
            _fastgemm.cuda_sgemm_batched(kernel, M, N, K, base_a, lda, sa, base_b, ldb, sb, base_c, ldc, sc, count,
                                         ta, tb, 1.0, 0.0, stream, device, precision)
    if staged:
        _copy_into(result, target, shape)
    return result


def _with_matrix_axes(view, row_vector, column_vector):
    """(shape, strides) of a view with both matrix axes present, as np.matmul reads it:
    a row vector (1-D first operand; the result of one) gains a unit row axis, a column
    vector (1-D second operand; the result of one) a unit column axis. A unit axis's
    stride is never stepped along, so 1 serves."""
    shape, strides = list(view.shape), list(view.strides)
    if row_vector:
        at = len(shape) - (0 if column_vector else 1)
        shape.insert(at, 1)
        strides.insert(at, 1)
    if column_vector:
        shape.append(1)
        strides.append(1)
    return tuple(shape), tuple(strides)


def _rows_of(shape2, strides2):
    """ldc when every matrix of this layout has contiguous rows (C is written in place
    row by row), else None."""
    ld, _, rows = _row_major(shape2, strides2, False)
    return ld if ld is not None and rows else None


def _matrix_layout(shape, strides):
    """(ld, trans) of an operand's matrices read in place, or (None, None)."""
    ld, trans, _ = _row_major(shape[-2:], strides[-2:], False)
    return (ld, trans) if ld is not None else (None, None)


def _stack_strides(batch, shape, strides):
    """The operand's element stride along each stack axis of `batch` (broadcast: 0)."""
    pad = len(batch) - len(shape)
    return tuple(0 if i < pad or shape[i - pad] == 1 else strides[i - pad] for i in range(len(batch)))


def _fold(batch, strides):
    """[(count, stride of a, of b, of c), ...], outermost first: adjacent stack axes
    merged wherever every operand steps through them evenly, so that a contiguous or
    broadcast stack is one run."""
    runs = []
    for i, n in enumerate(batch):
        if n == 1:
            continue  # never stepped along
        step = tuple(s[i] for s in strides)
        if runs and all(prev == cur * n for prev, cur in zip(runs[-1][1:], step)):
            runs[-1] = (runs[-1][0] * n,) + step
        else:
            runs.append((n,) + step)
    return runs or [(1, 0, 0, 0)]


def _extent(view):
    """The element range [first, last] that a view touches, relative to its pointer."""
    lo = sum((n - 1) * s for n, s in zip(view.shape, view.strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(view.shape, view.strides) if s > 0)
    return lo, hi


def _overlaps(x, y) -> bool:
    if math.prod(x.shape) == 0 or math.prod(y.shape) == 0:
        return False
    (xl, xh), (yl, yh) = _extent(x), _extent(y)
    return x.ptr + 4 * xl <= y.ptr + 4 * yh + 3 and y.ptr + 4 * yl <= x.ptr + 4 * xh + 3


def _copy_into(result, staged, shape):
    if hasattr(result, "copy_"):  # torch
        result.copy_(staged.reshape(shape))
    else:
        result[...] = staged.reshape(shape)

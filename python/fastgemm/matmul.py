"""fastgemm.matmul: np.matmul's semantics, in float32, on fastgemm's kernels.

    fastgemm.matmul(a, b)              # like a @ b
    fastgemm.matmul(x, W.T, out=y)     # written into y, like np.matmul(x, W.T, out=y)

Operands are float32 arrays (array-likes are converted to float32; an ndarray of
another dtype is refused rather than narrowed). As in numpy: a 1-D first operand is a
row vector and a 1-D second operand a column vector, each dimension removed from the
result again; operands of more than two dimensions are stacks of matrices in their
last two axes, and the stack axes broadcast. Each matrix product is one
fastgemm.sgemm call (kernel, backend and precision as there), so transposed and
strided views cost no copies and kernel="auto" picks per shape. GPU arrays (PyTorch,
CuPy) stay on the GPU, a stack of small products in one batched launch
(fastgemm.cuda_matmul).
"""

from __future__ import annotations

import numpy as np

from . import arguments
from .errors import ArgumentTypeError, DTypeError, ShapeError
from .matmul_shapes import product_shapes

__all__ = ["matmul"]


def matmul(a, b, out=None, *, kernel="auto", backend="auto", precision="fp32"):
    """a @ b with np.matmul's semantics for float32 (see the module's docstring)."""
    from .api import _device_array_hook, sgemm  # api imports this module's package

    if _device_array_hook(a, b, out) is not None:
        from .cuda_matmul import matmul as device_matmul

        return device_matmul(a, b, out, kernel=kernel, backend=backend, precision=precision)
    a = arguments.array(a, "a")
    b = arguments.array(b, "b")
    kernel = arguments.name(kernel, "kernel")
    backend = arguments.name(backend, "backend")
    precision = arguments.precision(precision)
    batch, M, N, K, shape = product_shapes(a.shape, b.shape)
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b

    if out is None:
        result = np.empty(shape, dtype=np.float32)
    else:
        if isinstance(out, np.ma.MaskedArray) or not isinstance(out, np.ndarray):
            raise ArgumentTypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
        if out.dtype != np.float32:
            raise DTypeError(f"out has dtype {out.dtype}; it must be float32 since it is written in place")
        if out.shape != shape:
            raise ShapeError(f"out has shape {out.shape}, but matmul of {a.shape} and {b.shape} is {shape}")
        if not out.flags.writeable:
            raise ShapeError("out is read-only; pass a writable array")
        if _overlaps_itself(out):
            raise ShapeError(f"out overlaps itself (strides {out.strides}): several of its elements share memory, "
                             f"so the result would depend on the order of writes; pass a regular array")
        result = out
    # The products write into a view of the result with both matrix axes present.
    target = result.reshape(batch + (M, N))
    if result.size and not np.may_share_memory(target, result):  # reshape had to copy
        target = None
    if target is None or (out is not None and (np.may_share_memory(out, a) or np.may_share_memory(out, b))):
        # An out that overlaps an operand is written only after every product is formed.
        staged = np.empty(batch + (M, N), dtype=np.float32)
        _products(a2, b2, staged, batch, sgemm, kernel, backend, precision)
        result[...] = staged.reshape(shape)
        return result[()] if out is None and result.ndim == 0 else result
    _products(a2, b2, target, batch, sgemm, kernel, backend, precision)
    # As np.matmul: two vectors give a float32 scalar, unless an out array was given.
    return result[()] if out is None and result.ndim == 0 else result


def _overlaps_itself(x: np.ndarray) -> bool:
    """True when two different elements of x may share memory (a stride of 0 across the
    stack, say). A matrix is checked exactly (api._overlaps_itself); more axes are taken
    from the smallest stride up, each of which must step past everything inside it, which
    every layout numpy makes does; any other is refused conservatively."""
    from .api import _overlaps_itself as matrix_overlaps_itself

    if x.size == 0:
        return False
    if x.ndim == 2:
        return matrix_overlaps_itself(x)
    inner = x.itemsize  # bytes from the first element of the block so far to past its last
    for stride, n in sorted((abs(s), n) for s, n in zip(x.strides, x.shape) if n > 1):
        if stride < inner:
            return True
        inner += stride * (n - 1)
    return False


def _products(a2, b2, target, batch, sgemm, kernel, backend, precision):
    if target.size == 0:
        return
    if not batch:
        sgemm(a2, b2, target, kernel=kernel, backend=backend, precision=precision)
        return
    a3 = np.broadcast_to(a2, batch + a2.shape[-2:])
    b3 = np.broadcast_to(b2, batch + b2.shape[-2:])
    for index in np.ndindex(*batch):
        sgemm(a3[index], b3[index], target[index], kernel=kernel, backend=backend, precision=precision)

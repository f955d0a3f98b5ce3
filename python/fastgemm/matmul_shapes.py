"""The shape rules of np.matmul, shared by fastgemm.matmul's host path (matmul.py) and its
GPU-array path (cuda_matmul.py)."""

from __future__ import annotations

import numpy as np

from .errors import ShapeError

__all__ = ["product_shapes"]


def product_shapes(a_shape, b_shape):
    """(batch, M, N, K, result shape) of np.matmul on operands of these shapes: a 1-D
    first operand is a row vector and a 1-D second one a column vector, their axis
    dropped from the result; the stack axes broadcast. Raises ShapeError with
    np.matmul's reasons otherwise."""
    if not a_shape or not b_shape:
        which = "a" if not a_shape else "b"
        raise ShapeError(f"matmul: {which} is a scalar (0-D); use multiplication for scalars")
    M, K = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape[-2:])
    Kb, N = (b_shape[0], 1) if len(b_shape) == 1 else tuple(b_shape[-2:])
    if K != Kb:
        raise ShapeError(f"matmul: a has shape {tuple(a_shape)} and b has shape {tuple(b_shape)}: "
                         f"the last axis of a ({K}) must equal the second-to-last of b ({Kb})")
    try:
        batch = tuple(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    except ValueError:
        raise ShapeError(f"matmul: the stack axes of a {tuple(a_shape[:-2])} and b {tuple(b_shape[:-2])} "
                         f"do not broadcast") from None
    shape = batch + (() if len(a_shape) == 1 else (M,)) + (() if len(b_shape) == 1 else (N,))
    return batch, M, N, K, shape

"""One set of argument rules for the whole Python API.

sgemm, matmul, benchmark, set_num_threads and the environment variables check their
arguments here, so the same mistake gets the same exception and message everywhere:
TypeError for the wrong kind of value, ValueError for a value out of range, each
message naming the argument. numpy scalars are accepted wherever Python numbers are.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings

import numpy as np

from . import _fastgemm
from .errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError

PRECISIONS = ("fp32", "strict", "tf32")
MAX_THREADS = _fastgemm.max_threads

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


def flag(value, name: str) -> bool:
    """True/False (numpy bools, 0 and 1 too). BLAS-style "N"/"T" strings would all be
    truthy and silently mean "transpose", so they are refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise ArgumentTypeError(f"{name} must be True or False, got {value!r} "
                    f"(BLAS-style 'N'/'T' strings are not accepted)")


def real(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        raise ArgumentError(f"{name} is too large for a floating-point number: {value!r}") from None


def scalar32(value, name: str) -> float:
    """A real number that float32 represents: alpha and beta are float32 in SGEMM, so a
    finite value beyond float32's range (it would become Inf) or a nonzero one below its
    smallest subnormal (it would become 0) is refused, not silently changed. NaN and Inf
    pass: they follow IEEE arithmetic."""
    v = real(value, name)
    with np.errstate(over="ignore", under="ignore"):
        as32 = float(np.float32(v))
    if math.isfinite(v) and (math.isinf(as32) or (as32 == 0.0 and v != 0.0)):
        raise ArgumentError(f"{name} = {v!r} is outside float32's range, which SGEMM computes in")
    return v


def integer(value, name: str, low: int = 0, high: int = INT64_MAX) -> int:
    """An int (or numpy integer) in [low, high]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise ArgumentError(f"{name} must be between {low} and {high}, got {value}")
    return value


def seconds(value, name: str) -> float:
    """A finite number of seconds >= 0 (0 meaning "no cap" where the caller says so)."""
    v = real(value, name)
    if not (v >= 0 and math.isfinite(v)):
        raise ArgumentError(f"{name} must be a finite number of seconds >= 0, got {v}")
    return v


def name(value, what: str) -> str:
    """A kernel or backend name: non-empty text, without NUL, encodable as UTF-8."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a name (str), got {type(value).__name__}; "
                        f"see fastgemm.kernels() and fastgemm.backends()")
    if not value:
        raise ArgumentError(f"{what} must not be empty (use \"auto\" to let fastgemm choose)")
    if "\0" in value:
        raise ArgumentError(f"{what} {value!r} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ArgumentError(f"{what} {value!r} is not valid text (unpaired surrogate)") from None
    return value


def precision(value) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"precision must be a name (str), one of {', '.join(map(repr, PRECISIONS))}; "
                        f"got {type(value).__name__}")
    if value not in PRECISIONS:
        raise ArgumentError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {value!r}")
    return value


def array(x, what: str) -> np.ndarray:
    """A float32 ndarray from x: an ndarray must already be float32 (a float64 array
    is never narrowed silently); other array-likes (lists, tuples, buffers) are
    converted to float32 as numpy would convert them. Masked arrays are refused: their
    mask would be ignored."""
    if isinstance(x, np.ma.MaskedArray):
        raise ArgumentTypeError(f"{what} is a masked array; fastgemm would ignore its mask: "
                        f"pass {what}.filled(value) or {what}.data")
    if x is None:
        raise ArgumentTypeError(f"{what} must be an array, got None")
    if not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise ArgumentTypeError(f"{what} cannot be read as a float32 array: {e}") from None
    if x.dtype != np.float32:
        raise DTypeError(f"{what} has dtype {x.dtype}; fastgemm computes in float32 only: "
                         f"pass {what}.astype(numpy.float32)")
    return x


def matrix(x, what: str) -> np.ndarray:
    x = array(x, what)
    if x.ndim != 2:
        raise ShapeError(f"{what} must be a 2-D matrix, got a {x.ndim}-D array of shape {x.shape}")
    return x


def env_flag(var: str, default: bool) -> bool:
    """A boolean environment variable: 1/on/true/yes or 0/off/false/no (any case);
    anything else warns once and keeps the default."""
    raw = os.environ.get(var)
    if raw is None or raw == "":
        return default
    v = raw.lower()  # the core's rule exactly: no surrounding spaces
    if v in ("1", "on", "true", "yes"):
        return True
    if v in ("0", "off", "false", "no"):
        return False
    warnings.warn(f"fastgemm: ignored {var}={raw!r} (expected 1/on/true/yes or 0/off/false/no)",
                  RuntimeWarning, stacklevel=3)
    return default


def env_threads(var: str = "FASTGEMM_NUM_THREADS"):
    """The thread count an environment variable asks for, or None (unset, or invalid:
    warned once; the native core then uses every usable core)."""
    raw = os.environ.get(var)
    if raw is None or raw == "":
        return None
    try:
        # The core's rule exactly: ASCII digits only (int() would also take spaces,
        # underscores and other scripts' digits, which the core ignores).
        if not (raw.isascii() and raw.isdigit()):
            raise ArgumentError(raw)
        return integer(int(raw), var, 1, MAX_THREADS)
    except (TypeError, ValueError):
        warnings.warn(f"fastgemm: ignored {var}={raw!r} (expected an integer between 1 and {MAX_THREADS})",
                      RuntimeWarning, stacklevel=3)
        return None

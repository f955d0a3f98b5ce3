"""GPU-resident arrays on the cuda backend, without copies.

``fastgemm.sgemm`` sends here any operand that lives on an NVIDIA GPU: a PyTorch CUDA
tensor, a CuPy array, or any object with ``__cuda_array_interface__`` or a CUDA DLPack
device. The kernel reads and writes those arrays in place (row-major or column-major
views, leading dimensions as stored) and the result comes back as the same kind of
array the caller gave (a new one when ``C`` is omitted).

Streams: the kernel is queued, without synchronising, on the current stream of the
framework that owns the output (``torch.cuda.current_stream()``, CuPy's current
stream); for other producers on the stream their ``__cuda_array_interface__`` names
(version 3 ``stream``), else the legacy default stream. So results are ordered with
the framework's own work exactly as one of its kernels would be.
"""

from __future__ import annotations

import glob
import os

from . import _fastgemm, arguments
from .errors import (ArgumentError, ArgumentTypeError, BackendUnavailableError, DTypeError, NotFoundError,
                     ShapeError)

__all__ = ["sgemm", "configure_cublas", "is_device_array"]


def configure_cublas() -> None:
    """Points the cublas baselines at the nvidia-cublas wheel when the loader path has none.

    cuBLAS is loaded on first use (dlopen); $FASTGEMM_CUBLAS_LIBRARY wins, then the
    system's libcublas.so.13/.12, which this only fills in when a wheel provides one.
    """
    if os.environ.get("FASTGEMM_CUBLAS_LIBRARY"):
        return
    try:
        import nvidia  # namespace package of NVIDIA's CUDA wheels
    except ImportError:
        return
    for root in getattr(nvidia, "__path__", []):
        hits = sorted(glob.glob(os.path.join(root, "cu*", "lib", "libcublas.so.*")) +
                      glob.glob(os.path.join(root, "cublas", "lib", "libcublas.so.*")))
        hits = [h for h in hits if "Lt" not in os.path.basename(h)]
        if hits:
            os.environ["FASTGEMM_CUBLAS_LIBRARY"] = hits[-1]
            return


configure_cublas()


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _is_cupy(x) -> bool:
    return type(x).__module__.split(".")[0] == "cupy"


def is_device_array(x) -> bool:
    if x is None:
        return False
    if _is_torch(x):
        return bool(getattr(x, "is_cuda", False))
    if hasattr(x, "__cuda_array_interface__"):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        return dev()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
    except Exception:
        return False


class _View:
    """(pointer, shape, strides in elements, device) of a float32 device array: a 2-D
    matrix, or with stack=True an array of any rank (fastgemm.matmul's stacks)."""

    def __init__(self, obj, name, stack=False):
        self.obj = obj
        if _is_torch(obj):
            import torch

            if obj.dtype != torch.float32:
                raise DTypeError(f"{name} has dtype {obj.dtype}; fastgemm computes in float32 only")
            if obj.dim() != 2 and not stack:
                raise ShapeError(f"{name} must be a 2-D matrix, got {obj.dim()}-D")
            self.ptr = obj.data_ptr()
            self.shape = tuple(obj.shape)
            self.strides = tuple(obj.stride())
            self.device = obj.device.index if obj.device.index is not None else torch.cuda.current_device()
            self.kind = "torch"
            return
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is None:
            # DLPack-only producer: view it through a framework that speaks DLPack (no copy).
            try:
                import torch

                self.__init__(torch.from_dlpack(obj), name, stack)
                self.obj = obj
                self.kind = "dlpack"
                return
            except ImportError:
                import cupy

                self.__init__(cupy.from_dlpack(obj), name, stack)
                self.obj = obj
                self.kind = "dlpack"
                return
        if cai.get("typestr") not in ("<f4", "=f4", "f4"):
            raise DTypeError(f"{name} has typestr {cai.get('typestr')}; fastgemm computes in float32 only")
        shape = tuple(cai["shape"])
        if len(shape) != 2 and not stack:
            raise ShapeError(f"{name} must be a 2-D matrix, got {len(shape)}-D")
        st = cai.get("strides")
        if st is None:  # C order
            st, step = [], 4
            for n in reversed(shape):
                st.insert(0, step)
                step *= max(n, 1)
        if any(s % 4 for s in st):
            raise ShapeError(f"{name} has strides {st} that are not whole float32 elements")
        self.ptr = int(cai["data"][0])
        self.readonly = bool(cai["data"][1])
        self.shape = shape
        self.strides = tuple(x // 4 for x in st)
        self.stream = cai.get("stream")
        self.kind = "cupy" if _is_cupy(obj) else "cai"
        self.device = obj.device.id if _is_cupy(obj) else -1

    def row_major(self, trans):
        """(ld, trans, rows) for a row-major reading of this view (see _row_major)."""
        return _row_major(self.shape, self.strides, trans)


def _row_major(shape, strides, trans):
    """(ld, trans, rows) reading a 2-D array of these element strides as row-major:
    rows is True when its rows are contiguous, False when its columns are (trans flipped:
    a column-major matrix is the row-major transpose), and ld is None for any other
    layout, which needs a copy."""
    rows, cols = shape
    s0, s1 = strides
    if rows == 0 or cols == 0:
        return max(1, cols), trans, True
    if (cols == 1 or s1 == 1) and (rows == 1 or s0 >= cols):
        return (s0 if rows > 1 else max(1, cols)), trans, True
    if (rows == 1 or s0 == 1) and (cols == 1 or s1 >= rows):
        return (s1 if cols > 1 else max(1, rows)), not trans, False
    return None, trans, None


def _contiguous(obj):
    if _is_torch(obj):
        return obj.contiguous()
    import cupy

    return cupy.ascontiguousarray(cupy.asarray(obj))


def _stream_of(view) -> int:
    if view.kind in ("torch", "dlpack"):
        import torch

        return int(torch.cuda.current_stream(view.device).cuda_stream)
    if view.kind == "cupy":
        import cupy

        return int(cupy.cuda.get_current_stream().ptr)
    s = getattr(view, "stream", None)
    return int(s) if s not in (None, 1, 2) else 0  # 1/2 = legacy/per-thread default in CAI v3


def _new_like(proto, *shape):
    """A new C-order float32 array of `shape` on proto's device, of proto's framework."""
    if proto.kind in ("torch", "dlpack"):
        import torch

        return torch.empty(shape, dtype=torch.float32, device=f"cuda:{proto.device}")
    import cupy

    with cupy.cuda.Device(proto.device if proto.device >= 0 else cupy.cuda.runtime.getDevice()):
        return cupy.empty(shape, dtype=cupy.float32)


PRECISIONS = arguments.PRECISIONS

_FLOAT_MAX = 3.4028234663852886e38
_torch_module = None


def _torch():
    global _torch_module
    if _torch_module is None:
        import torch

        _torch_module = torch
    return _torch_module


_raw_stream = None


def _torch_stream(torch, device: int) -> int:
    """The raw handle of torch's current stream on `device`, without building a Stream."""
    global _raw_stream
    if _raw_stream is None:
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return int(_raw_stream(device))


_DEVICE_BACKENDS = ("auto", "cuda")


def sgemm_torch(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision):
    """PyTorch CUDA tensors in the common case, in as few Python steps as the call allows.

    Same semantics as sgemm() below; returns NotImplemented for anything else (other
    dtypes, devices or layouts, empty results, argument errors), which sgemm() handles or
    refuses with its messages. Each tensor is asked for its dtype, shape, strides,
    device and pointer once (every question to a tensor costs about a tenth of a
    microsecond, and a small product on the GPU takes about ten in all).
    """
    torch = _torch()
    f32 = torch.float32
    if (type(A) is not type(B) or A.dtype is not f32 or B.dtype is not f32
            or type(trans_a) is not bool or type(trans_b) is not bool
            or type(alpha) is not float or type(beta) is not float
            or not (-_FLOAT_MAX <= alpha <= _FLOAT_MAX and -_FLOAT_MAX <= beta <= _FLOAT_MAX)
            or type(kernel) is not str or not kernel or "\0" in kernel or type(backend) is not str
            or backend not in _DEVICE_BACKENDS or type(precision) is not str or precision not in PRECISIONS):
        return NotImplemented
    a_shape, b_shape = A.shape, B.shape
    if len(a_shape) != 2 or len(b_shape) != 2:
        return NotImplemented
    if not A.is_cuda or not B.is_cuda:
        return NotImplemented
    device = A.get_device()
    if B.get_device() != device:
        return NotImplemented
    M, K = (a_shape[1], a_shape[0]) if trans_a else a_shape
    Kb, N = (b_shape[1], b_shape[0]) if trans_b else b_shape
    if K != Kb or M == 0 or N == 0 or K == 0:
        return NotImplemented
    lda, ta, _ = _row_major(a_shape, A.stride(), trans_a)
    ldb, tb, _ = _row_major(b_shape, B.stride(), trans_b)
    if lda is None or ldb is None:
        return NotImplemented
    if C is None:
        if beta != 0.0:
            return NotImplemented
        C = A.new_empty((M, N))
        ldc = N
    else:
        if (type(C) is not type(A) or C.dtype is not f32 or not C.is_cuda or C.get_device() != device
                or C.shape != (M, N)):
            return NotImplemented
        ldc, c_cols = C.stride()
        if c_cols != 1 or ldc < N:
            return NotImplemented
    _fastgemm.cuda_sgemm(kernel, M, N, K, A.data_ptr(), lda, B.data_ptr(), ldb, C.data_ptr(), ldc, ta, tb,
                         alpha, beta, _torch_stream(torch, device), device, precision)
    return C


def check_request(precision, backend, operands) -> None:
    """What every device call refuses before it looks at its arrays: an unknown precision,
    a backend other than cuda, a build without it, and host arrays among the (name,
    operand) pairs given (None stands for an operand left out)."""
    if precision not in PRECISIONS:  # the core's message (fastgemm::parse_accuracy)
        raise NotFoundError(f"unknown precision '{precision}'; accepted: fp32 (FP32-accurate, the default), "
                            f"strict (every product and sum in FP32), tf32 (relaxed inputs allowed)")
    if backend not in ("auto", "cuda"):
        raise ArgumentError(f"device arrays run on the cuda backend, not '{backend}'")
    if not getattr(_fastgemm, "built_with_cuda", False):
        raise BackendUnavailableError("fastgemm was built without the cuda backend (no nvcc at build time)")
    for name, x in operands:
        if x is not None and not is_device_array(x):
            raise ArgumentTypeError(f"{name} is a host array while another operand is on the GPU: "
                            f"pass all operands on the same device (or all as numpy arrays)")


def sgemm(A, B, C=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, kernel="auto", backend="auto",
          precision="fp32"):
    """C = alpha * op(A) @ op(B) + beta * C on device arrays (see the module docstring).

    ``precision`` bounds what ``kernel="auto"`` may pick: "fp32" (the default) an
    FP32-accurate result (precision classes fp32 and fp32x3), "strict" every product and
    sum in FP32 (class fp32), "tf32" relaxed inputs on the tensor cores allowed (any
    class). A named kernel runs as named.
    """
    check_request(precision, backend, (("A", A), ("B", B), ("C", C)))
    trans_a, trans_b = bool(trans_a), bool(trans_b)
    a, b = _View(A, "A"), _View(B, "B")
    if a.device >= 0 and b.device >= 0 and a.device != b.device:
        raise ArgumentError(f"A is on cuda:{a.device} and B on cuda:{b.device}; put them on one device")
    lda, ta, _ = a.row_major(trans_a)
    if lda is None:
        a = _View(_contiguous(A), "A")
        lda, ta, _ = a.row_major(trans_a)
    ldb, tb, _ = b.row_major(trans_b)
    if ldb is None:
        b = _View(_contiguous(B), "B")
        ldb, tb, _ = b.row_major(trans_b)
    M, K = (a.shape[1], a.shape[0]) if trans_a else a.shape
    Kb, N = (b.shape[1], b.shape[0]) if trans_b else b.shape
    if K != Kb:
        raise ShapeError(f"inner dimensions differ: op(A) is {M}x{K} but op(B) is {Kb}x{N}")
    if C is None:
        if beta != 0.0:
            raise ArgumentError("beta != 0 reads C, but no C was given: pass C=, or use beta=0")
        C = _new_like(a, M, N)
    c = _View(C, "C")
    if c.shape != (M, N):
        raise ShapeError(f"C has shape {c.shape}, but op(A) @ op(B) is {M}x{N}")
    if getattr(c, "readonly", False):
        raise ShapeError("C is read-only")
    ldc, _, c_rows = c.row_major(False)
    if ldc is None:
        raise ShapeError(f"C has strides {c.strides}: fastgemm writes C in place and needs rows or columns "
                         f"to be contiguous")
    device = c.device if c.device >= 0 else a.device
    stream = _stream_of(c)
    if M == 0 or N == 0:
        return C
    if c_rows:
        _fastgemm.cuda_sgemm(kernel, M, N, K, a.ptr, lda, b.ptr, ldb, c.ptr, ldc, ta, tb,
                             float(alpha), float(beta), stream, device, precision)
    else:
        # Column-major C is the row-major C^T = op(B)^T op(A)^T.
        _fastgemm.cuda_sgemm(kernel, N, M, K, b.ptr, ldb, a.ptr, lda, c.ptr, ldc, not tb, not ta,
                             float(alpha), float(beta), stream, device, precision)
    return C

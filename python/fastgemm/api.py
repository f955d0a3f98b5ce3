"""The public Python API: sgemm, backends, kernels, benchmark.

These names are the contract; later backends extend them and never rename them.
Everything here is argument checking and layout bookkeeping; the arithmetic and every
timing loop run in the native core with the GIL released.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from . import _fastgemm, arguments
from .errors import (ArgumentError, ArgumentTypeError, ConstraintError, DTypeError, NotFoundError,
                     OutOfMemoryError, ShapeError)

__all__ = ["sgemm", "backends", "kernels", "benchmark", "BenchResult", "empty", "zeros"]

_ITEM = 4  # bytes per float32


def _device_array_hook(A, B, C):
    """Returns the module that handles GPU-resident arrays, or None for host arrays."""
    for x in (A, B, C):
        if x is not None and (hasattr(x, "__cuda_array_interface__") or _is_dlpack_device(x)):
            from . import cuda  # imported lazily: only users of device arrays pay for it

            return cuda
    return None


def _is_dlpack_device(x) -> bool:
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None or isinstance(x, np.ndarray):
        return False
    try:
        return dev()[0] != 1  # 1 == kDLCPU
    except Exception:
        return False


def _unit_inner(x: np.ndarray) -> bool:
    """True when rows are contiguous and row starts advance by a positive whole row or more."""
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return True  # nothing is read; the native layer uses leading dimension max(1, cols)
    if not x.flags.aligned:
        return False  # float loads from an odd address are undefined behaviour in C++
    inner_ok = cols <= 1 or x.strides[1] == _ITEM
    outer_ok = rows <= 1 or (x.strides[0] > 0 and x.strides[0] % _ITEM == 0 and x.strides[0] >= _ITEM * cols)
    return inner_ok and outer_ok


def _row_major_view(x: np.ndarray, trans: bool, name: str):
    """(view, trans) with the same meaning, where view has unit inner stride.

    A Fortran-ordered (column-major) matrix is the row-major transpose of itself, so it
    is passed as x.T with the transpose flag flipped: no copy. Any other layout
    (negative or non-unit strides) is copied once.
    """
    if _unit_inner(x):
        return x, trans
    if _unit_inner(x.T):
        return x.T, not trans
    return _aligned_copy(x, name), trans


def _aligned_copy(x: np.ndarray, name: str) -> np.ndarray:
    """A C-order copy (np.ascontiguousarray would return an unaligned contiguous array
    unchanged). A view whose copy cannot fit (a broadcast of 2^62 elements, say) is
    refused naming the operand, before numpy is asked for the memory."""
    need = x.size * _ITEM
    available = _fastgemm.available_memory_bytes()
    if available and need > available:
        raise OutOfMemoryError(f"{name} (shape {x.shape}, strides {x.strides}) cannot be read in place and its "
                          f"copy needs {need / 2**30:.2f} GiB, but only {available / 2**30:.2f} GiB of memory "
                          f"is available")
    return np.array(x, dtype=np.float32, order="C", copy=True)


def _overlaps(a: np.ndarray, b: np.ndarray) -> bool:
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=100_000))
    except Exception:  # numpy's TooHardError: the exact answer is too costly; assume overlap
        return True


def _overlaps_itself(x: np.ndarray) -> bool:
    """True when two different elements of a 2-D view share memory (as_strided views).

    Elements are 4 bytes wide, so (i, j) and (i + di, j + dj) overlap when their start
    addresses, di*s0 + dj*s1 apart, differ by less than 4 bytes (|di| < rows, |dj| < cols,
    not both 0). A view whose rows (or columns) are laid out one after another cannot
    overlap; with strides that are whole elements the smallest step between two equal
    addresses is di = s1/g, dj = -s0/g with g = gcd(s0, s1), so that test is exact and
    O(1); any other odd layout is refused conservatively.
    """
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return False
    a0, a1 = (abs(s) for s in x.strides)
    if rows == 1:
        return cols > 1 and a1 < _ITEM
    if cols == 1:
        return a0 < _ITEM
    if a1 >= _ITEM and a0 >= (cols - 1) * a1 + _ITEM:
        return False  # each row ends before the next begins
    if a0 >= _ITEM and a1 >= (rows - 1) * a0 + _ITEM:
        return False  # each column ends before the next begins
    if a0 % _ITEM or a1 % _ITEM or a0 == 0 or a1 == 0:
        return True
    g = math.gcd(a0, a1)
    return a1 // g < rows and a0 // g < cols


def sgemm(A, B, C=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
          kernel="auto", backend="auto", precision="fp32"):
    """C = alpha * op(A) @ op(B) + beta * C in float32, with BLAS semantics.

    op(X) is X, or X.T when trans_x is true. ``C`` given: written in place and returned
    (beta == 0 does not read it, so NaN there does not propagate); ``C`` omitted: a new
    array is returned, and beta must be 0. ``kernel="auto"`` picks the fastest kernel
    that accepts the problem, from timings on this machine (see fastgemm.autotune);
    ``backend="auto"`` lets that choice span the available backends (a problem too
    small to pay for a GPU's transfers stays on the CPU). ``precision`` is what "auto"
    may trade: "fp32" (FP32-accurate results: strict FP32 or split tensor-core products,
    the default), "strict" (every product and sum in FP32), "tf32" (relaxed inputs on
    matrix units allowed). Arrays in C order, Fortran order or strided views are
    accepted; CUDA arrays (CuPy, PyTorch) go to the cuda backend without copies when it
    is built.
    """
    if type(A) is _torch_tensor:
        # A torch tensor, once one has been seen: its CUDA fast path first.
        out = _sgemm_torch(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision)
    else:
        out = _fastgemm.sgemm_call(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision)
        if out is NotImplemented and type(A).__module__.split(".")[0] == "torch" and _bind_torch_fast_path(A):
            out = _sgemm_torch(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision)
    if out is NotImplemented:
        out = _sgemm_general(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision)
    return out


class _NoType:
    """Stands for torch.Tensor until a tensor has come to sgemm (nothing is of this type)."""


# torch.Tensor and fastgemm.cuda.sgemm_torch once a tensor has come to sgemm on a build
# with the cuda backend: the common call (float32 CUDA tensors) then costs one type
# check before its fast path, and torch is never imported by fastgemm itself.
_torch_tensor = _NoType
_sgemm_torch = None


def _bind_torch_fast_path(x) -> bool:
    global _torch_tensor, _sgemm_torch
    if not _cuda_built():
        return False
    import torch

    from . import cuda

    _sgemm_torch = cuda.sgemm_torch
    _torch_tensor = torch.Tensor
    return isinstance(x, torch.Tensor)


def _cuda_built() -> bool:
    return bool(getattr(_fastgemm, "built_with_cuda", False))


def _sgemm_general(A, B, C, alpha, beta, trans_a, trans_b, kernel, backend, precision):
    """Every case sgemm's native fast path leaves here: argument errors, array-likes,
    device arrays, layouts that need a copy, aliasing, empty results."""
    alpha = arguments.scalar32(alpha, "alpha")
    beta = arguments.scalar32(beta, "beta")
    kernel = arguments.name(kernel, "kernel")
    backend = arguments.name(backend, "backend")
    precision = arguments.precision(precision)
    device = _device_array_hook(A, B, C)
    if device is not None:
        return device.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                            kernel=kernel, backend=backend, precision=precision)

    trans_a = arguments.flag(trans_a, "trans_a")
    trans_b = arguments.flag(trans_b, "trans_b")
    A = arguments.matrix(A, "A")
    B = arguments.matrix(B, "B")
    M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
    Kb, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
    if K != Kb:
        raise ShapeError(
            f"inner dimensions differ: op(A) is {M}x{K} but op(B) is {Kb}x{N} "
            f"(A.shape={A.shape}, trans_a={trans_a}, B.shape={B.shape}, trans_b={trans_b})"
        )
    if C is None:
        if beta != 0.0:
            raise ArgumentError("beta != 0 reads C, but no C was given: pass C=, or use beta=0")
        C = np.empty((M, N), dtype=np.float32)
        out = C
    else:
        if isinstance(C, np.ma.MaskedArray):
            raise ArgumentTypeError("C is a masked array; fastgemm would ignore its mask: pass a plain ndarray")
        if not isinstance(C, np.ndarray):
            raise ArgumentTypeError(f"C must be a numpy.ndarray (written in place), got {type(C).__name__}")
        if C.dtype != np.float32:
            raise DTypeError(f"C has dtype {C.dtype}; it must be float32 since it is written in place")
        if C.ndim != 2 or C.shape != (M, N):
            raise ShapeError(f"C has shape {C.shape}, but op(A) @ op(B) is {M}x{N}")
        if not C.flags.writeable:
            raise ShapeError("C is read-only; pass a writable array (C.flags.writeable is False)")
        if _overlaps_itself(C):
            raise ShapeError(
                f"C overlaps itself (strides {C.strides}): several of its elements share memory, so "
                f"the result would depend on the order of writes; pass a regular array")
        out = C

    if M == 0 or N == 0:
        # Nothing to compute; the native layer still checks the kernel, backend and
        # constraints (A and B are not read, so no layout copy is made).
        _fastgemm.gemm(backend, kernel, A, B, C, trans_a, trans_b, alpha, beta, precision)
        return out

    # A named kernel that refuses the problem says so before any copy is made (a copy of a
    # broadcast view can need gigabytes).
    info = _constrained_kernel(kernel, backend)
    if info is not None:
        try:
            info.check(M, N, K, trans_a, trans_b, alpha, beta)
        except ConstraintError as e:
            hint = _transpose_hint(info, A, B, (M, N, K, trans_a, trans_b, alpha, beta))
            if hint is None:
                raise
            raise ConstraintError(f"{e}; {hint}") from None

    # Inputs that share memory with C would be overwritten while still being read.
    if _overlaps(A, C):
        A = A.copy()
    if _overlaps(B, C):
        B = B.copy()

    a, ta = _row_major_view(A, trans_a, "A")
    b, tb = _row_major_view(B, trans_b, "B")
    c_layout = "rows" if _unit_inner(C) else "columns" if _unit_inner(C.T) else "copy"
    if info is not None:
        # Layout rewrites (Fortran order as a transpose, column-major C as the transposed
        # problem) must not turn a problem the kernel accepts into one it refuses: fall
        # back to copies that keep the caller's problem exactly.
        rewritten = (N, M, not tb, not ta) if c_layout == "columns" else (M, N, ta, tb)
        m2, n2, ta2, tb2 = rewritten
        if not info.accepts(m2, n2, K, ta2, tb2, alpha, beta):
            a, ta = (A, trans_a) if _unit_inner(A) else (_aligned_copy(A, "A"), trans_a)
            b, tb = (B, trans_b) if _unit_inner(B) else (_aligned_copy(B, "B"), trans_b)
            if c_layout == "columns":
                c_layout = "copy"
    if c_layout == "rows":
        _fastgemm.gemm(backend, kernel, a, b, C, ta, tb, alpha, beta, precision)
    elif c_layout == "columns":
        # Column-major C: C.T = op(B).T @ op(A).T is a row-major problem.
        _fastgemm.gemm(backend, kernel, b, a, C.T, not tb, not ta, alpha, beta, precision)
    else:
        tmp = _aligned_copy(C, "C")
        _fastgemm.gemm(backend, kernel, a, b, tmp, ta, tb, alpha, beta, precision)
        C[...] = tmp
    return out


def _transpose_hint(info, A, B, problem):
    """How to pass a problem that `info` refuses for its transpose flags alone, when an
    operand is a transposed view of a row-major array (W.T for x @ W^T): that array with
    the flag flipped is the same product, and the one the kernel's constraint means."""
    M, N, K, trans_a, trans_b, alpha, beta = problem
    views = [(name, x, flip) for name, x, flip in (("A", A, (True, False)), ("B", B, (False, True)))
             if x.ndim == 2 and x.T.flags.c_contiguous and not x.flags.c_contiguous]
    for name, x, (fa, fb) in views:
        ta, tb = trans_a != fa, trans_b != fb
        if info.accepts(M, N, K, ta, tb, alpha, beta):
            flag, value = ("trans_a", ta) if fa else ("trans_b", tb)
            return (f"{name} is a transposed view of a {x.shape[1]} x {x.shape[0]} row-major array: "
                    f"pass that array ({name}.T) with {flag}={value}")
    return None


def _constrained_kernel(kernel: str, backend: str):
    """KernelInfo of an explicitly named kernel that has constraints, else None."""
    if kernel in ("", "auto"):
        return None
    try:
        info = _fastgemm.resolve_kernel(backend or "auto", kernel)
    except Exception:
        return None  # unknown names: the native call raises the specific error
    return info if info.constraints else None


def backends():
    """Every backend fastgemm knows, with ``available``, ``reason`` (why not) and ``device``."""
    return list(_fastgemm.backends())


def kernels(backend: Optional[str] = None):
    """KernelInfo of every kernel (of one backend), baselines first, then in ladder order."""
    if backend is not None:
        backend = arguments.name(backend, "backend")
    return list(_fastgemm.kernels(backend or ""))


def empty(shape, *, align: int = 16384) -> np.ndarray:
    """An uninitialised float32 array whose data starts on a page boundary.

    Metal can wrap page-aligned memory without a copy (newBufferWithBytesNoCopy), so
    arrays from here reach the GPU zero-copy; 16 KiB covers Apple silicon's page size.
    """
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    shape = tuple(arguments.integer(d, "shape", 0, arguments.INT64_MAX) for d in dims)
    align = arguments.integer(align, "align", 4, 1 << 30)
    if align & (align - 1):
        raise ArgumentError(f"align must be a power of two (bytes), got {align}")
    count = int(np.prod(shape)) if shape else 1
    raw = np.empty(count * _ITEM + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + count * _ITEM].view(np.float32).reshape(shape)


def zeros(shape, *, align: int = 16384) -> np.ndarray:
    """Like :func:`empty`, filled with zeros."""
    out = empty(shape, align=align)
    out[...] = 0.0
    return out


@dataclass
class BenchResult:
    """One kernel verified and timed natively (times in seconds, per iteration).

    With a baseline, ``ratio`` is what to report (baseline time / this kernel's time,
    > 1 is faster) and ``flags`` says how far it can be trusted: a row whose spread, or
    whose re-check of the baseline or the kernel, moved by more than the limits is
    re-measured interleaved with the baseline ("remeasured", ratio from the
    interleaving); when even that disagrees it is "unstable", and a CPU row that shared
    its cores with other processes throughout is "busy"; both leave ``ratio_trusted``
    False. docs/measurement.md has the rules.
    """

    kernel: str
    backend: str
    M: int
    N: int
    K: int
    device_times: List[float]
    host_times: List[float]
    prep_times: List[float]
    threads: int
    verified: bool
    passed: Optional[bool]
    max_abs_diff: Optional[float]
    rel_err: Optional[float]
    tolerance: Optional[float]
    checksum: float
    truncated: bool
    precision: str = "fp32"
    baseline: Optional[str] = None
    baseline_result: Optional["BenchResult"] = None
    ratio: Optional[float] = None  # baseline time / this kernel's time: > 1 is faster
    diff_vs_baseline: Optional[float] = None  # max |C - C_baseline| on the same inputs
    extra: dict = field(default_factory=dict)
    flags: List[str] = field(default_factory=list)  # "noisy", "drift", "remeasured", "unstable", "busy", ...
    ratio_trusted: Optional[bool] = None  # None without a baseline
    block_ratio: Optional[float] = None  # from the two timed blocks, before any re-measure
    baseline_drift: Optional[float] = None  # the baseline's change across this kernel's run
    baseline_check_times: List[float] = field(default_factory=list)  # the baseline re-timed after it
    kernel_drift: Optional[float] = None  # this kernel's change between its block and its check
    kernel_check_times: List[float] = field(default_factory=list)  # then this kernel re-timed
    others_runnable: Optional[List[int]] = None  # other processes' runnable threads before, after
    interleaved: Optional[dict] = None  # the ABAB re-measure: baseline_s, kernel_s, ratio, spread
    # Checked elements outside float32's ordinary range (alpha or beta NaN or Inf, or an
    # overflow), held to IEEE rules instead of the tolerance; rel_err covers the others.
    ieee_elements: Optional[int] = None

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K

    @property
    def device_median(self) -> float:
        return float(np.median(self.device_times))

    @property
    def device_min(self) -> float:
        return float(np.min(self.device_times))

    @property
    def device_spread(self) -> float:
        """Interquartile range / median of the device times (the core's relative_spread)."""
        return _fastgemm.relative_spread(list(self.device_times))

    @property
    def host_median(self) -> float:
        return float(np.median(self.host_times))

    @property
    def host_min(self) -> float:
        return float(np.min(self.host_times))

    @property
    def host_spread(self) -> float:
        return _fastgemm.relative_spread(list(self.host_times))

    @property
    def prep_median(self) -> float:
        return float(np.median(self.prep_times)) if self.prep_times else 0.0

    @property
    def gflops(self) -> float:
        """GFLOP/s from the median device time."""
        return self.flops / self.device_median * 1e-9

    @property
    def gflops_best(self) -> float:
        """GFLOP/s from the fastest iteration (the seeds' best-of)."""
        return self.flops / self.device_min * 1e-9

    @classmethod
    def from_native(cls, r, precision: str) -> "BenchResult":
        v = r.verification
        return cls(
            kernel=r.kernel, backend=r.backend, M=r.M, N=r.N, K=r.K,
            device_times=list(r.device_s), host_times=list(r.host_s), prep_times=list(r.prep_s),
            threads=r.threads, verified=r.verified,
            passed=v.passed if r.verified else None,
            max_abs_diff=v.max_abs_diff if r.verified else None,
            rel_err=v.rel_err if r.verified else None,
            tolerance=v.tolerance if r.verified else None,
            checksum=v.checksum, truncated=r.truncated, precision=precision,
            ieee_elements=v.ieee_elements if r.verified else None,
        )

    @classmethod
    def from_timings(cls, t, baseline_result: Optional["BenchResult"] = None) -> "BenchResult":
        """From the core's Timings (one kernel measured by the core's BaselineComparison)."""
        result = cls.from_native(t, t.precision)
        result.flags = list(t.flags)
        if t.others_before >= 0 or t.others_after >= 0:
            result.others_runnable = [t.others_before, t.others_after]
        if t.baseline is None:
            return result
        if baseline_result is None:
            baseline_result = cls.from_native(t.baseline, _fastgemm.kernel_info(t.backend, t.baseline.kernel).precision)
        result.baseline = baseline_result.kernel
        result.baseline_result = baseline_result
        result.ratio = t.ratio
        result.ratio_trusted = t.ratio_trusted
        result.block_ratio = t.block_ratio
        result.diff_vs_baseline = t.diff_vs_baseline
        result.baseline_drift = t.baseline_drift
        result.baseline_check_times = list(t.baseline_check.device_s) if t.baseline_check is not None else []
        result.kernel_drift = t.kernel_drift
        result.kernel_check_times = list(t.kernel_check.device_s) if t.kernel_check is not None else []
        if t.interleaved is not None:
            il = t.interleaved
            result.interleaved = {"baseline_s": list(il.baseline_s), "kernel_s": list(il.kernel_s),
                                  "ratio": il.ratio, "spread": il.spread}
        return result

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in (
            "kernel", "backend", "M", "N", "K", "threads", "precision", "verified", "passed",
            "max_abs_diff", "rel_err", "tolerance", "checksum", "truncated", "baseline", "ratio",
            "diff_vs_baseline", "device_times", "host_times", "prep_times", "flags", "ratio_trusted",
            "block_ratio", "baseline_drift", "baseline_check_times", "kernel_drift", "kernel_check_times",
            "others_runnable", "interleaved", "ieee_elements")}
        d.update(device_median=self.device_median, device_min=self.device_min, device_spread=self.device_spread,
                 host_median=self.host_median, host_min=self.host_min, host_spread=self.host_spread,
                 gflops=self.gflops)
        d.update(self.extra)
        return d


def _resolve_backend_for(kernel: str, backend: Optional[str]) -> str:
    """The backend a benchmark of `kernel` runs on: the one named, or the core's rule
    for backend "auto" (the best available backend that has a kernel of that name), the
    same rule sgemm uses."""
    if backend and backend != "auto":
        return backend
    if kernel == "auto":
        return _fastgemm.best_backend()
    return _fastgemm.resolve_kernel("auto", kernel).backend


def default_baseline(backend: str) -> Optional[str]:
    """The first baseline kernel of a backend (openblas, accelerate, mps, cublas...)."""
    for k in _fastgemm.kernels(backend):
        if k.baseline:
            return k.name
    return None


def benchmark(kernel, M, N=None, K=None, *, backend=None, warmup=3, iters=10, verify=True,
              baseline=None, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, seed=0x5EED,
              max_seconds=0.0, bench=None) -> BenchResult:
    """Verify, then time ``kernel`` on an M x N x K problem of random inputs, natively.

    ``N`` and ``K`` default to ``M``. ``baseline`` names a kernel of the same backend (or
    True for the backend's vendor baseline); it runs on the same inputs in the same
    call, and ``ratio`` = baseline time / kernel time (> 1 means faster than the
    baseline). Times are per iteration, measured in native code around the kernel
    (device) and around the complete call (host). The measurement is the core's one
    baseline-then-kernel path: see :class:`BenchResult` for the flags it sets.
    """
    kernel = arguments.name(kernel, "kernel")
    if backend is not None:
        backend = arguments.name(backend, "backend")
    M = arguments.integer(M, "M", 0, arguments.INT64_MAX)
    N = M if N is None else arguments.integer(N, "N", 0, arguments.INT64_MAX)
    K = M if K is None else arguments.integer(K, "K", 0, arguments.INT64_MAX)
    warmup = arguments.integer(warmup, "warmup", 0, arguments.INT32_MAX)
    iters = arguments.integer(iters, "iters", 1, arguments.INT32_MAX)
    seed = arguments.integer(seed, "seed", 0, arguments.UINT64_MAX)
    max_seconds = arguments.seconds(max_seconds, "max_seconds")
    verify = arguments.flag(verify, "verify")
    trans_a = arguments.flag(trans_a, "trans_a")
    trans_b = arguments.flag(trans_b, "trans_b")
    alpha = arguments.scalar32(alpha, "alpha")
    beta = arguments.scalar32(beta, "beta")
    if bench is not None and not isinstance(bench, _fastgemm.Bench):
        raise ArgumentTypeError(f"bench must be a fastgemm._fastgemm.Bench (or None), got {type(bench).__name__}")
    if baseline is not None and not isinstance(baseline, (bool, str)):
        raise ArgumentTypeError(f"baseline must be a kernel name, True or None, got {type(baseline).__name__}")
    be = _resolve_backend_for(kernel, backend)
    if baseline is True or baseline == "auto":
        baseline = default_baseline(be)
        if baseline is None:
            raise NotFoundError(f"backend '{be}' has no baseline kernel")
    if bench is None:
        bench = _fastgemm.Bench(M, N, K, trans_a, trans_b, alpha, beta, seed)
    t = _fastgemm.benchmark(bench, be, kernel, baseline or "", warmup, iters, verify, max_seconds)
    return BenchResult.from_timings(t)

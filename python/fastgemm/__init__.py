"""fastgemm: a ladder of SGEMM kernels, each verified and timed against the vendor library.

    import numpy as np, fastgemm
    A = np.random.rand(512, 256).astype(np.float32)
    B = np.random.rand(256, 128).astype(np.float32)
    C = fastgemm.sgemm(A, B)                        # fastest correct kernel here
    C = fastgemm.sgemm(A, B, kernel="ikj")          # one rung of the ladder
    r = fastgemm.benchmark("ikj", 512, baseline=True)
    print(r.gflops, r.ratio, r.rel_err)
"""

try:  # the cpu baseline's OpenBLAS lives in this wheel on Linux; loading it first is harmless
    import scipy_openblas32 as _scipy_openblas32  # noqa: F401
except ImportError:
    pass

from . import _fastgemm, arguments
from .api import BenchResult, backends, benchmark, empty, kernels, sgemm, zeros
from .matmul import matmul
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    BackendUnavailableError,
    ConstraintError,
    DTypeError,
    FastgemmError,
    KernelError,
    NotFoundError,
    OutOfMemoryError,
    ShapeError,
)
from . import autotune as _autotune
from ._cmake import cmake_dir

__version__ = _fastgemm.__version__


def get_num_threads() -> int:
    """Threads the CPU kernels (and the BLAS baseline) use."""
    return _fastgemm.get_num_threads()


def set_num_threads(n: int) -> None:
    """Set the CPU thread count (default: FASTGEMM_NUM_THREADS, else the usable cores).

    n is an integer (numpy integers too) from 1 to fastgemm.arguments.MAX_THREADS."""
    _fastgemm.set_num_threads(arguments.integer(n, "n", 1, arguments.MAX_THREADS))


# The environment variables the core reads at start-up, checked by the same rules as
# arguments: an invalid value is reported once and ignored.
arguments.env_threads("FASTGEMM_NUM_THREADS")
arguments.env_flag("FASTGEMM_AUTOTUNE", True)
arguments.env_flag("FASTGEMM_CUDA_GRAPHS", True)
_autotune.load()


def __getattr__(name):
    # fastgemm.emu, fastgemm.cuda, ... after a plain `import fastgemm`, imported on first
    # use so that users of one backend do not pay for the others.
    if name in ("emu", "cuda", "metal", "harness", "roofline", "plots", "report"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'fastgemm' has no attribute {name!r}")

def _build_lazy_native_state() -> None:
    """One small parallel call at import, in the importing thread: the native core builds its
    function-local statics (thread pool, Ctrl-C handler, kernel dispatch, the tuning table)
    on first use, and a fork() while another thread is inside one of those first
    initialisations would copy its guard as "in progress", so that the child's first call
    waited for ever."""
    import numpy as np
    a = np.ones((256, 256), np.float32)
    sgemm(a, a, kernel="packed", backend="cpu")
    _fastgemm.tuning_table()


_build_lazy_native_state()

try:  # let threadpoolctl.threadpool_limits(1) limit fastgemm too, when threadpoolctl is installed
    from . import _threadpoolctl  # noqa: F401
except ImportError:
    pass

__all__ = [
    "sgemm", "matmul", "backends", "kernels", "benchmark", "BenchResult", "empty", "zeros",
    "get_num_threads", "set_num_threads", "cmake_dir", "__version__",
    "FastgemmError", "ShapeError", "DTypeError", "ConstraintError", "NotFoundError",
    "BackendUnavailableError", "KernelError",
]

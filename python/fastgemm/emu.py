"""Run any Metal Shading Language kernel on the CPU (the metal-emu emulator).

    import numpy as np, fastgemm.emu
    x = np.arange(64, dtype=np.float32); y = np.zeros_like(x)
    fastgemm.emu.run(\'\'\'
        #include <metal_stdlib>
        using namespace metal;
        kernel void twice(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) { y[i] = 2 * x[i]; }
    \'\'\', "twice", threadgroups=2, threads_per_threadgroup=32, buffers=[x, y])

The source is compiled as host C++ with the system compiler against metal-emu's shim headers
at first use and cached by content hash (FASTGEMM_EMU_CACHE, else the user cache directory;
safe for several processes at once). By default the safe policy refuses what no Metal shader
can do (host headers, calls outside the emulator runtime and the math library, static
initialisers, inline assembly); `trusted=True` lifts it for code you trust. Dispatches run
in a worker process: a shader that faults, divides by zero, aborts or overruns its time
limit raises KernelError naming the kernel, threadgroup and thread, and Ctrl-C stops it.
The emulator checks correctness; it never measures performance. See docs/metal-emu.md.
"""
from __future__ import annotations

import argparse
import atexit
import fcntl
import hashlib
import importlib.util
import mmap
import numbers
import os
import pickle
import re
import select
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import ArgumentError, ArgumentTypeError, FastgemmError, KernelError, NotFoundError

__all__ = ["run", "compile", "EmuCompileError", "EmuRefusedError", "EmuModule", "Texture",
           "ArgumentBuffer",
           "emu_dir", "main_emu", "add_emu_parser"]

_ORDERS = {"natural": 0, "reversed": 1, "shuffled": 2}
DEFAULT_TIME_LIMIT_S = 300.0
# A time limit this long (about 115 days) or longer, math.inf included, means none.
_NO_TIME_LIMIT_S = 1e7
_MAX_OS_THREADS = 1024
_STACK_KB_RANGE = (16, 1 << 20)


class EmuCompileError(FastgemmError, RuntimeError):
    """The MSL source did not translate or compile. The message starts with the file and
    line, then "unsupported: <construct>" (or the compiler's first error)."""


class EmuRefusedError(EmuCompileError):
    """The safe policy refused the source (pass trusted=True for code you trust)."""


def emu_dir() -> Path:
    """Folder with include/ (shim headers), runtime/, msl_scan.py and worker.py.

    Installed: site-packages/fastgemm/emu. From a source checkout: src/emu.
    """
    here = Path(__file__).resolve().parent
    for cand in (here / "emu", here.parent.parent / "src" / "emu"):
        if (cand / "msl_scan.py").is_file() and (cand / "include" / "metal_stdlib").is_file():
            return cand
    raise FastgemmError("metal-emu shim headers not found (expected fastgemm/emu or src/emu)")


def _scanner():
    name = "fastgemm._msl_scan"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, emu_dir() / "msl_scan.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while it executes
    spec.loader.exec_module(mod)
    return mod


def _cache_dir() -> Path:
    env = os.environ.get("FASTGEMM_EMU_CACHE")
    if env:
        base = Path(env)
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches" / "fastgemm" / "emu"
    else:
        # An empty or relative XDG_CACHE_HOME is invalid (XDG base directory rules): ignored.
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "fastgemm" / "emu"
    where = f"FASTGEMM_EMU_CACHE={env!r}" if env else f"the emulator's cache folder {base}"
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EmuCompileError(f"{where}: cannot create or use it ({e.strerror}); "
                              f"point FASTGEMM_EMU_CACHE at a writable folder") from None
    if not os.access(base, os.W_OK | os.X_OK):
        raise EmuCompileError(f"{where}: the folder is not writable; point FASTGEMM_EMU_CACHE at a "
                              "writable folder")
    return base


def _split_env(var: str, default: str) -> List[str]:
    """A command line from an environment variable, split as a shell would; a value that
    does not split is refused with the variable's name."""
    raw = os.environ.get(var, default)
    try:
        return shlex.split(raw)
    except ValueError as e:
        raise EmuCompileError(f"{var}={raw!r} does not split into words ({e})") from None


def _compiler() -> List[str]:
    cxx = _split_env("CXX", "c++")
    if not cxx or shutil.which(cxx[0]) is None:
        raise EmuCompileError(f"CXX={os.environ.get('CXX', 'c++')!r}: no such C++ compiler "
                              f"(the emulator compiles shaders with it)")
    return cxx


def _extra_flags() -> List[str]:
    return _split_env("FASTGEMM_EMU_CXXFLAGS", "")


_compiler_ids: Dict[tuple, str] = {}


def _compiler_identity(cxx: List[str]) -> str:
    """What the compiler command resolves to, for cache keys: the executable's real path,
    size and modification time, and its --version line. A `c++` that now names another
    compiler, or the same compiler upgraded, gives another key. Once per process."""
    key = tuple(cxx)
    if key not in _compiler_ids:
        exe = shutil.which(cxx[0])
        real = os.path.realpath(exe) if exe else cxx[0]
        try:
            st = os.stat(real)
            stamp = f"{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            stamp = "?"
        try:
            proc = subprocess.run(cxx + ["--version"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, timeout=60)
            version = proc.stdout.strip().split("\n", 1)[0]
        except (OSError, subprocess.SubprocessError):
            version = "?"
        _compiler_ids[key] = f"{real} {stamp} {version}"
    return _compiler_ids[key]


def _hash_files(h, paths: Iterable[Path]):
    for p in sorted(paths):
        h.update(str(p.name).encode())
        h.update(p.read_bytes())


@contextmanager
def _cache_lock(path: Path):
    """An exclusive lock on `path` (a file beside a cache entry) across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# No shader takes this long to compile; a source that does (macros that double at every
# level, say) is stopped, compiler processes and all, instead of running for ever.
COMPILE_TIME_LIMIT_S = 600.0


def _run_compiler(cmd: List[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, LC_ALL="C")  # plain quotes in diagnostics, which are parsed
    try:
        return _scanner().run_bounded(cmd, COMPILE_TIME_LIMIT_S, env=env, merge_stderr=True)
    except subprocess.TimeoutExpired:
        raise EmuCompileError(f"compiling for metal-emu took longer than {COMPILE_TIME_LIMIT_S:g} s and "
                              f"was stopped ({Path(cmd[0]).name})") from None


_lock = threading.Lock()
_modules: Dict[str, "EmuModule"] = {}
_memo: Dict[tuple, Tuple[str, List[Tuple[str, float]]]] = {}


def _runtime_objects(cxx: List[str], flags: List[str]) -> List[Path]:
    """The emulator runtime, compiled once per compiler/flags/runtime version."""
    d = emu_dir()
    sources = sorted((d / "runtime").glob("*.cpp"))
    h = hashlib.sha256()
    h.update(repr((cxx, _compiler_identity(cxx), flags)).encode())
    _hash_files(h, sources + sorted((d / "runtime").glob("*.hpp")) +
                sorted((d / "include" / "fgemu").glob("*.hpp")))
    out = _cache_dir() / ("runtime-" + h.hexdigest()[:20])
    objs = [out / (s.stem + ".o") for s in sources]
    if all(_intact(o) for o in objs):
        return objs
    with _cache_lock(out.with_suffix(".lock")):
        out.mkdir(parents=True, exist_ok=True)
        for s, o in zip(sources, objs):
            if _intact(o):
                continue
            tmp = o.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp.o")
            proc = _run_compiler(cxx + ["-std=c++20", "-fPIC", "-fvisibility=hidden", "-O2", "-g"] +
                                 flags + ["-I", str(d / "include"), "-c", str(s), "-o", str(tmp)])
            if proc.returncode != 0:
                raise EmuCompileError(f"compiling the metal-emu runtime ({s.name}) failed:\n"
                                      f"{proc.stdout.strip()[:4000]}")
            _publish(tmp, o)
    return objs


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _intact(path: Path) -> bool:
    """True when a cache file matches the digest recorded when it was published: a file
    truncated, emptied or overwritten since (a full disk, a stray tool) is rebuilt, not
    used. (An emptied object file even links: as an empty linker script.)"""
    try:
        recorded = _digest_path(path).read_text().strip()
        return hashlib.sha256(path.read_bytes()).hexdigest() == recorded
    except (OSError, UnicodeDecodeError):
        return False


def _publish(tmp: Path, path: Path) -> None:
    """Moves a built file into the cache with its digest (see _intact)."""
    digest_tmp = tmp.with_name(tmp.name + ".sha256")
    digest_tmp.write_text(hashlib.sha256(tmp.read_bytes()).hexdigest() + "\n")
    os.replace(tmp, path)
    os.replace(digest_tmp, _digest_path(path))


# kind: (coordinate axes, arrayed, the runtime's TextureBinding::Kind).
_TEXTURE_KINDS = {"1d": (1, False, 1), "1d_array": (1, True, 2), "2d": (2, False, 3), "2d_array": (2, True, 4),
                  "cube": (2, True, 5), "3d": (3, False, 6), "buffer": (1, False, 7)}
_TEXTURE_FORMATS = {"float32": 0, "float16": 1, "int32": 2, "uint32": 3, "int16": 4, "uint16": 5,
                    "int8": 6, "uint8": 7}


class Texture:
    """A texture for a kernel's [[texture(n)]] argument, over a C-contiguous array.

    kind: "1d" or "buffer" (W[, C]), "1d_array" (slices, W[, C]), "2d" (H, W[, C]),
    "2d_array" (slices, H, W[, C]), "cube" (6, H, W[, C]), "3d" (D, H, W[, C]); C (1-4
    channels) is the last axis when present. The dtype is the storage format: float32,
    float16, or 8/16/32-bit integers (a float texture reads those as unorm/snorm). What the
    kernel writes lands in the array.
    """

    def __init__(self, data, kind: str = "2d"):
        import numpy as np
        if kind not in _TEXTURE_KINDS:
            raise ArgumentError(f"kind must be one of {sorted(_TEXTURE_KINDS)}, got {kind!r}")
        arr = np.asarray(data)
        if arr.dtype.name not in _TEXTURE_FORMATS:
            raise ArgumentError(f"texture dtype {arr.dtype} is not one of {sorted(_TEXTURE_FORMATS)}")
        if not arr.flags.c_contiguous:
            raise ArgumentError("texture data must be C-contiguous")
        dims, arrayed, kind_code = _TEXTURE_KINDS[kind]
        base = dims + (1 if arrayed else 0)
        if arr.ndim == base + 1:
            channels = arr.shape[-1]
            shape = arr.shape[:-1]
        elif arr.ndim == base:
            channels, shape = 1, arr.shape
        else:
            raise ArgumentError(f"a {kind} texture needs {base} or {base + 1} axes, got shape {arr.shape}")
        if not 1 <= channels <= 4:
            raise ArgumentError(f"textures have 1-4 channels, got {channels}")
        slices = shape[0] if arrayed else 1
        rest = shape[1:] if arrayed else shape
        width = rest[-1]
        height = rest[-2] if dims >= 2 else 1
        depth = rest[-3] if dims >= 3 else 1
        if kind == "cube" and slices != 6:
            raise ArgumentError(f"a cube texture has 6 faces, got {slices}")
        if 0 in shape:
            raise ArgumentError(f"a texture has at least one texel along every axis, got shape {arr.shape}")
        self.data = data if isinstance(data, np.ndarray) else arr
        # The runtime's texture description (src/emu/runtime/c_api.cpp, texture_binding).
        self.desc = [int(width), int(height), int(depth), int(slices), int(channels),
                     _TEXTURE_FORMATS[arr.dtype.name], kind_code]

    def binding(self) -> Tuple[memoryview, list]:
        """The texels' bytes and the description the worker binds them with."""
        return memoryview(self.data).cast("B"), self.desc


class ArgumentBuffer:
    """What the host encodes into an argument buffer: a struct with [[id(n)]] members that
    a kernel takes at [[buffer(n)]], given in `buffers` at that index.

    members: {id: object}. For a pointer member, a bytes-like object (a numpy array) bound
    as the buffer it points to; what the kernel writes lands in writable objects. For a
    plain-data member (a scalar, vector or struct), its exact bytes (e.g. np.uint32(n)).
    For a texture member, a Texture. An array member `T m[N] [[id(k)]]` takes ids
    k..k+N-1. Ids the host leaves out hold zero (a null pointer; a sampler member samples
    nearest with clamp to edge). The struct is laid out by the compiler, as with Metal 3's
    GPU-address encoding.
    """

    def __init__(self, members: Mapping[int, object]):
        if not isinstance(members, Mapping):
            raise ArgumentTypeError(f"ArgumentBuffer members must be a dict from [[id(n)]] to an "
                            f"object, got {type(members).__name__}")
        self.members = {}
        for k, obj in members.items():
            k = int(k) if _whole(k) else k
            if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < 1 << 16:
                raise ArgumentError(f"ArgumentBuffer id must be an int in 0..65535, got {k!r}")
            if isinstance(obj, ArgumentBuffer):
                raise ArgumentTypeError(f"ArgumentBuffer id {k}: unsupported: an argument buffer "
                                "inside an argument buffer")
            if obj is not None and not isinstance(obj, Texture):
                _bytes_view(obj, f"ArgumentBuffer id {k}")  # bytes-like and C-contiguous
            self.members[k] = obj


class EmuModule:
    """One compiled MSL source: its kernels, runnable with run() (in the worker process)."""

    def __init__(self, so_path: Path, display: str):
        self.path = so_path
        self.display = display
        self._kernels: Optional[List[str]] = None
        self._constants_table: Optional[Dict[str, Tuple[int, int]]] = None

    @property
    def kernels(self) -> List[str]:
        if self._kernels is None:
            text = _worker_call({"op": "list", "so": str(self.path)}, None, self.display)["text"]
            self._kernels = [s for s in text.split("\n") if s]
        return list(self._kernels)

    def bindings(self, kernel: str) -> List[Tuple[str, int]]:
        """The ("buffer" | "texture", index) of each [[buffer(n)]] and [[texture(n)]]
        argument of `kernel`, in declaration order; [] for a kernel this module lacks."""
        text = _worker_call({"op": "bindings", "so": str(self.path), "kernel": kernel}, None,
                            self.display)["text"]
        return [(kind, int(index)) for kind, index in (line.split(" ") for line in text.split("\n") if line)]

    def _constants(self) -> Dict[str, Tuple[int, int, str]]:
        if self._constants_table is None:
            text = _worker_call({"op": "constants", "so": str(self.path)}, None,
                                self.display)["text"]
            out = {}
            for line in text.split("\n"):
                if line:
                    idx, name, size, kind = line.split(" ")
                    out[name] = (int(idx), int(size), kind)
            self._constants_table = out
        return self._constants_table

    def run(self, kernel: str, *, threadgroups, threads_per_threadgroup, buffers,
            constants=None, threadgroup_memory=None, strict=False, order="natural", seed=1,
            os_threads=0, stack_kb=None, time_limit=DEFAULT_TIME_LIMIT_S, textures=None):
        if not isinstance(kernel, str) or not kernel:
            raise ArgumentTypeError("kernel must be a non-empty string (a function name or host_name)")
        if "\0" in kernel or not kernel.isprintable():
            raise ArgumentError(f"kernel {kernel!r} is not a function name (control characters)")
        groups = _size3(threadgroups, "threadgroups")
        tpg = _size3(threads_per_threadgroup, "threads_per_threadgroup")
        if order not in _ORDERS:
            raise ArgumentError(f"order must be one of {sorted(_ORDERS)}, got {order!r}")
        if not isinstance(os_threads, int) or isinstance(os_threads, bool) or \
                not 0 <= os_threads <= _MAX_OS_THREADS:
            raise ArgumentError(f"os_threads must be 0 (automatic) or 1..{_MAX_OS_THREADS}, "
                             f"got {os_threads!r}")
        if stack_kb is not None and (not isinstance(stack_kb, int) or isinstance(stack_kb, bool)
                                     or not _STACK_KB_RANGE[0] <= stack_kb <= _STACK_KB_RANGE[1]):
            raise ArgumentError(f"stack_kb must be None or an int in {_STACK_KB_RANGE[0]}.."
                             f"{_STACK_KB_RANGE[1]}, got {stack_kb!r}")
        if time_limit is not None and (isinstance(time_limit, bool) or
                                       not isinstance(time_limit, (int, float)) or
                                       not time_limit > 0):
            raise ArgumentError(f"time_limit must be None or a positive number of seconds, "
                             f"got {time_limit!r}")
        if time_limit is not None and time_limit >= _NO_TIME_LIMIT_S:
            time_limit = None  # math.inf, or longer than any run: no limit
        if not isinstance(seed, int) or not 0 <= seed < 2 ** 64:
            raise ArgumentError(f"seed must be an int in 0..2**64-1, got {seed!r}")
        views, argbufs = _buffer_views(buffers)
        texs = []
        for i, t in enumerate(_index_list(textures or [], "textures")):
            if t is None:
                texs.append(None)
                continue
            t = t if isinstance(t, Texture) else Texture(t)
            texs.append(t.binding())
        tg = _index_list(threadgroup_memory or [], "threadgroup_memory")
        tg_lens = []
        for i, x in enumerate(tg):
            x = int(x) if _whole(x) else x
            if x is not None and (not isinstance(x, int) or isinstance(x, bool) or not 0 <= x <= _MAX_TG_MEMORY
                                  or x % 16):
                raise ArgumentError(f"threadgroup_memory[{i}] must be a multiple of 16 bytes in "
                                    f"0..{_MAX_TG_MEMORY} (Apple GPUs have 32 KiB), got {x!r}")
            tg_lens.append(int(x or 0))
        fcs = []
        if constants:
            if not isinstance(constants, Mapping):
                raise ArgumentTypeError(f"constants must be a dict from index or name to value, "
                                        f"got {type(constants).__name__}")
            table = self._constants()
            by_index = {i: (n, s, k) for n, (i, s, k) in table.items()}
            for key, value in constants.items():
                if isinstance(key, str):
                    if key not in table:
                        raise NotFoundError(f"no function constant named {key!r} in {self.display}")
                    idx, size, kind = table[key]
                    name = key
                else:
                    if isinstance(key, bool) or not isinstance(key, int) or key not in by_index:
                        raise NotFoundError(f"no [[function_constant({key!r})]] in {self.display}")
                    idx, (name, size, kind) = key, by_index[key]
                fcs.append((idx, _constant_bytes(value, size, kind, f"constant {name}")))
        req = {"op": "run", "so": str(self.path), "kernel": kernel, "groups": groups,
               "tpg": tpg, "threadgroup_memory": tg_lens, "constants": fcs,
               "strict": 1 if strict else 0, "order": _ORDERS[order], "seed": seed,
               "os_threads": os_threads, "stack_kb": stack_kb or 0,
               "time_limit": float(time_limit or 0)}
        what = f"kernel {kernel} of {self.display}"
        ans = _worker_call(req, time_limit, what, views, texs, argbufs)
        if ans["rc"] == 2:
            raise NotFoundError(ans["text"])
        if ans["rc"] == 4:
            raise ArgumentError(f"metal-emu: {what}: {ans['text']}")
        if ans["rc"] != 0:
            raise KernelError("metal-emu: " + ans["text"])


# ---- compiling ---------------------------------------------------------------------------------

_ASM = re.compile(r"\b(asm|__asm__|__asm)\b")
_ATTRIBUTE = re.compile(r"\b(__attribute__|__attribute|__declspec)\s*\(")
# Attributes no Metal shader has, which run code at load time, place code or data where
# the shader chooses, or bind a name to a host function that the symbol check would see
# only as a weak reference.
_REFUSED_ATTRS = {
    "constructor": "a constructor/destructor attribute (code run at load time)",
    "destructor": "a constructor/destructor attribute (code run at load time)",
    "init_priority": "a constructor/destructor attribute (code run at load time)",
    "section": "a section attribute (code or data placed in a section of its choosing)",
    "ifunc": "an ifunc attribute (a resolver run at load time)",
    "weak": "a weak attribute (a reference to a host function)",
    "weakref": "a weakref attribute (a reference to a host function)",
    "allocate": "a section attribute (code or data placed in a section of its choosing)",
}
_REFUSED_PRAGMA = re.compile(r"^#pragma\s+(weak|redefine_extname|clang\s+section|section|"
                             r"init_seg|GCC\s+dependency)\b", re.M)


def _policy_check_source(pp: str, lines) -> None:
    """Refusals that need the preprocessed source: inline assembly, load-time functions,
    section placement, weak references (attributes and pragmas)."""
    scan = _scanner()
    masked = scan.mask(pp)
    m = scan.blank_directives(masked)

    def refuse(pos: int, what: str):
        raise EmuRefusedError(f"{lines.where(pos)}: refused: {what}; no Metal shader "
                              "can use it (trusted=True compiles it anyway)")
    hit = _ASM.search(m)
    if hit:
        refuse(hit.start(), "inline assembly")
    for a in _ATTRIBUTE.finditer(m):
        try:
            end = scan.match_close(m, a.end() - 1, "(", ")")
        except scan.ScanError:  # unbalanced: the compiler stops at it
            end = len(m)
        for word in re.findall(r"[A-Za-z_]\w*", m[a.end():end]):
            what = _REFUSED_ATTRS.get(word.strip("_"))
            if what:
                refuse(a.start(), what)
    hit = _REFUSED_PRAGMA.search(masked)
    if hit:
        refuse(hit.start(), f"#pragma {' '.join(hit.group(1).split())}")


# Undefined symbols a translated shader may use: the emulator runtime, the math library, and
# what the C++ compiler itself emits for the shims (string building for error messages,
# exceptions, half-precision conversions, 128-bit arithmetic, stack protector, TLS).
_ALLOWED_SYMBOL = re.compile(r"""^(
    _ZN5fgemu\w* | _ZNK5fgemu\w* |
    _ZNSt7__cxx1112basic_string\w* | _ZNKSt7__cxx1112basic_string\w* |
    _ZSt\d+__throw_\w+ | _ZSt9terminatev | _ZSt28__throw_bad_array_new_lengthv |
    _ZdlPv\w* | _ZdaPv\w* | _Znwm\w* | _Znam\w* |
    __cxa_\w+ | __gxx_personality_v0 | _Unwind_Resume | __stack_chk_fail | __tls_get_addr |
    _ZTI\w+ | _ZTV\w+ | _ZTS\w+ | _ZNSt\d+(runtime_error|logic_error|exception|bad_alloc|
        out_of_range|invalid_argument|length_error)\w* | _ZNKSt\d+(runtime_error|exception)\w* |
    _ZNSt9exception\w* | _ZNKSt9exception\w* |
    memcpy | memmove | memset | memcmp | strlen | __memcpy_chk | __memset_chk | __memmove_chk |
    __dso_handle | _GLOBAL_OFFSET_TABLE_ |
    __(extend|trunc)\w+f2 | __\w+ti3 | __\w+di2 | __\w+hf\w* | __\w+bf\w* |
    __atomic_\w+ |
    (a?sin|a?cos|a?tan|atan2|sinh|cosh|tanh|asinh|acosh|atanh|exp|exp2|exp10|expm1|log|log2|
     log10|log1p|pow|sqrt|cbrt|hypot|fabs|floor|ceil|trunc|round|lround|llround|rint|lrint|
     llrint|nearbyint|fmod|remainder|remquo|fma|fmin|fmax|fdim|copysign|nextafter|nexttoward|
     frexp|ldexp|scalbn|scalbln|ilogb|logb|modf|erf|erfc|tgamma|lgamma|sincos)[fl]? |
    __(sin|cos|exp|log|pow|sqrt|finite|isinf|isnan|fpclassify|signbit)[fl]?(_finite)?\w*
)$""", re.X)


def _policy_check_symbols(obj: Path, cxx: List[str], display: str) -> None:
    nm = os.environ.get("NM") or shutil.which("nm") or shutil.which("llvm-nm")
    if not nm:
        raise EmuRefusedError("refused: no `nm` to check the compiled shader's symbols "
                              "(install binutils, or pass trusted=True)")
    proc = subprocess.run([nm, "-P", str(obj)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise EmuRefusedError(f"refused: cannot list the symbols of {display}: {proc.stderr.strip()}")
    bad, init, ifunc = [], [], []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        name = name[1:] if sys.platform == "darwin" and name.startswith("_") else name
        # U: undefined; w, v: undefined weak (a weak declaration, `#pragma weak` or a
        # weakref), which binds to the host function just the same.
        if kind in ("U", "w", "v") and not _ALLOWED_SYMBOL.match(name):
            bad.append(name)
        if kind == "i":
            ifunc.append(name)
        if "_GLOBAL__sub_I_" in name or "_GLOBAL__sub_D_" in name:
            init.append(name)
    if init:
        raise EmuRefusedError(f"{display}: refused: a static initialiser (a program-scope "
                              "variable whose value is computed when the module loads); Metal "
                              "program-scope variables are compile-time constants (trusted=True "
                              "compiles it anyway)")
    if ifunc:
        raise EmuRefusedError(f"{display}: refused: an ifunc ({_demangle(ifunc[0])}), whose "
                              "resolver runs when the module loads; no Metal shader has one "
                              "(trusted=True compiles it anyway)")
    if bad:
        names = sorted({_demangle(b) for b in bad})
        raise EmuRefusedError(f"{display}: refused: the shader calls {', '.join(names[:5])}"
                              f"{' ...' if len(names) > 5 else ''}: host functions outside the "
                              "emulator runtime and the math library, which no Metal shader can "
                              "call (trusted=True compiles it anyway)")


# ELF: sections whose contents run when the module loads or unloads.
_LOAD_TIME_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors")
_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY = 14, 15, 16
_SHF_EXECINSTR = 0x4
_STT_OBJECT, _STT_GNU_IFUNC = 1, 10


def _elf_sections(data: bytes):
    """(sections, byte order, 64-bit) of an ELF object, each section as (name, type, flags,
    size, offset, link, entsize); None for another format."""
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    wide, end = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
        fmt = end + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)
        fmt = end + "IIIIIIIIII"
    if shoff and (shnum == 0 or shstrndx == 0xFFFF):  # counts too large for the header
        first = struct.unpack_from(fmt, data, shoff)
        shnum = shnum or first[5]
        shstrndx = first[6] if shstrndx == 0xFFFF else shstrndx
    raw = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
    strtab = raw[shstrndx][4] if shstrndx < shnum else 0

    def name(off):
        return data[strtab + off:data.index(b"\0", strtab + off)].decode(errors="replace")
    # name, type, flags, addr, offset, size, link, info, addralign, entsize
    return [(name(r[0]), r[1], r[2], r[5], r[4], r[6], r[9]) for r in raw], end, wide


def _policy_check_object(obj: Path, display: str) -> None:
    """Refusals read from the compiled object, whatever the source spelled: sections run at
    load time (constructors however declared), ifunc resolvers, and data in an executable
    section (machine code called through a pointer). ELF only: on macOS (Mach-O) the source
    checks stand alone; Mach-O has no ifunc."""
    data = obj.read_bytes()
    parsed = _elf_sections(data)
    if parsed is None:
        return
    secs, end, wide = parsed

    def refuse(what: str):
        raise EmuRefusedError(f"{display}: refused: {what}; no Metal shader has it "
                              "(trusted=True compiles it anyway)")
    for name, typ, flags, size, off, link, entsize in secs:
        if size and (typ in (_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY) or
                     name.startswith(_LOAD_TIME_SECTIONS) or name in (".init", ".fini")):
            refuse(f"code run at load time (the object has a {name} section)")
    for name, typ, flags, size, off, link, entsize in secs:
        if typ != 2 or not entsize:  # SHT_SYMTAB
            continue
        strtab_off = secs[link][4]
        fmt = (end + "IBBHQQ") if wide else (end + "IIIBBH")
        for i in range(size // entsize):
            f = struct.unpack_from(fmt, data, off + i * entsize)
            st_name, st_info, st_shndx = (f[0], f[1], f[3]) if wide else (f[0], f[3], f[5])
            kind = st_info & 0xF
            if kind not in (_STT_OBJECT, _STT_GNU_IFUNC):
                continue
            sym = data[strtab_off + st_name:data.index(b"\0", strtab_off + st_name)].decode(
                errors="replace")
            if kind == _STT_GNU_IFUNC:
                refuse(f"an ifunc ({_demangle(sym)}), whose resolver runs when the module loads")
            if 0 < st_shndx < len(secs) and secs[st_shndx][2] & _SHF_EXECINSTR:
                refuse(f"data ({_demangle(sym)}) in the executable section "
                       f"{secs[st_shndx][0]} (machine code called through a pointer)")


def _demangle(name: str) -> str:
    cf = shutil.which("c++filt")
    if not cf or not name.startswith("_Z"):
        return name
    out = subprocess.run([cf, name], stdout=subprocess.PIPE, text=True).stdout.strip()
    return out or name


_GLUE_LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$", re.M)


def _explain_compile_error(output: str, display: str) -> str:
    """One line naming the construct the compiler stopped at, with its file and line."""
    m = None
    for cand in _GLUE_LINE.finditer(output):
        if "/fgemu/" in cand.group("file") or cand.group("file").endswith("glue.cpp"):
            if m is None:
                m = cand
            continue
        m = cand
        break
    if m is None:
        first = next((l for l in output.splitlines() if "error" in l), output.strip()[:300])
        return f"{display}: unsupported: {first.strip()}"
    msg = m.group("msg").strip()
    rules = [
        (r"'([^']+)' was not declared in this scope", "{0}"),
        (r"'([^']+)' is not a member of '([^']+)'", "{1}::{0}"),
        (r"'([^']+)' in namespace '([^']+)' does not name a (?:template )?type", "{1}::{0}"),
        (r"'([^']+)' does not name a (?:template )?type", "{0}"),
        (r"no matching function for call to '([A-Za-z_][\w:]*)", "{0}(...)"),
        (r"has no member named '([^']+)'", ".{0}"),
        (r"no match for '(operator[^']*)'", "{0}"),
        (r"'([^']+)' has not been declared", "{0}"),
        (r"variable or field '([^']+)' declared void", "{0}"),
        (r"no matching function for call to '([^']+)'", "{0}"),
        # bfloat converts implicitly to float only (docs/metal-emu.md says why).
        (r"cannot convert '(bfloat)' to '([^']+)'", "implicit conversion from {0} to {1} (write {1}(x))"),
    ]
    construct = None
    for rx, fmt in rules:
        r = re.search(rx, msg)
        if r:
            construct = fmt.format(*r.groups())
            break
    where = f"{m.group('file')}:{m.group('line')}"
    if construct:
        return f"{where}: unsupported: {construct} (compiler: {msg[:300]})"
    return f"{where}: unsupported: {msg[:300]}"


def _options_key(display, cxx, flags, include_dirs, trusted, defines):
    return repr((display, cxx, flags, [str(d) for d in include_dirs], trusted, list(defines)))


def compile(source_or_path: Union[str, os.PathLike], *,  # noqa: A001 (public name)
            include_dirs: Sequence[Union[str, os.PathLike]] = (), trusted: bool = False,
            defines: Sequence[str] = ()) -> EmuModule:
    """Translate and compile an MSL source (text or path, as for run()), cached under a key
    of the translated source, the files it includes, the options and the compiler.

    include_dirs: extra folders for #include (like -I for `xcrun metal`); the source's own
        folder is always searched.
    trusted: compile host headers and host calls too (never for source you did not write).
    defines: NAME or NAME=VALUE preprocessor definitions (like -D).
    """
    text, display, base = _read_source(source_or_path)
    defines = _defines_arg(defines)
    inc = [Path(d).resolve() for d in include_dirs]
    for d in inc:
        if not d.is_dir():
            raise FileNotFoundError(f"include_dirs: no such folder: {d}")
    cxx, flags = _compiler(), _extra_flags()
    d = emu_dir()
    memo_key = (hashlib.sha256(text.encode()).hexdigest(),
                _options_key(display, cxx, flags, inc, trusted, defines), str(base))
    with _lock:
        hit = _memo.get(memo_key)
        if hit and all(_mtime(p) == t for p, t in hit[1]) and hit[0] in _modules:
            return _modules[hit[0]]
    scan = _scanner()
    scan.PREPROCESS_TIME_LIMIT_S = COMPILE_TIME_LIMIT_S
    try:
        # Unwrapped: the source's names are at global scope, as in Metal (one source per module).
        glue = scan.glue(text, display, "user", base, inc, cxx, trusted, defines, wrap=False)
    except scan.Refused as e:
        raise EmuRefusedError(str(e)) from None
    except scan.ScanError as e:
        msg = str(e)
        raise EmuCompileError(msg if msg.startswith(display) else f"{display}: {msg}") from None
    lines = scan.LineMap(glue)
    if not trusted:
        _policy_check_source(glue, lines)
    # The key: the translated source (the source and every file it includes, expanded, with
    # line markers naming those files), the options, the compiler and the emulator's own
    # files. Nothing that changes from one process to the next, so every process reuses a
    # module compiled once.
    h = hashlib.sha256()
    h.update(glue.encode())
    h.update(repr((cxx, _compiler_identity(cxx), flags, trusted)).encode())
    _hash_files(h, [d / "msl_scan.py"] + sorted(p for p in (d / "include").rglob("*") if p.is_file()) +
                sorted((d / "runtime").glob("*")))
    key = h.hexdigest()[:24]
    included = sorted({f for (_, f, _) in lines.starts if os.path.isfile(f)})
    with _lock:
        if key in _modules:
            _memo[memo_key] = (key, [(p, _mtime(p)) for p in included])
            return _modules[key]
    out = _cache_dir() / key
    so = out / "kernels.so"
    if not _intact(so):
        objs = _runtime_objects(cxx, flags)
        with _cache_lock(_cache_dir() / f"{key}.lock"):
            if not _intact(so):
                _build_module(glue, out, so, objs, cxx, flags, trusted, display)
    mod = EmuModule(so, display)
    with _lock:
        _modules[key] = mod
        _memo[memo_key] = (key, [(p, _mtime(p)) for p in included])
    return mod


def _mtime(p: str) -> float:
    try:
        return os.stat(p).st_mtime
    except OSError:
        return -1.0


# Uninitialised private variables hold a 0xFE byte pattern (poison); large stack frames are
# probed page by page, so a private array too big for the fiber stack always meets the guard
# page below it instead of silently landing in a neighbouring fiber's stack.
# MSL's char is signed on every GPU; -fsigned-char keeps it so on hosts where C's is not.
_SHADER_FLAGS = ["-ftrivial-auto-var-init=pattern", "-fsigned-char"] + \
    ([] if sys.platform == "darwin" else ["-fstack-clash-protection"])


def _build_module(glue: str, out: Path, so: Path, objs: List[Path], cxx: List[str],
                  flags: List[str], trusted: bool, display: str) -> None:
    d = emu_dir()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=out))
    try:
        cpp = work / "glue.cpp"
        cpp.write_text(glue)
        obj = work / "glue.o"
        proc = _run_compiler(cxx + ["-std=c++20", "-fPIC", "-fvisibility=hidden", "-O1", "-g",
                                    "-w"] + _SHADER_FLAGS + flags +
                             ["-I", str(d / "include"), "-c", str(cpp), "-o", str(obj)])
        if proc.returncode != 0:
            raise EmuCompileError(_explain_compile_error(proc.stdout, display))
        if not trusted:
            _policy_check_symbols(obj, cxx, display)
            _policy_check_object(obj, display)
        tmp_so = work / "kernels.so"
        proc = _run_compiler(cxx + ["-shared", "-fPIC"] + flags + [str(obj)] +
                             [str(o) for o in objs] + ["-o", str(tmp_so), "-lpthread"])
        if proc.returncode != 0:
            raise EmuCompileError(f"{display}: linking for metal-emu failed: "
                                  f"{proc.stdout.strip()[:2000]}")
        shutil.copy2(cpp, out / "glue.cpp")
        _publish(tmp_so, so)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(source_or_path, kernel: str, *, threadgroups, threads_per_threadgroup, buffers,
        constants=None, threadgroup_memory=None, strict=False, order="natural", seed=1,
        os_threads=0, stack_kb=None, time_limit=DEFAULT_TIME_LIMIT_S, include_dirs=(),
        trusted=False, defines=(), textures=None) -> None:
    """Run `kernel` of an MSL source like dispatchThreadgroups:threadsPerThreadgroup:.

    source_or_path: MSL text, or a path (its folder is on the include path). A one-line string
        is a path unless it contains one of { } ; # (see _read_source); a path that names
        no file raises FileNotFoundError.
    kernel: a kernel function name or the [[host_name]] of a template instantiation.
    threadgroups, threads_per_threadgroup: int or 1-, 2- or 3-tuples (missing sizes are 1).
    buffers: list (position = [[buffer(n)]] index; None leaves an index unbound) or dict
        {index: object}. numpy arrays and other bytes-like objects are bound as their raw
        bytes; what the kernel writes lands in writable objects (a write into a read-only
        object, bytes included, is dropped with a RuntimeWarning).
    constants: {index or name: value} for [[function_constant(n)]] declarations.
    threadgroup_memory: list or {index: bytes} for [[threadgroup(n)]] arguments
        (setThreadgroupMemoryLength:atIndex:; multiples of 16).
    strict: report barrier divergence (a thread returns while others wait at a barrier), which
        Apple GPUs tolerate, as an error.
    order: "natural", "reversed" or "shuffled": the order in which a group's threads first run;
        a kernel whose result changes with the order is missing a barrier.
    os_threads: OS threads running threadgroups (0: FGEMU_THREADS or one per core).
    stack_kb: private memory per emulated thread (default 256 KiB, FGEMU_STACK_KB).
    time_limit: seconds before the dispatch is stopped with KernelError (None or math.inf:
        no limit).
    textures: list or {index: texture} for [[texture(n)]] arguments: Texture objects, or
        arrays taken as 2D textures of shape (H, W[, C]).
    include_dirs, trusted, defines: as for compile().
    Raises EmuCompileError / EmuRefusedError (translation, compile, policy), NotFoundError
    (no such kernel), KernelError (an emulator finding, a fault, a time limit) or ValueError
    (a bad argument). Never a source of performance numbers.
    """
    mod = compile(source_or_path, include_dirs=include_dirs, trusted=trusted, defines=defines)
    mod.run(kernel, threadgroups=threadgroups, threads_per_threadgroup=threads_per_threadgroup,
            buffers=buffers, constants=constants, threadgroup_memory=threadgroup_memory,
            strict=strict, order=order, seed=seed, os_threads=os_threads, stack_kb=stack_kb,
            time_limit=time_limit, textures=textures)


# ---- the worker process ------------------------------------------------------------------------

_REPORT_BYTES = 4096


def _shm_dir() -> Optional[str]:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class _Worker:
    """The process that runs dispatches (src/emu/worker.py), reused across calls."""

    def __init__(self):
        self.pid = os.getpid()
        self.dir = Path(tempfile.mkdtemp(prefix="fgemu-worker-", dir=_shm_dir()))
        self.report = self.dir / "report"
        self.report.write_bytes(b"\0" * _REPORT_BYTES)
        # (mmap, path, size, generation) in one attribute, replaced in one step.
        self._arena = (None, None, 0, 0)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(emu_dir() / "worker.py"), str(self.report), str(self.pid)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
            close_fds=True)

    arena = property(lambda self: self._arena[0])
    arena_path = property(lambda self: self._arena[1])
    arena_size = property(lambda self: self._arena[2])

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def ensure_arena(self, size: int):
        """Grows the shared arena. The new one is mapped before the old one goes, and the
        fields change together, so an exception (Ctrl-C) at any point leaves a usable arena
        (old or new) described by them."""
        if size <= self.arena_size:
            return
        size = max(size, 2 * self.arena_size, 1 << 16)
        size = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
        gen = self._arena[3] + 1
        path = str(self.dir / f"arena{gen}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.ftruncate(fd, size)
            arena = mmap.mmap(fd, size)
        except BaseException:
            os.unlink(path)
            raise
        finally:
            os.close(fd)
        old, old_path = self.arena, self.arena_path
        self._arena = (arena, path, size, gen)
        if old is not None:
            old.close()
            os.unlink(old_path)

    def send(self, req):
        data = pickle.dumps(req)
        self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
        self.proc.stdin.flush()

    def receive(self, deadline: Optional[float]):
        fd = self.proc.stdout.fileno()
        buf = b""
        need = 8
        header = None
        while True:
            while len(buf) < need:
                # Short waits: Ctrl-C is seen within a fraction of a second.
                r, _, _ = select.select([fd], [], [], 0.1)
                if not r:
                    if deadline is not None and time.monotonic() > deadline:
                        return "timeout"
                    continue
                chunk = os.read(fd, max(need - len(buf), 1 << 16))
                if not chunk:
                    return None
                buf += chunk
            if header is None:
                header = struct.unpack("<Q", buf[:8])[0]
                buf = buf[8:]
                need = header
                continue
            return pickle.loads(buf[:header])

    def read_report(self) -> str:
        raw = self.report.read_bytes().split(b"\0", 1)[0]
        return raw.decode(errors="replace").strip()

    def stop(self, kill=False):
        try:
            if kill:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except Exception:
                pass
        if self.arena is not None:
            try:
                self.arena.close()
            except Exception:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


_worker: Optional[_Worker] = None
_worker_lock = threading.Lock()


_exiting = False


def _stop_worker():
    """At exit. A dispatch still running on another (daemon) thread would keep the worker
    from reading its closed pipe, so the worker is killed at once; the interrupted call
    then waits for the interpreter to end instead of printing a traceback."""
    global _worker, _exiting
    _exiting = True
    w, _worker = _worker, None
    if w is not None and w.pid == os.getpid():
        w.stop(kill=_worker_lock.locked())


atexit.register(_stop_worker)


def _bytes_view(obj, what: str) -> Optional[memoryview]:
    try:
        mv = memoryview(obj)
    except TypeError:
        raise ArgumentTypeError(f"{what}: {type(obj).__name__} is not bytes-like (use a numpy "
                        "array, bytes, bytearray or e.g. np.uint32(n))") from None
    if not mv.c_contiguous:
        raise ArgumentError(f"{what}: the object must be C-contiguous")
    if "O" in re.sub(r":[^:]*:", "", mv.format):
        # Python object references: the kernel's writes would land in the host's pointers.
        raise ArgumentTypeError(f"{what}: {type(obj).__name__} holds Python objects (buffer format "
                                f"{mv.format!r}), not plain data: pass numeric arrays or bytes")
    raw = mv.cast("B") if (mv.ndim != 1 or mv.format != "B") and mv.nbytes else mv
    return raw if raw.nbytes else None


def _member_view(v, what: str):
    if isinstance(v, Texture):
        return v.binding()
    return (None if v is None else _bytes_view(v, what)), None


def _buffer_views(buffers) -> Tuple[List[Optional[memoryview]], list]:
    """The buffers' byte views by index, and the argument buffers as
    [(index, [(id, view or None, texture description or None)])] (their index holds None
    among the views)."""
    out, argbufs = [], []
    for i, obj in enumerate(_index_list(buffers, "buffers")):
        if isinstance(obj, ArgumentBuffer):
            argbufs.append((i, [(k,) + _member_view(v, f"buffer {i} id {k}")
                                for k, v in sorted(obj.members.items())]))
            out.append(None)
        else:
            view = None if obj is None else _bytes_view(obj, f"buffer {i}")
            if obj is not None and view is None:
                raise ArgumentError(f"buffer {i} is empty (0 bytes): Metal has no zero-length "
                                    "buffers; bind at least one element, or None to leave the index unbound")
            out.append(view)
    return out, argbufs


# Canary bytes on each side of an argument buffer's member in the shared arena.
_MEMBER_GUARD = 256
_CANARY = b"\xa5" * _MEMBER_GUARD


def _worker_call(req, time_limit, what, views: Sequence[Optional[memoryview]] = (), textures=(),
                 argbufs=()):
    """Sends one request to the worker (started if needed) and returns its answer. Buffers,
    textures and the members of argument buffers travel in one shared arena."""
    global _worker
    with _worker_lock:
        if _worker is None or not _worker.alive():
            if _worker is not None and _worker.pid == os.getpid():
                _worker.stop(kill=True)
            _worker = _Worker()
        w = _worker
        layout, off = [], 0
        members = [v for (_, ms) in argbufs for (_, v, _) in ms]
        member_names = [f"buffer {i} (argument buffer) id {k}" for (i, ms) in argbufs for (k, _, _) in ms]
        all_views = list(views) + [t[0] if t else None for t in textures] + members
        nb, nt = len(views), len(textures)
        first_member = nb + nt  # all_views: the buffers, the textures, then the members
        guards = []  # (offset, name): canary regions around argument-buffer members
        for n, v in enumerate(all_views):
            if v is None:
                layout.append(None)
                continue
            off = (off + 63) // 64 * 64  # Metal buffers are at least 16-byte aligned
            if n >= first_member:
                # The runtime guards plain buffers itself; a member is reached through a
                # pointer the shader holds, so its canaries live here in the arena.
                guards.append((off, member_names[n - first_member] + " (before its start)"))
                off += _MEMBER_GUARD
            layout.append((off, v.nbytes))
            off += v.nbytes
            if n >= first_member:
                guards.append((off, member_names[n - first_member] + " (past its end)"))
                off += _MEMBER_GUARD
        if req.get("op") == "run":
            if off:
                w.ensure_arena(off)
                for v, lay in zip(all_views, layout):
                    if lay:
                        w.arena[lay[0]:lay[0] + lay[1]] = v
                for at, _ in guards:
                    w.arena[at:at + _MEMBER_GUARD] = _CANARY
            tex_req = [(lay[0], t[1]) if t else None for t, lay in zip(textures, layout[nb:])]
            member_lay = iter(layout[nb + nt:])
            ab_req = [(i, [(k, next(member_lay), desc) for (k, _, desc) in ms])
                      for (i, ms) in argbufs]
            req = dict(req, buffers=layout[:nb], textures=tex_req, argbufs=ab_req,
                       arena=w.arena_path, arena_size=w.arena_size if off else 0)
        # The runtime's watchdog reports the running thread at the limit; this deadline is
        # the backstop for a worker that cannot even do that.
        deadline = None if not time_limit else time.monotonic() + time_limit + 10.0
        try:
            w.send(req)
            ans = w.receive(deadline)
        except KeyboardInterrupt:
            w.stop(kill=True)
            _worker = None
            raise
        except (BrokenPipeError, OSError):
            ans = None
        if ans is None and _exiting:
            threading.Event().wait()  # the interpreter is ending: a daemon thread just stops here
        if ans == "timeout":
            w.stop(kill=True)
            _worker = None
            raise KernelError(f"metal-emu: time limit of {time_limit} s exceeded by {what}; "
                              "the worker process was stopped")
        if ans is None:
            code = w.proc.wait()
            report = w.read_report()
            w.stop(kill=True)
            _worker = None
            if not report:
                how = f"signal {-code}" if code < 0 else f"exit status {code}"
                report = f"the worker process ended ({how}) while running {what}"
            raise KernelError(f"metal-emu: {report} (the dispatch ran in a worker process, "
                              "which ended; the next call starts a new one)")
        if ans["rc"] == 3:
            raise KernelError(f"metal-emu: the worker could not run {what}: {ans['text']}")
        if req.get("op") == "run" and ans["rc"] == 0:
            for at, name in guards:
                if w.arena[at:at + _MEMBER_GUARD] != _CANARY:
                    raise KernelError(f"metal-emu: out-of-bounds write: {what} wrote into the "
                                      f"{_MEMBER_GUARD} bytes around {name}")
        if req.get("op") == "run":
            dropped = []
            for n, (v, lay) in enumerate(zip(all_views, layout)):
                if not lay:
                    continue
                if not v.readonly:
                    v[:] = w.arena[lay[0]:lay[0] + lay[1]]
                elif w.arena[lay[0]:lay[0] + lay[1]] != v:
                    dropped.append(f"buffer({n})" if n < nb else f"texture({n - nb})" if n < first_member
                                   else "an argument buffer's member")
            if dropped:
                warnings.warn(f"metal-emu: {what} wrote into {', '.join(dropped)}, bound to read-only "
                              "objects (bytes, read-only arrays): those writes were dropped; bind a "
                              "writable array to keep them", RuntimeWarning, stacklevel=3)
        return ans


# ---- helpers -------------------------------------------------------------------------------

# Characters that every MSL source with a declaration has and file names in practice do not:
# a one-line string with none of them is a path, never source text.
_SOURCE_MARKS = frozenset("{};#")


def _read_source(src) -> Tuple[str, str, Path]:
    """(text, display name, folder for includes) of a source given as text or as a path.

    A path-like object is a path. A string is MSL source text when it has a newline; else it
    is a path when it names an existing file, and source text when it has one of { } ; #.
    Any other string (`"kernels.metl"`, `"shaders/gemm"`) can only be a path, so a missing
    file raises FileNotFoundError naming it instead of compiling the name as MSL."""
    if isinstance(src, str) and "\n" not in src:
        try:
            names_file = bool(src.strip()) and Path(src).is_file()
        except (OSError, ValueError):  # too long for a file name, or a NUL
            names_file = False
        if names_file or (src.strip() and not _SOURCE_MARKS & set(src)):
            return _read_path(src)
    if isinstance(src, os.PathLike):
        return _read_path(src)
    if not isinstance(src, str):
        raise ArgumentTypeError("source_or_path must be MSL text or a path")
    try:
        src.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ArgumentError(f"source_or_path is not valid text: character {e.start} is an unpaired "
                            "surrogate") from None
    return src, "<source>", Path.cwd()


_DEFINE = re.compile(r"[A-Za-z_]\w*(=[^\n\r\0]*)?\Z")


def _defines_arg(defines) -> List[str]:
    """defines: a sequence of NAME or NAME=VALUE strings (a lone string would be iterated
    character by character); a line break in one would end the definition early."""
    if isinstance(defines, str) or not isinstance(defines, Iterable):
        raise ArgumentTypeError(f"defines must be a list of NAME or NAME=VALUE strings, got "
                                f"{type(defines).__name__}{' (wrap one in a list)' if isinstance(defines, str) else ''}")
    out = []
    for d in defines:
        if not isinstance(d, str) or not _DEFINE.match(d):
            raise ArgumentError(f"defines: {d!r} is not NAME or NAME=VALUE (a C identifier, then an "
                                "optional value on one line)")
        out.append(d)
    return out


def _read_path(src) -> Tuple[str, str, Path]:
    try:
        p = Path(src).resolve()
        is_file = p.is_file()
    except OSError as e:  # a name too long for the file system, say
        raise ArgumentError(f"source_or_path {str(src)[:60]!r}{'...' if len(str(src)) > 60 else ''}: "
                            f"not a usable file name ({e.strerror}); MSL text needs a newline or "
                            "one of { } ; #") from None
    if not is_file:
        what = "a folder, not an MSL file" if p.is_dir() else "no such file"
        rule = (". A string without a newline is a path unless it contains one of { } ; # "
                "(then it is MSL text)") if isinstance(src, str) else ""
        raise FileNotFoundError(f"source_or_path {str(src)!r}: {what} ({p}){rule}")
    try:
        return p.read_text(encoding="utf-8"), str(p), p.parent
    except UnicodeDecodeError as e:
        raise ArgumentError(f"source {p} is not UTF-8 text (byte {e.start}): not an MSL source") from None


def _whole(x) -> bool:
    """An int or numpy integer, not a bool (numpy's bool_ is not an Integral)."""
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _size3(v, what) -> Tuple[int, int, int]:
    t = (v,) if _whole(v) else tuple(v) if isinstance(v, (tuple, list)) else None
    if t is not None and all(_whole(x) for x in t):
        t = tuple(int(x) for x in t)
    if t is None or not 1 <= len(t) <= 3 or \
            not all(isinstance(x, int) and not isinstance(x, bool) for x in t):
        raise ArgumentError(f"{what} must be an int or a tuple of 1-3 ints, got {v!r}")
    if any(x < 0 or x >= 2 ** 32 for x in t):
        raise ArgumentError(f"{what} out of range (each size in 0..2**32-1): {v!r}")
    return tuple(t) + (1,) * (3 - len(t))


# Threadgroup memory one argument may ask for: Apple GPUs give a threadgroup 32 KiB, and
# the runtime refuses more in all (src/emu/runtime/dispatch.cpp), so this is checked here
# first, naming the argument.
_MAX_TG_MEMORY = 32 << 10


def _index_list(v, what) -> list:
    if isinstance(v, Mapping):
        if not v:
            return []
        for k in v:
            if not _whole(k) or not 0 <= k < 1 << 16:
                raise ArgumentError(f"{what} index must be an int in 0..65535, got {k!r}")
        out = [None] * (int(max(v)) + 1)
        for k, x in v.items():
            out[int(k)] = x
        return out
    if isinstance(v, (bytes, bytearray, memoryview)) or hasattr(v, "__array_interface__"):
        # Iterating one array would bind its elements (rows, bytes) at indices 0, 1, ...
        raise ArgumentTypeError(f"{what} must be a list or a dict from index to value, got one "
                                f"{type(v).__name__}: pass [x] to bind it at index 0")
    if isinstance(v, str) or not isinstance(v, Iterable):
        raise ArgumentTypeError(f"{what} must be a list or a dict from index to value, got {type(v).__name__}")
    return list(v)


def _constant_bytes(value, size: int, kind: str, what: str) -> bytes:
    """The bytes of a function constant's value, by its declared kind ('b' bool, 'i'
    integer, 'f' floating point, '?' other: bytes-like values only, or numbers by size).
    A float for an integer constant is refused, not stored as its bit pattern."""
    import numpy as np
    if isinstance(value, np.generic) and kind != "?":
        value = value.item()
    try:
        if isinstance(value, (bytes, bytearray, memoryview)) or (kind == "?" and not isinstance(value, (int, float))):
            raw = memoryview(value).tobytes()
        elif isinstance(value, float) and kind in "bi":
            raise ArgumentTypeError(f"{what} is {'a bool' if kind == 'b' else 'an integer'} constant; "
                                    f"got the float {value!r}")
        elif isinstance(value, (bool, int)) and kind == "f" or isinstance(value, float):
            raw = struct.pack({4: "<f", 2: "<e", 8: "<d"}[size], float(value))
        elif isinstance(value, (bool, int)):
            raw = int(value).to_bytes(size, "little", signed=value < 0)
        else:
            raise ArgumentTypeError(f"{what}: a {type(value).__name__} is not a constant's value "
                                    "(pass a number, or bytes of the constant's size)")
    except (KeyError, OverflowError, struct.error) as e:
        raise ArgumentError(f"{what} ({size} bytes) cannot hold {value!r}: {e}") from None
    except ArgumentTypeError:
        raise
    except TypeError as e:  # memoryview() of a non-buffer
        raise ArgumentTypeError(f"{what}: {e}") from None
    if len(raw) != size:
        raise ArgumentError(f"{what}: the value has {len(raw)} bytes, the declaration {size}")
    return raw


# ---- CLI: fastgemm emu FILE.metal --kernel NAME ... ----------------------------------------

def _time_limit_arg(text: str) -> Optional[float]:
    """--time-limit: seconds > 0, or 0 / inf for none; a negative number or NaN is a typo,
    not a request for no limit."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0 (0 or inf: no limit), got {text!r}")
    return None if v == 0 or v >= _NO_TIME_LIMIT_S else v


def add_emu_parser(subparsers) -> argparse.ArgumentParser:
    """Registers `emu` on the fastgemm CLI's subparsers; the handler is args.func."""
    p = subparsers.add_parser(
        "emu", help="compile an MSL file for the CPU emulator and run one kernel",
        description="Run a Metal kernel on the CPU (metal-emu). Buffers are given as "
                    "INDEX:DTYPE:COUNT[:init] (init: zeros, ones, rand, arange) or "
                    "INDEX:u32=VALUE,... for small constant structs; written buffers are "
                    "printed (first values) or saved with --save. Not a performance tool.")
    p.add_argument("file", help="the .metal file")
    p.add_argument("--kernel", required=True, help="function name or [[host_name]]")
    p.add_argument("--threadgroups", default="1", help="X[,Y[,Z]] (default 1)")
    p.add_argument("--threads", default="32", help="threads per threadgroup X[,Y[,Z]]")
    p.add_argument("--buffer", action="append", default=[], metavar="SPEC")
    p.add_argument("--threadgroup-memory", action="append", default=[], metavar="INDEX:BYTES")
    p.add_argument("--strict", action="store_true", help="report barrier divergence")
    p.add_argument("--order", choices=sorted(_ORDERS), default="natural")
    p.add_argument("--list", action="store_true", help="list the kernels of the file and exit")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="extra #include folder (the file's own folder is always searched)")
    p.add_argument("--time-limit", type=_time_limit_arg, default=DEFAULT_TIME_LIMIT_S, metavar="SECONDS",
                   help=f"stop the dispatch after SECONDS (default {DEFAULT_TIME_LIMIT_S:g}; 0 or inf: no limit)")
    p.add_argument("--trusted", action="store_true",
                   help="lift the safe policy (host headers and calls) for code you trust")
    p.add_argument("--save", metavar="DIR", help="write every buffer to DIR/buffer<N>.npy")
    p.set_defaults(func=_cli_emu)
    return p


def _parse_buffer(spec: str):
    import numpy as np
    idx, rest = spec.split(":", 1)
    if "=" in rest and rest.split("=", 1)[0] in ("u32", "i32", "f32"):
        parts = rest.split(",")
        vals = []
        for part in parts:
            kind, v = part.split("=")
            dt = {"u32": np.uint32, "i32": np.int32, "f32": np.float32}[kind]
            vals.append(np.array([float(v) if kind == "f32" else int(v)], dtype=dt).tobytes())
        return int(idx), np.frombuffer(b"".join(vals), dtype=np.uint8).copy()
    f = rest.split(":")
    dtype, count = np.dtype(f[0]), int(f[1])
    init = f[2] if len(f) > 2 else "zeros"
    rng = np.random.default_rng(0)
    if init == "zeros":
        a = np.zeros(count, dtype)
    elif init == "ones":
        a = np.ones(count, dtype)
    elif init == "arange":
        a = np.arange(count).astype(dtype)
    elif init == "rand":
        a = rng.uniform(-1, 1, count).astype(dtype)
    else:
        raise ArgumentError(f"unknown init {init!r}")
    return int(idx), a


def _cli_emu(args) -> int:
    import numpy as np
    try:
        mod = compile(Path(args.file), include_dirs=args.include_dirs, trusted=args.trusted)
    except (EmuCompileError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # not MSL text
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(mod.kernels))
        return 0
    bufs = dict(_parse_buffer(s) for s in args.buffer)
    tgm = {int(s.split(":")[0]): int(s.split(":")[1]) for s in args.threadgroup_memory}
    size = lambda s: tuple(int(x) for x in s.split(","))  # noqa: E731
    if args.kernel in mod.kernels:
        # Every argument the kernel declares must be bound before it runs (as Metal's
        # validation asks): found here, a missing one is a command-line error, not a
        # failure of the shader halfway through its dispatch.
        bindings = mod.bindings(args.kernel)
        missing = [i for kind, i in bindings if kind == "buffer" and i not in bufs]
        if missing:
            print(f"error: kernel {args.kernel!r} takes buffer({missing[0]}), which no --buffer gives "
                  f"(it takes buffers {sorted({i for kind, i in bindings if kind == 'buffer'})})",
                  file=sys.stderr)
            return 2
        textures = [i for kind, i in bindings if kind == "texture"]
        if textures:
            print(f"error: kernel {args.kernel!r} takes texture({textures[0]}); the command line "
                  "binds buffers only (fastgemm.emu's EmuModule.run takes textures)", file=sys.stderr)
            return 2
    try:
        mod.run(args.kernel, threadgroups=size(args.threadgroups),
                threads_per_threadgroup=size(args.threads), buffers=bufs,
                threadgroup_memory=tgm, strict=args.strict, order=args.order,
                time_limit=args.time_limit)
    except (NotFoundError, ValueError) as e:  # the command line named something wrong
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KernelError as e:  # the shader itself failed (a fault, a barrier, a time limit)
        print(f"error: {e}", file=sys.stderr)
        return 1
    for i, a in sorted(bufs.items()):
        print(f"buffer({i}) {a.dtype}[{a.size}]: {np.array2string(a[:16], precision=5)}"
              + (" ..." if a.size > 16 else ""))
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.save) / f"buffer{i}.npy", a)
    print("(metal-emu results are for correctness only; emulator times are not GPU times)")
    return 0


def main_emu(argv: Optional[Sequence[str]] = None) -> int:
    """Stand-alone entry: the same as `fastgemm emu ...`."""
    ap = argparse.ArgumentParser(prog="fastgemm")
    sub = ap.add_subparsers(dest="command", required=True)
    add_emu_parser(sub)
    args = ap.parse_args(["emu"] + list(argv if argv is not None else sys.argv[1:]))
    return args.func(args)

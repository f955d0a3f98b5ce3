"""Run any Metal Shading Language kernel on the CPU (the metal-emu emulator).

    import numpy as np, fastgemm.emu
    x = np.arange(64, dtype=np.float32); y = np.zeros_like(x)
    fastgemm.emu.run('''
        #include <metal_stdlib>
        using namespace metal;
        kernel void twice(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) { y[i] = 2 * x[i]; }
    ''', "twice", threadgroups=2, threads_per_threadgroup=32, buffers=[x, y])

The source is compiled as C++ with the system compiler against metal-emu's shim headers at
first use and cached by content hash (FASTGEMM_EMU_CACHE, else the user cache directory).
The emulator checks correctness (barrier divergence in strict mode, out-of-range dispatches,
writes past a buffer, threadgroup memory limits); it never measures performance.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import FastgemmError, KernelError, NotFoundError

__all__ = ["run", "compile", "EmuCompileError", "EmuModule", "emu_dir", "main_emu",
           "add_emu_parser"]

_ORDERS = {"natural": 0, "reversed": 1, "shuffled": 2}


class EmuCompileError(FastgemmError, RuntimeError):
    """The MSL source did not translate or compile; the message carries the compiler's."""


def emu_dir() -> Path:
    """Folder with include/ (shim headers), runtime/ and msl_scan.py.

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
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fastgemm" / "emu"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _compiler() -> List[str]:
    return shlex.split(os.environ.get("CXX", "c++"))


def _extra_flags() -> List[str]:
    return shlex.split(os.environ.get("FASTGEMM_EMU_CXXFLAGS", ""))


def _hash_files(h, paths: Iterable[Path]):
    for p in sorted(paths):
        h.update(str(p.name).encode())
        h.update(p.read_bytes())


def _run_compiler(cmd: List[str], what: str):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise EmuCompileError(f"{what} failed:\n{proc.stdout.strip()}\ncommand: {shlex.join(cmd)}")


_lock = threading.Lock()
_modules: Dict[str, "EmuModule"] = {}


def _runtime_objects(cxx: List[str], flags: List[str]) -> List[Path]:
    """The emulator runtime, compiled once per compiler/flags/runtime version."""
    d = emu_dir()
    sources = sorted((d / "runtime").glob("*.cpp"))
    h = hashlib.sha256()
    h.update(repr((cxx, flags)).encode())
    _hash_files(h, sources + sorted((d / "runtime").glob("*.hpp")) + sorted((d / "include" / "fgemu").glob("*.hpp")))
    out = _cache_dir() / ("runtime-" + h.hexdigest()[:20])
    objs = [out / (s.stem + ".o") for s in sources]
    if all(o.is_file() for o in objs):
        return objs
    out.mkdir(parents=True, exist_ok=True)
    for s, o in zip(sources, objs):
        tmp = o.with_suffix(f".{os.getpid()}.tmp.o")
        _run_compiler(cxx + ["-std=c++17", "-fPIC", "-fvisibility=hidden", "-O2", "-g"] + flags +
                      ["-I", str(d / "include"), "-c", str(s), "-o", str(tmp)],
                      f"compiling the metal-emu runtime ({s.name})")
        os.replace(tmp, o)
    return objs


class EmuModule:
    """One compiled MSL source: its kernels, runnable with run()."""

    def __init__(self, so_path: Path, display: str):
        self.path = so_path
        self.display = display
        self._lib = ctypes.CDLL(str(so_path))
        self._lib.fgemu_c_list.restype = ctypes.c_size_t
        self._lib.fgemu_c_list.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self._lib.fgemu_c_run.restype = ctypes.c_int
        self._lib.fgemu_c_constants.restype = ctypes.c_size_t
        self._lib.fgemu_c_constants.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self._run_lock = threading.Lock()  # function constants are module globals

    def _text(self, fn) -> str:
        n = fn(None, 0)
        buf = ctypes.create_string_buffer(n)
        fn(buf, n)
        return buf.value.decode()

    @property
    def kernels(self) -> List[str]:
        return [s for s in self._text(self._lib.fgemu_c_list).split("\n") if s]

    def _constants(self) -> Dict[str, Tuple[int, int]]:
        out = {}
        for line in self._text(self._lib.fgemu_c_constants).split("\n"):
            if line:
                idx, name, size = line.split(" ")
                out[name] = (int(idx), int(size))
        return out

    def run(self, kernel: str, *, threadgroups, threads_per_threadgroup, buffers,
            constants=None, threadgroup_memory=None, strict=False, order="natural", seed=1,
            os_threads=0):
        groups = _size3(threadgroups, "threadgroups")
        tpg = _size3(threads_per_threadgroup, "threads_per_threadgroup")
        bound = _bind_buffers(buffers)
        nbuf = len(bound)
        ptrs = (ctypes.c_void_p * max(nbuf, 1))(*[b[0] for b in bound])
        sizes = (ctypes.c_size_t * max(nbuf, 1))(*[b[1] for b in bound])
        tg = _index_list(threadgroup_memory or [], "threadgroup_memory")
        tg_lens = (ctypes.c_size_t * max(len(tg), 1))(*[int(x or 0) for x in tg])
        fc_idx, fc_vals, fc_sizes, keep = [], [], [], []
        if constants:
            table = self._constants()
            by_index = {i: (n, s) for n, (i, s) in table.items()}
            for key, value in constants.items():
                if isinstance(key, str):
                    if key not in table:
                        raise NotFoundError(f"no function constant named {key!r} in {self.display}")
                    idx, size = table[key]
                else:
                    if int(key) not in by_index:
                        raise NotFoundError(f"no [[function_constant({key})]] in {self.display}")
                    idx, size = int(key), by_index[int(key)][1]
                raw = _constant_bytes(value, size)
                cbuf = ctypes.create_string_buffer(raw, len(raw))
                keep.append(cbuf)
                fc_idx.append(idx)
                fc_vals.append(ctypes.cast(cbuf, ctypes.c_void_p))
                fc_sizes.append(len(raw))
        n_fc = len(fc_idx)
        err = ctypes.create_string_buffer(8192)
        if order not in _ORDERS:
            raise ValueError(f"order must be one of {sorted(_ORDERS)}, got {order!r}")
        with self._run_lock:
            rc = self._lib.fgemu_c_run(
                kernel.encode(), (ctypes.c_uint * 3)(*groups), (ctypes.c_uint * 3)(*tpg),
                ctypes.c_int(nbuf), ptrs, sizes, ctypes.c_int(len(tg)), tg_lens,
                ctypes.c_int(n_fc), (ctypes.c_int * max(n_fc, 1))(*fc_idx),
                (ctypes.c_void_p * max(n_fc, 1))(*fc_vals),
                (ctypes.c_size_t * max(n_fc, 1))(*fc_sizes), ctypes.c_int(1 if strict else 0),
                ctypes.c_int(_ORDERS[order]), ctypes.c_ulonglong(seed), ctypes.c_int(os_threads),
                err, ctypes.c_size_t(len(err)))
        for b in bound:
            if b[2] is not None:
                b[2]()  # copy results back into objects that were staged
        if rc == 2:
            raise NotFoundError(err.value.decode())
        if rc != 0:
            raise KernelError("metal-emu: " + err.value.decode())


def compile(source_or_path: Union[str, os.PathLike]) -> EmuModule:  # noqa: A001 (public name)
    """Translate and compile an MSL source (text or path), cached by content hash."""
    text, display, base = _read_source(source_or_path)
    cxx, flags = _compiler(), _extra_flags()
    d = emu_dir()
    h = hashlib.sha256()
    h.update(text.encode())
    h.update(display.encode())
    h.update(repr((cxx, flags)).encode())
    includes = [base / m for m in re.findall(r'#\s*include\s*"([^"]+)"', text)
                if (base / m).is_file()]
    _hash_files(h, includes + [d / "msl_scan.py"] + sorted(p for p in (d / "include").rglob("*") if p.is_file()))
    key = h.hexdigest()[:24]
    with _lock:
        if key in _modules:
            return _modules[key]
        out = _cache_dir() / key
        so = out / "kernels.so"
        if not so.is_file():
            objs = _runtime_objects(cxx, flags)
            out.mkdir(parents=True, exist_ok=True)
            scan = _scanner()
            try:
                glue = scan.glue(text, display, "user_" + key)
            except scan.ScanError as e:
                raise EmuCompileError(f"{display}: {e}") from None
            cpp = out / "glue.cpp"
            cpp.write_text(glue)
            tmp = out / f"kernels.{os.getpid()}.tmp.so"
            _run_compiler(cxx + ["-std=c++20", "-fPIC", "-shared", "-fvisibility=hidden", "-O1",
                                 "-g", "-w"] + flags +
                          ["-I", str(d / "include"), "-I", str(base), str(cpp)] +
                          [str(o) for o in objs] + ["-o", str(tmp), "-lpthread"],
                          f"compiling {display} for metal-emu")
            os.replace(tmp, so)
        mod = EmuModule(so, display)
        _modules[key] = mod
        return mod


def run(source_or_path, kernel: str, *, threadgroups, threads_per_threadgroup, buffers,
        constants=None, threadgroup_memory=None, strict=False, order="natural", seed=1,
        os_threads=0) -> None:
    """Run `kernel` of an MSL source like dispatchThreadgroups:threadsPerThreadgroup:.

    source_or_path: MSL text, or a path to a .metal file (its folder is on the include path).
    kernel: a kernel function name or the [[host_name]] of a template instantiation.
    threadgroups, threads_per_threadgroup: int or 1-, 2- or 3-tuples (missing sizes are 1).
    buffers: list (position = [[buffer(n)]] index; None leaves an index unbound) or dict
        {index: object}. numpy arrays and other bytes-like objects are bound as their raw
        bytes; what the kernel writes lands in writable objects (bytes objects are copied).
    constants: {index or name: value} for [[function_constant(n)]] declarations.
    threadgroup_memory: list or {index: bytes} for [[threadgroup(n)]] arguments
        (setThreadgroupMemoryLength:atIndex:; multiples of 16).
    strict: report barrier divergence (a thread returns while others wait at a barrier), which
        Apple GPUs tolerate, as an error.
    order: "natural", "reversed" or "shuffled": the order in which a group's threads first run;
        a kernel whose result changes with the order is missing a barrier.
    Raises EmuCompileError (translation/compile), NotFoundError (no such kernel) or
    KernelError (an emulator finding). Never a source of performance numbers.
    """
    mod = compile(source_or_path)
    mod.run(kernel, threadgroups=threadgroups, threads_per_threadgroup=threads_per_threadgroup,
            buffers=buffers, constants=constants, threadgroup_memory=threadgroup_memory,
            strict=strict, order=order, seed=seed, os_threads=os_threads)


# ---- helpers -------------------------------------------------------------------------------

def _read_source(src) -> Tuple[str, str, Path]:
    if isinstance(src, os.PathLike) or (isinstance(src, str) and "\n" not in src
                                        and src.strip().endswith((".metal", ".h", ".msl"))):
        p = Path(src).resolve()
        if not p.is_file():
            raise FileNotFoundError(f"no such MSL file: {p}")
        return p.read_text(), str(p), p.parent
    if not isinstance(src, str):
        raise TypeError("source_or_path must be MSL text or a path")
    return src, "<source>", Path.cwd()


def _size3(v, what) -> Tuple[int, int, int]:
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3 or not all(isinstance(x, int) and not isinstance(x, bool) for x in t):
        raise ValueError(f"{what} must be an int or a tuple of 1-3 ints, got {v!r}")
    if any(x < 0 or x >= 2 ** 32 for x in t):
        raise ValueError(f"{what} out of range: {v!r}")
    return tuple(t) + (1,) * (3 - len(t))


def _index_list(v, what) -> list:
    if isinstance(v, Mapping):
        if not v:
            return []
        out = [None] * (max(int(k) for k in v) + 1)
        for k, x in v.items():
            if int(k) < 0:
                raise ValueError(f"{what} index must be >= 0")
            out[int(k)] = x
        return out
    return list(v)


def _bind_buffers(buffers):
    """[(address, size, copy_back or None)] per buffer index; keeps staging copies alive."""
    out = []
    for i, obj in enumerate(_index_list(buffers, "buffers")):
        if obj is None:
            out.append((None, 0, None))
            continue
        try:
            mv = memoryview(obj)
        except TypeError:
            raise TypeError(f"buffer {i}: {type(obj).__name__} is not bytes-like (use a numpy "
                            "array, bytes, bytearray or e.g. np.uint32(n))") from None
        if not mv.c_contiguous:
            raise ValueError(f"buffer {i}: the object must be C-contiguous")
        raw = mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv
        n = raw.nbytes
        if n == 0:
            out.append((None, 0, None))
            continue
        if not raw.readonly:
            cbuf = (ctypes.c_char * n).from_buffer(raw)  # the kernel writes in place
            out.append((ctypes.addressof(cbuf), n, (lambda c=cbuf: None)))
        else:  # read-only (bytes, frozen arrays): the kernel sees a copy
            cbuf = ctypes.create_string_buffer(raw.tobytes(), n)
            out.append((ctypes.addressof(cbuf), n, (lambda c=cbuf: None)))
    return out


def _constant_bytes(value, size: int) -> bytes:
    import struct
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
    elif isinstance(value, bool):
        raw = (1 if value else 0).to_bytes(size, "little")
    elif isinstance(value, int):
        raw = value.to_bytes(size, "little", signed=value < 0)
    elif isinstance(value, float):
        raw = struct.pack({4: "<f", 2: "<e", 8: "<d"}[size], value)
    else:
        raw = memoryview(value).tobytes()
    if len(raw) != size:
        raise ValueError(f"function constant value has {len(raw)} bytes, the declaration {size}")
    return raw


# ---- CLI: fastgemm emu FILE.metal --kernel NAME ... ----------------------------------------

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
        raise ValueError(f"unknown init {init!r}")
    return int(idx), a


def _cli_emu(args) -> int:
    import numpy as np
    mod = compile(Path(args.file))
    if args.list:
        print("\n".join(mod.kernels))
        return 0
    bufs = dict(_parse_buffer(s) for s in args.buffer)
    tgm = {int(s.split(":")[0]): int(s.split(":")[1]) for s in args.threadgroup_memory}
    size = lambda s: tuple(int(x) for x in s.split(","))  # noqa: E731
    try:
        mod.run(args.kernel, threadgroups=size(args.threadgroups),
                threads_per_threadgroup=size(args.threads), buffers=bufs,
                threadgroup_memory=tgm, strict=args.strict, order=args.order)
    except (KernelError, NotFoundError) as e:
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

"""`fastgemm emu FILE.metal --kernel NAME ...`: one Metal kernel run on the CPU emulator.

The subcommand and its handler belong to fastgemm.emu (add_emu_parser); this module
registers them and checks the arguments first, so a malformed --buffer, --threads,
--threadgroups, --threadgroup-memory or --save is one line and exit code 2 before the
shader is compiled, as for every other command.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .. import emu
from .common import UsageError, check_output_folder

_INITS = ("zeros", "ones", "rand", "arange")
_SCALARS = {"u32": (0, 2 ** 32 - 1), "i32": (-2 ** 31, 2 ** 31 - 1), "f32": None}
# Help for options that fastgemm.emu's parser leaves without any.
_HELP = {
    "buffer": "a buffer bound at [[buffer(INDEX)]]: INDEX:DTYPE:COUNT[:INIT] (INIT: zeros, ones, rand, arange; "
              "default zeros) or INDEX:u32=V,i32=V,f32=V for a small constant struct; repeatable",
    "threadgroup_memory": "length in bytes of the [[threadgroup(INDEX)]] argument, as INDEX:BYTES; repeatable",
    "order": "the order in which threadgroups run (default: %(default)s)",
}


def add_parser(sub) -> None:
    p = emu.add_emu_parser(sub)
    for action in p._actions:
        if action.help is None and action.dest in _HELP:
            action.help = _HELP[action.dest]
    handler = p.get_default("func")
    p.set_defaults(func=lambda args: _run_checked(args, handler))


def _grid(text: str, option: str):
    parts = text.split(",")
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\s*\d+\s*", x) for x in parts):
        raise UsageError(f"{option} takes X[,Y[,Z]] (whole numbers >= 1), got {text!r}")
    dims = [int(x) for x in parts]
    if any(d < 1 or d > 2 ** 31 - 1 for d in dims):
        raise UsageError(f"{option}: every dimension is between 1 and {2 ** 31 - 1}, got {text!r}")
    return dims


def _index(text: str, spec: str, option: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()):
        raise UsageError(f"{option} {spec!r}: the index must be a whole number >= 0, got {text!r}")
    return int(text)


def _check_buffer(spec: str) -> None:
    if ":" not in spec:
        raise UsageError(f"--buffer {spec!r}: expected INDEX:DTYPE:COUNT[:INIT] or INDEX:u32=V,...")
    idx, rest = spec.split(":", 1)
    _index(idx, spec, "--buffer")
    if "=" in rest and rest.split("=", 1)[0] in _SCALARS:
        for part in rest.split(","):
            kind, eq, value = part.partition("=")
            if not eq or kind not in _SCALARS:
                raise UsageError(f"--buffer {spec!r}: each value is u32=V, i32=V or f32=V, got {part!r}")
            try:
                v = float(value) if kind == "f32" else int(value)
            except ValueError:
                raise UsageError(f"--buffer {spec!r}: {value!r} is not a {kind} value") from None
            bounds = _SCALARS[kind]
            if bounds and not bounds[0] <= v <= bounds[1]:
                raise UsageError(f"--buffer {spec!r}: {v} does not fit in {kind}")
        return
    fields = rest.split(":")
    if len(fields) not in (2, 3):
        raise UsageError(f"--buffer {spec!r}: expected INDEX:DTYPE:COUNT[:INIT]")
    try:
        dtype = np.dtype(fields[0])
    except (TypeError, ValueError):
        raise UsageError(f"--buffer {spec!r}: {fields[0]!r} is not a numpy dtype (float32, int32, uint32...)") from None
    if dtype.kind not in "biuf" or dtype.itemsize == 0:
        raise UsageError(f"--buffer {spec!r}: {fields[0]!r} is not a numeric dtype")
    if not re.fullmatch(r"\d+", fields[1]):
        raise UsageError(f"--buffer {spec!r}: COUNT must be a whole number >= 0, got {fields[1]!r}")
    if int(fields[1]) * dtype.itemsize > 2 ** 34:
        raise UsageError(f"--buffer {spec!r}: {int(fields[1]) * dtype.itemsize / 2 ** 30:.1f} GiB is too large")
    if len(fields) == 3 and fields[2] not in _INITS:
        raise UsageError(f"--buffer {spec!r}: INIT is one of {', '.join(_INITS)}, got {fields[2]!r}")


def _check_threadgroup_memory(spec: str) -> None:
    idx, sep, size = spec.partition(":")
    if not sep:
        raise UsageError(f"--threadgroup-memory {spec!r}: expected INDEX:BYTES")
    _index(idx, spec, "--threadgroup-memory")
    if not re.fullmatch(r"\d+", size.strip()):
        raise UsageError(f"--threadgroup-memory {spec!r}: BYTES must be a whole number >= 0, got {size!r}")


def _run_checked(args, handler) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file" if not path.exists() else f"{args.file}: not a regular file")
    if not args.kernel.strip():
        raise UsageError("--kernel is empty")
    _grid(args.threadgroups, "--threadgroups")
    _grid(args.threads, "--threads")
    for spec in args.buffer:
        _check_buffer(spec)
    for spec in args.threadgroup_memory:
        _check_threadgroup_memory(spec)
    check_output_folder(args.save, "--save")
    return handler(args)

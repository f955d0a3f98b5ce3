"""What every fastgemm subcommand shares: argument types, the checks made before any work
(output paths, optional dependencies, memory), backend and kernel resolution, progress
bars, and UsageError, which main() prints as one line on stderr with exit code 2.

Nothing here imports a subcommand, and no module outside fastgemm.cli imports this one:
the CLI sits on top of the library, never beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import re
import sys
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from .. import _fastgemm, api
from ..errors import FastgemmError, NotFoundError

DEFAULT_SIZE = 512  # small enough that the slowest loop orders finish politely
MAX_DIMENSION = 2 ** 31 - 1
MAX_THREADS = 1024
# bench warns when the 1-minute load average is above this share of the usable cores.
LOAD_WARNING_SHARE = 0.5

Shape = Tuple[int, int, int]


class UsageError(FastgemmError):
    """A mistake in the command line or in an input file: one line on stderr, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (prog: error: message), exit code 2.

    Subcommands named in `hidden` (interfaces between fastgemm processes) are left out
    of the choices an error message lists, as they are left out of the help."""

    hidden = ("_run-once",)

    def error(self, message: str):
        message = " ".join(message.split())
        for name in self.hidden:
            message = message.replace(f", '{name}'", "").replace(f"'{name}', ", "")
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# --- argument types --------------------------------------------------------------------------

def _whole_number(text: str, what: str = "a whole number") -> int:
    try:
        return int(text, 0) if text.strip().lower().startswith(("0x", "0o", "0b")) else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    v = _whole_number(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {v}")
    return v


def nonnegative_int(text: str) -> int:
    v = _whole_number(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {v}")
    return v


def iteration_count(text: str) -> int:
    v = positive_int(text)
    if v > 2 ** 31 - 1:
        raise argparse.ArgumentTypeError(f"expected at most {2 ** 31 - 1} iterations, got {v}")
    return v


def warmup_count(text: str) -> int:
    v = nonnegative_int(text)
    if v > 2 ** 31 - 1:
        raise argparse.ArgumentTypeError(f"expected at most {2 ** 31 - 1} warm-up iterations, got {v}")
    return v


def thread_count(text: str) -> int:
    v = positive_int(text)
    if v > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_THREADS} threads, got {v}")
    return v


def dimension(text: str) -> int:
    v = positive_int(text)
    if v > MAX_DIMENSION:
        raise argparse.ArgumentTypeError(f"a dimension must be at most {MAX_DIMENSION}, got {v}")
    return v


def seed(text: str) -> int:
    """0 .. 2**64 - 1, decimal or 0x-prefixed hex."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number (decimal or 0x...), got {text!r}") from None
    if not 0 <= v < 2 ** 64:
        raise argparse.ArgumentTypeError(f"a seed is between 0 and 2**64 - 1, got {v}")
    return v


def seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return v


def fraction(text: str) -> float:
    """A share such as 0.1 or 10%, returned as 0.1."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.1 or 10%, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"expected a fraction > 0, got {text!r}")
    return v


def percentage(text: str) -> float:
    """5% or 5 (both five percent), returned as 0.05."""
    t = text.strip()
    try:
        v = float(t[:-1] if t.endswith("%") else t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 5%, got {text!r}") from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"expected a percentage >= 0, got {text!r}")
    return v / 100.0


def parse_shape(text: str) -> Shape:
    m = re.fullmatch(r"\s*(\d+)\s*[xX,]\s*(\d+)\s*[xX,]\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"shape must look like MxNxK (e.g. 1024x512x256), got {text!r}")
    dims = tuple(int(g) for g in m.groups())
    if any(d < 1 or d > MAX_DIMENSION for d in dims):
        raise argparse.ArgumentTypeError(f"every dimension of a shape is between 1 and {MAX_DIMENSION}, got {text!r}")
    return dims  # type: ignore[return-value]


def parse_sizes(text: str) -> List[int]:
    """'256,512,1024', '256:4096' (powers of two) or '256:2048:256' (a step)."""
    out: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        bits = part.split(":")
        try:
            nums = [int(b) for b in bits]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"sizes look like 256,512 or 256:4096 or 256:2048:256, got {part!r}") from None
        if len(nums) > 3 or any(n < 1 or n > MAX_DIMENSION for n in nums):
            raise argparse.ArgumentTypeError(f"bad size range {part!r} (sizes are between 1 and {MAX_DIMENSION})")
        if len(nums) == 1:
            out.append(nums[0])
        elif len(nums) == 2:
            n = nums[0]
            while n <= nums[1]:
                out.append(n)
                n *= 2
        else:
            out.extend(itertools.islice(range(nums[0], nums[1] + 1, nums[2]), 65))
        if len(out) > 64:  # before a range of millions is listed
            break
    if not out:
        raise argparse.ArgumentTypeError(f"no sizes in {text!r}")
    if len(out) > 64:
        raise argparse.ArgumentTypeError(f"{text!r} gives more than 64 sizes; at most 64 per run")
    return out


# --- options every measuring command has ------------------------------------------------------

BACKEND_HELP = "cpu, metal, metal-emu, cuda, or auto: the available backend of highest priority (default: %(default)s)"


def add_backend_option(p, default: str = "auto", help: str = BACKEND_HELP) -> None:
    p.add_argument("--backend", default=default, help=help)


def add_problem_options(p, default_size: int = DEFAULT_SIZE) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--size", type=dimension, default=default_size,
                   help="square problem M = N = K (default: %(default)s)")
    g.add_argument("--shape", type=parse_shape, help="problem as MxNxK, e.g. 1024x512x256 (instead of --size)")


def add_timing_options(p, warmup: int = 1, iters: int = 5) -> None:
    p.add_argument("--warmup", type=warmup_count, default=warmup,
                   help="untimed iterations per kernel before timing (default: %(default)s)")
    p.add_argument("--iters", type=iteration_count, default=iters,
                   help="timed iterations per kernel; the table shows their median, min and spread "
                        "(default: %(default)s)")
    p.add_argument("--max-seconds", type=seconds, default=3.0,
                   help="stop timing a kernel after this long, keeping at least one iteration; 0 = no cap "
                        "(default: %(default)s)")
    p.add_argument("--seed", type=seed, default=0x5EED,
                   help="seed of the random inputs, uniform in [-1, 1) (default: 0x5eed)")
    p.add_argument("--threads", type=thread_count,
                   help="CPU threads for the cpu kernels and the BLAS baseline (default: all usable cores)")
    p.add_argument("--spread-limit", type=fraction, default=0.10,
                   help="flag and re-measure rows whose spread (IQR / median) or baseline drift is above this, "
                        "e.g. 0.1 or 10%% (default: %(default)s)")


def add_baseline_option(p) -> None:
    p.add_argument("--baseline",
                   help="baseline kernel of the same backend, or 'none' (default: the backend's vendor library)")


def shape_of(args) -> Shape:
    return args.shape if args.shape else (args.size, args.size, args.size)


# --- checks before any work -------------------------------------------------------------------

def check_output_file(path: Optional[str], option: str) -> Optional[str]:
    """Refuses, before any work, an output file that could not be written afterwards.

    The check opens the file the way the command will (created when missing, then removed
    again; an existing file is opened for appending, which leaves it unchanged)."""
    if path is None:
        return None
    if not path.strip():
        raise UsageError(f"{option}: the path is empty")
    p = Path(path)
    if path == os.devnull:
        return path
    if p.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    if p.exists() and not p.is_file():
        raise UsageError(f"{option} {path}: is not a regular file")
    parent = p.parent
    if not parent.exists():
        raise UsageError(f"{option} {path}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: {parent} is not a folder")
    existed = p.exists()
    try:
        with open(p, "ab"):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot be written ({e.strerror or e})") from None
    if not existed:
        try:
            p.unlink()
        except OSError:
            pass
    return path


def check_output_folder(path: Optional[str], option: str) -> Optional[str]:
    """Refuses a folder that could not be created or written into."""
    if path is None:
        return None
    if not path.strip():
        raise UsageError(f"{option}: the path is empty")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {path}: exists and is not a folder")
    existing = p
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{option} {path}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: {existing} is not writable")
    try:
        import tempfile

        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write into {existing} ({e.strerror or e})") from None
    return path


def check_plot_file(path: Optional[str], option: str = "--plot") -> Optional[str]:
    """An output file for a chart: writable, matplotlib installed, a format it can write."""
    if path is None:
        return None
    check_output_file(path, option)
    from .. import plots

    plots.pyplot()  # FastgemmError with the install command when matplotlib is missing
    from matplotlib.backend_bases import FigureCanvasBase

    ext = Path(path).suffix.lower().lstrip(".")
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext and ext not in formats:
        raise UsageError(f"{option} {path}: matplotlib cannot write .{ext} files; use one of "
                         f"{', '.join('.' + f for f in sorted(formats))}")
    return path


def emit_json(doc, path: str) -> None:
    """`doc` as JSON to stdout (path "-") or written whole to the file at `path`."""
    import json

    from .. import report

    text = json.dumps(doc, indent=1) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        report.write_text(path, text)


def read_input_file(path: str, option: str) -> str:
    """The text of an input file, or UsageError naming what is wrong with it."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{option} {path}: no such file")
    if p.is_dir():
        raise UsageError(f"{option} {path}: is a folder, not a file")
    if not p.is_file():
        raise UsageError(f"{option} {path}: is not a regular file")
    try:
        return p.read_text()
    except UnicodeDecodeError:
        raise UsageError(f"{option} {path}: is not a text file") from None
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot be read ({e.strerror or e})") from None


def check_fits_in_memory(shapes: Iterable[Shape]) -> None:
    """Refuses problems whose operands do not fit in the memory available now."""
    available = _fastgemm.available_memory_bytes()
    if available <= 0:
        return
    for M, N, K in shapes:
        need = _fastgemm.bench_bytes(M, N, K)
        if need > 0.9 * available:
            raise UsageError(f"{M}x{N}x{K} needs {need / 2 ** 30:,.1f} GiB for its operands, but only "
                             f"{available / 2 ** 30:,.1f} GiB of memory is available; use a smaller problem")


def apply_threads(n: Optional[int]) -> None:
    if n:
        _fastgemm.set_num_threads(n)


def machine_load() -> Optional[Tuple[float, int]]:
    """(1-minute load average, usable cores), or None where the OS has no load average."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return None
    return load, _fastgemm.available_cores()


def load_warning() -> Optional[str]:
    """A sentence when other work already keeps this machine's cores busy."""
    seen = machine_load()
    if seen is None:
        return None
    load, cores = seen
    if load <= LOAD_WARNING_SHARE * cores:
        return None
    return (f"the machine is busy (load average {load:.2f} on {cores} cores): timings compete with other work; "
            f"rows that measure unstably are flagged and re-measured, but a quiet machine gives better numbers")


def description(doc: str) -> str:
    """A subcommand's --help description: its module docstring's first paragraph, without
    the leading "`fastgemm NAME ...`:" that names the command."""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return re.sub(r"^`fastgemm [^`]*`:\s*", "", first)


def warn(message: str) -> None:
    print(f"fastgemm: warning: {message}", file=sys.stderr)


# --- backends and kernels ---------------------------------------------------------------------

def resolve_backend(name: str) -> str:
    """The backend a command runs on: 'auto' resolved; unknown or unavailable refused."""
    status = {b.name: b for b in _fastgemm.backends()}
    backend = _fastgemm.best_backend() if name == "auto" else name
    if backend not in status:
        raise UsageError(f"unknown backend '{name}'; choose from {', '.join(status)}, auto")
    if not status[backend].available:
        raise UsageError(f"backend '{backend}' is unavailable here: {status[backend].reason}")
    return backend


def backend_of_kernel(kernel: str, wanted: str = "auto") -> Optional[str]:
    """The available backend that runs `kernel` (the one fastgemm.benchmark would use), or
    None when none has it. The single place the CLI maps a kernel name to a backend."""
    try:
        backend = api._resolve_backend_for(kernel, None if wanted == "auto" else wanted)
    except NotFoundError:
        return None
    status = {b.name: b for b in _fastgemm.backends()}
    if backend not in status or not status[backend].available:
        return None
    if not any(k.name == kernel for k in _fastgemm.kernels(backend)):
        return None
    return backend


def kernel_names(backend: str) -> List[str]:
    return [k.name for k in _fastgemm.kernels(backend)]


def split_names(text: str) -> List[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def select_kernels(backend: str, wanted: Optional[str], baseline: Optional[str]):
    """KernelInfo of the kernels to run: the named ones, or the default ladder."""
    infos = {k.name: k for k in _fastgemm.kernels(backend)}
    if wanted is not None:
        names = split_names(wanted)
        if not names:
            raise UsageError("--kernels names no kernel")
        unknown = [n for n in names if n not in infos]
        if unknown:
            raise UsageError(f"unknown kernel(s) for backend {backend}: {', '.join(unknown)}; "
                             f"see `fastgemm kernels --backend {backend}`")
        return [infos[n] for n in names if n != baseline]
    # Names with '@' are experiments (the -O ladder: ikj@O0 ...): run when named, not by default.
    return [k for k in _fastgemm.kernels(backend) if not k.baseline and "@" not in k.name]


def baseline_for(backend: str, option: Optional[str]) -> Optional[str]:
    """The baseline kernel: None for 'none', the vendor library by default, else the named one."""
    if option == "none":
        return None
    if option is None:
        return api.default_baseline(backend)
    if option not in kernel_names(backend):
        raise UsageError(f"unknown baseline '{option}' for backend {backend}; "
                         f"see `fastgemm kernels --backend {backend}`")
    return option


def runnable(infos, shape: Shape, run_all: bool):
    """(to run, rejected by their constraints, above their size cap) for one problem."""
    M, N, K = shape
    flops = 2.0 * M * N * K
    run, rejected, capped = [], [], []
    for info in infos:
        if not info.accepts(M, N, K):
            rejected.append(info)
        elif flops > info.bench_flops_cap and not run_all:
            capped.append(info)
        else:
            run.append(info)
    return run, rejected, capped


def describe_rejected(infos, limit: int = 3) -> str:
    """'name (constraints); ...' for up to `limit` kernels, then how many more."""
    infos = list(infos)
    text = "; ".join(f"{i.name} ({', '.join(i.constraints)})" for i in infos[:limit])
    if len(infos) > limit:
        text += f"; and {len(infos) - limit} more (`fastgemm kernels` lists their constraints)"
    return text


# --- progress -------------------------------------------------------------------------------

# Operands above this many bytes take seconds to fill and check against float64 (16 GiB
# for 1 x 1 x 2^31: about 20 s on two cores), time in which the bar has not started.
PREPARING_NOTE_BYTES = 1 << 30


@contextlib.contextmanager
def preparing(M: int, N: int, K: int, stream=None):
    """On a terminal, a line saying that large operands are being prepared, erased when
    they are ready; nothing otherwise (logs stay clean)."""
    stream = sys.stderr if stream is None else stream
    need = _fastgemm.bench_bytes(M, N, K)
    if need < PREPARING_NOTE_BYTES or not getattr(stream, "isatty", lambda: False)():
        yield
        return
    line = f"preparing {need / 2**30:.1f} GiB of operands and their float64 reference for {M}x{N}x{K} ..."
    stream.write(line)
    stream.flush()
    try:
        yield
    finally:
        stream.write("\r" + " " * len(line) + "\r")
        stream.flush()


def progress(items: Sequence, desc: str, label: Optional[Callable[[object], str]] = None, stream=None):
    """A progress bar on a terminal, plain iteration otherwise (logs stay clean). `label`
    names the item being worked on (kernel and size) beside the bar."""
    stream = sys.stderr if stream is None else stream
    if not getattr(stream, "isatty", lambda: False)():
        return iter(items)
    from tqdm import tqdm

    bar = tqdm(items, desc=desc, leave=False, file=stream)

    def named():
        for item in bar:
            if label is not None:
                bar.set_postfix_str(label(item), refresh=True)
            yield item

    return named()

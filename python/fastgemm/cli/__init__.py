"""The `fastgemm` command: one module per subcommand over one shared module (common).

    bench         verify and time the ladder against the vendor baseline
    sweep         a kernel family's parameters on one problem
    roofline      the ladder on this machine's measured roofline
    compare       ratios between two result files (a CI regression gate)
    kernels       the registered kernels and their constraints
    info          build, machine, backends and their ceilings
    emu           one Metal kernel on the CPU emulator
    explain-diff  which kernels sum in strict k order (bit-exact check)
    profile       measured DRAM traffic from GPU counters

A user error (a bad argument, an unwritable output, a malformed input file) ends as one
line on stderr and exit code 2, before any work; exit code 1 means a kernel failed its
verification (or, for compare --fail-above, a regression); a traceback is a bug.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import List, Optional

from .. import _fastgemm
from .._cmake import PATH_FLAGS
from ..errors import FastgemmError
from . import bench, child, compare, emu, explain_diff, info, kernels, profile, roofline, sweep
from .common import Parser, select_kernels

# Kept for callers of the former single-module CLI.
_select_kernels = select_kernels

_COMMANDS = (bench, sweep, roofline, compare, kernels, info, emu, explain_diff, profile)


# The C++ face of the installed package (fastgemm._cmake.PATH_FLAGS).
_PATH_HELP = {
    "--cmake-dir": "print the folder of fastgemmConfig.cmake and exit (for cmake -Dfastgemm_DIR=...)",
    "--include-dir": "print the folder that holds fastgemm/fastgemm.hpp and exit",
    "--library-dir": "print the folder of libfastgemm and exit",
}
_EPILOG = ("exit codes: 0 done; 1 a kernel failed verification (compare --fail-above: a regression); "
           "2 a user error, reported on one line before any work. `fastgemm COMMAND --help` describes each command.")


def build_parser() -> Parser:
    p = Parser(prog="fastgemm", description="SGEMM kernel ladders, each verified and timed natively against "
                                            "the vendor library.", epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"fastgemm {_fastgemm.__version__}",
                   help="print the version and exit")
    for flag, text in _PATH_HELP.items():
        p.add_argument(flag, action="store_true", help=text)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", title="commands", parser_class=Parser)
    for module in _COMMANDS:
        module.add_parser(sub)
    child.add_parser(sub)  # hidden: registered without help, so no listing shows it
    return p


def _one_line(e: BaseException) -> str:
    return "; ".join(part.strip() for part in str(e).splitlines() if part.strip()) or type(e).__name__


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or an argument error already printed
        return e.code if isinstance(e.code, int) else 2
    for flag, where in PATH_FLAGS.items():
        if getattr(args, flag[2:].replace("-", "_")):
            try:
                print(where())
            except FileNotFoundError as e:
                print(f"fastgemm: error: {_one_line(e)}", file=sys.stderr)
                return 2
            return 0
    if args.command is None:
        print("fastgemm: error: name a command (fastgemm --help lists them)", file=sys.stderr)
        return 2
    try:
        rc = args.func(args)
        _flush_stdout()
        return rc
    except _OutputLost as e:
        print(f"fastgemm {args.command}: error: could not write the output: {e}", file=sys.stderr)
        return 1
    except FastgemmError as e:
        print(f"fastgemm {args.command}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except MemoryError as e:
        print(f"fastgemm {args.command}: error: out of memory: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fastgemm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `fastgemm info | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:
        if e.errno not in _OUTPUT_ERRNOS:
            raise
        print(f"fastgemm {args.command}: error: could not write the output: {e.strerror}", file=sys.stderr)
        return 1


# stdout on a full disk (ENOSPC), closed (EBADF) or failing (EIO): what was printed is
# lost, so the command fails with one line instead of a traceback or a silent 0.
_OUTPUT_ERRNOS = (errno.ENOSPC, errno.EBADF, errno.EIO)


class _OutputLost(Exception):
    pass


def _flush_stdout() -> None:
    if sys.stdout is None:
        raise _OutputLost("standard output is closed")
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as e:  # ValueError: flush of a closed file
        raise _OutputLost(getattr(e, "strerror", None) or str(e)) from None

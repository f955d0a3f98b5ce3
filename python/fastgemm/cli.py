"""The `fastgemm` command: bench, kernels, info.

`fastgemm bench` runs the whole ladder of the best available backend plus its vendor
baseline on one problem, verifying every kernel first, and prints the seed-style table.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import List, Optional

from . import _fastgemm, api, report
from .errors import FastgemmError

DEFAULT_SIZE = 512  # seed 003's problem: small enough that the worst loops finish politely


def parse_shape(text: str):
    m = re.fullmatch(r"\s*(\d+)\s*[xX,]\s*(\d+)\s*[xX,]\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"shape must look like MxNxK (e.g. 1024x512x256), got {text!r}")
    return tuple(int(g) for g in m.groups())


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {v}")
    return v


def _progress(items, desc: str):
    """A progress bar on a terminal, plain iteration otherwise (logs stay clean)."""
    if not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, leave=False, file=sys.stderr)


def _select_kernels(backend: str, wanted: Optional[str], baseline: Optional[str]):
    infos = {k.name: k for k in _fastgemm.kernels(backend)}
    if wanted:
        names = [n.strip() for n in wanted.split(",") if n.strip()]
        unknown = [n for n in names if n not in infos]
        if unknown:
            raise FastgemmError(f"unknown kernel(s) for backend {backend}: {', '.join(unknown)}; "
                                f"see `fastgemm kernels --backend {backend}`")
        return [infos[n] for n in names if n != baseline]
    return [k for k in _fastgemm.kernels(backend) if not k.baseline]


def cmd_bench(args) -> int:
    if args.threads:
        _fastgemm.set_num_threads(args.threads)
    backend = _fastgemm.best_backend() if args.backend == "auto" else args.backend
    status = {b.name: b for b in _fastgemm.backends()}
    if backend not in status:
        raise FastgemmError(f"unknown backend '{backend}'; choose from {', '.join(status)}")
    if not status[backend].available:
        raise FastgemmError(f"backend '{backend}' is unavailable: {status[backend].reason}")
    M, N, K = args.shape if args.shape else (args.size, args.size, args.size)
    baseline = None if args.baseline == "none" else (args.baseline or api.default_baseline(backend))
    kernels = _select_kernels(backend, args.kernels, baseline)
    flops = 2.0 * M * N * K

    notes = []
    if backend == "metal-emu":
        notes.append("metal-emu runs Metal shaders on the CPU to check them: its times are NOT "
                     "performance numbers")
    bench = _fastgemm.Bench(M, N, K, False, False, 1.0, 0.0, args.seed)
    results = []
    base = None
    base_out = None
    if baseline:
        b = bench.run(backend, baseline, args.warmup, args.iters, True, args.max_seconds)
        base = api.BenchResult.from_native(b, _fastgemm.kernel_info(backend, baseline).precision)
        base_out = bench.output()
        results.append(base)
    skipped = []
    for info in _progress(kernels, f"{backend} {M}x{N}x{K}"):
        if flops > info.bench_flops_cap and not args.all:
            skipped.append(info.name)
            continue
        r = bench.run(backend, info.name, args.warmup, args.iters, True, args.max_seconds)
        res = api.BenchResult.from_native(r, info.precision)
        if base is not None:
            res.baseline = base.kernel
            res.ratio = base.device_median / res.device_median
            import numpy as np

            res.diff_vs_baseline = float(np.max(np.abs(bench.output() - base_out))) if M and N else 0.0
        results.append(res)
    if skipped:
        notes.append(f"skipped above their size cap (they would take many seconds per call; --all runs "
                     f"them): {', '.join(skipped)}")
    if any(r.truncated for r in results):
        notes.append(f"some kernels ran fewer iterations: --max-seconds {args.max_seconds:g} per kernel")
    failed = [r.kernel for r in results if r.verified and not r.passed]
    if failed:
        notes.append(f"FAILED verification against the float64 reference: {', '.join(failed)}")

    st = status[backend]
    print(f"fastgemm {_fastgemm.__version__} bench · backend {backend} · {st.device} · "
          f"{M}x{N}x{K} (M x N x K) · threads {_fastgemm.get_num_threads()}")
    print(f"verified against float64 (rows checked: {len(bench.reference_rows)} of {M}); "
          f"{args.iters} iterations after {args.warmup} warm-up; inputs uniform in [-1, 1), seed {args.seed:#x}")
    print()
    print(report.table(results, base, time_label=f"device time, median of {args.iters} (native clock)",
                       notes=notes))
    if args.csv:
        report.write_csv(args.csv, results, backend)
    if args.json:
        report.write_json(args.json, results, backend, {"notes": notes, "skipped": skipped})
    return 1 if failed else 0


def cmd_kernels(args) -> int:
    backends = [args.backend] if args.backend else [b.name for b in _fastgemm.backends()]
    for be in backends:
        ks = _fastgemm.kernels(be)
        if not ks:
            continue
        print(f"[{be}]")
        for k in ks:
            tag = "baseline" if k.baseline else f"step {k.ladder_step:>2}"
            cons = f"  requires {', '.join(k.constraints)}" if k.constraints else ""
            params = " ".join(f"{a}={b}" for a, b in k.params.items())
            print(f"  {k.name:<26} {tag:<9} {k.precision:<7} {k.description}"
                  f"{'  [' + params + ']' if params else ''}{cons}")
    return 0


def cmd_info(args) -> int:
    info = _fastgemm.build_info
    print(f"fastgemm {info['version']}")
    print(f"  compiler      {info['compiler']}")
    print(f"  cpu           {info['cpu_model']}")
    print(f"  cpu isa       {info['cpu_isa']}")
    print(f"  cores         {_fastgemm.available_cores()} (threads in use: {_fastgemm.get_num_threads()})")
    print("backends:")
    for b in _fastgemm.backends():
        if b.available:
            print(f"  {b.name:<10} available    {b.device}")
            for k, v in b.properties.items():
                print(f"      {k:<14} {v}")
        else:
            print(f"  {b.name:<10} unavailable  {b.reason}")
    print(f"  auto picks: {_fastgemm.best_backend()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastgemm", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"fastgemm {_fastgemm.__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bench", help="verify and time the ladder against the vendor baseline")
    b.add_argument("--backend", default="auto", help="cpu, metal, metal-emu, cuda or auto (default)")
    size = b.add_mutually_exclusive_group()
    size.add_argument("--size", type=positive_int, default=DEFAULT_SIZE, help="square problem size (default 512)")
    size.add_argument("--shape", type=parse_shape, help="MxNxK")
    b.add_argument("--kernels", help="comma-separated kernel names (default: the whole ladder)")
    b.add_argument("--baseline", help="baseline kernel name, or 'none' (default: the backend's vendor library)")
    b.add_argument("--warmup", type=int, default=1)
    b.add_argument("--iters", type=positive_int, default=5)
    b.add_argument("--threads", type=positive_int, help="CPU threads (default: all usable cores)")
    b.add_argument("--max-seconds", type=float, default=3.0,
                   help="stop timing a kernel after this long (at least one iteration); 0 = no cap")
    b.add_argument("--all", action="store_true", help="also run rungs above their size cap")
    b.add_argument("--seed", type=lambda s: int(s, 0), default=0x5EED)
    b.add_argument("--csv", help="write results to this CSV file")
    b.add_argument("--json", help="write results (every sample, machine, versions) to this JSON file")
    b.set_defaults(func=cmd_bench)

    k = sub.add_parser("kernels", help="list registered kernels with their constraints")
    k.add_argument("--backend")
    k.set_defaults(func=cmd_kernels)

    i = sub.add_parser("info", help="machine, build and backends")
    i.set_defaults(func=cmd_info)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except FastgemmError as e:
        print(f"fastgemm: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fastgemm: interrupted", file=sys.stderr)
        return 130

"""Run-to-run stability across fresh processes: `fastgemm bench --processes N`.

Seed 003 found Accelerate's SGEMM bimodal: a whole process landed in a fast or a slow
mode (0.15 ms or 0.79 ms at 512^3), and best-of-8 inside a slow process never saw a fast
sample. A benchmark inside one process cannot show that. This module launches the same
measurement in N fresh processes, one after another, takes the best of k iterations in
each (the seed's best-of), and prints the distribution of those per-process bests: the
sorted values with counts ("0.151(4) 0.153(2) ..."), min / median / max, and the clusters
("modes") they fall into, so a user can see whether a library is bimodal on their machine.

Each child runs `python -m fastgemm _run-once ...`, which verifies and times one kernel on
one problem and prints one line `FASTGEMM_RUN_ONCE {json}`; `fastgemm profile` uses the
same entry point under a profiler.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from . import _fastgemm
from .errors import FastgemmError

RESULT_PREFIX = "FASTGEMM_RUN_ONCE "
# Consecutive sorted per-process bests further apart than this ratio start a new mode.
DEFAULT_MODE_GAP = 1.25


# --- the child: one kernel, one problem, one process --------------------------------------

def run_once(backend: str, kernel: str, shape: Tuple[int, int, int], *, warmup: int = 1, iters: int = 5,
             verify: bool = True, seed: int = 0x5EED, threads: Optional[int] = None) -> dict:
    """Verifies (optionally), warms up and times one kernel in this process."""
    if threads:
        _fastgemm.set_num_threads(threads)
    M, N, K = shape
    t0 = time.perf_counter()
    bench = _fastgemm.Bench(M, N, K, False, False, 1.0, 0.0, seed)
    r = bench.run(backend, kernel, warmup, iters, verify, 0.0)
    v = r.verification
    return {
        "pid": os.getpid(), "backend": backend, "kernel": r.kernel, "M": M, "N": N, "K": K,
        "threads": r.threads, "warmup": warmup, "iters": iters,
        "device_s": list(r.device_s), "host_s": list(r.host_s),
        "verified": bool(r.verified), "passed": bool(v.passed) if r.verified else None,
        "rel_err": float(v.rel_err) if r.verified else None,
        "wall_s": time.perf_counter() - t0,
    }


def cmd_run_once(args) -> int:
    """The hidden `_run-once` subcommand (a child of --processes and of `fastgemm profile`)."""
    shape = args.shape if args.shape else (args.size, args.size, args.size)
    rec = run_once(args.backend, args.kernel, shape, warmup=args.warmup, iters=args.iters,
                   verify=not args.no_verify, seed=args.seed, threads=args.threads)
    sys.stdout.write(RESULT_PREFIX + json.dumps(rec) + "\n")
    sys.stdout.flush()
    return 0 if rec["passed"] is not False else 1


def run_once_command(backend: str, kernel: str, shape: Sequence[int], *, warmup: int, iters: int,
                     verify: bool = True, seed: int = 0x5EED, threads: Optional[int] = None) -> List[str]:
    """argv of a fresh process that runs one measurement (for subprocess, or under a profiler)."""
    cmd = [sys.executable, "-m", "fastgemm", "_run-once", "--backend", backend, "--kernel", kernel,
           "--shape", "x".join(str(int(d)) for d in shape), "--warmup", str(warmup), "--iters", str(iters),
           "--seed", hex(seed)]
    if threads:
        cmd += ["--threads", str(threads)]
    if not verify:
        cmd.append("--no-verify")
    return cmd


def parse_run_once_output(stdout: str) -> dict:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    raise FastgemmError("the child process printed no result line")


def measure_in_processes(backend: str, kernel: str, shape: Sequence[int], processes: int, *, warmup: int,
                         iters: int, seed: int = 0x5EED, threads: Optional[int] = None,
                         verify: str = "first", progress=lambda items, desc: items) -> List[dict]:
    """Runs the measurement in `processes` fresh processes, one after another.

    verify: "first" verifies in the first process only (the result does not change between
    processes; the reference costs time), "all" in every one, "none" never.
    """
    out = []
    for i in progress(range(processes), f"{kernel} x{processes} processes"):
        do_verify = verify == "all" or (verify == "first" and i == 0)
        cmd = run_once_command(backend, kernel, shape, warmup=warmup, iters=iters, verify=do_verify,
                               seed=seed, threads=threads)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            raise FastgemmError(f"process {i + 1} of {processes} failed (exit {proc.returncode}): "
                                f"{proc.stderr.strip()[-500:]}")
        rec = parse_run_once_output(proc.stdout)
        if rec["passed"] is False:
            raise FastgemmError(f"{kernel} FAILED verification in process {i + 1} (rel err {rec['rel_err']:.2e})")
        rec["index"] = i
        rec["best_s"] = min(rec["device_s"])
        out.append(rec)
    return out


# --- the distribution ------------------------------------------------------------------------

def _fmt_ms(seconds: float) -> str:
    """Three significant figures in ms (0.151, 8.31, 127): the seed's resolution."""
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 1000 else f"{ms:.0f}"


def counted(values_s: Sequence[float]) -> List[Tuple[str, int]]:
    """Sorted values, rounded to 3 significant figures in ms, with how often each occurs."""
    out: List[Tuple[str, int]] = []
    for v in sorted(values_s):
        label = _fmt_ms(v)
        if out and out[-1][0] == label:
            out[-1] = (label, out[-1][1] + 1)
        else:
            out.append((label, 1))
    return out


def format_counts(values_s: Sequence[float], width: int = 88, indent: str = "  ") -> str:
    """The seed's layout: '0.151(4) 0.153(2) 0.155 ...', wrapped."""
    items = [f"{label}({n})" if n > 1 else label for label, n in counted(values_s)]
    lines, line = [], indent
    for it in items:
        if len(line) + len(it) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += it + " "
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def find_modes(values_s: Sequence[float], gap: float = DEFAULT_MODE_GAP) -> List[Dict]:
    """Clusters of the sorted values: a new one starts where a value exceeds its predecessor
    by more than `gap` (x). Returns [{low, high, median, count}] fastest first."""
    vals = sorted(values_s)
    if not vals:
        return []
    groups = [[vals[0]]]
    for prev, v in zip(vals, vals[1:]):
        if prev > 0 and v / prev > gap:
            groups.append([])
        groups[-1].append(v)
    out = []
    for g in groups:
        n = len(g)
        med = g[n // 2] if n % 2 else 0.5 * (g[n // 2 - 1] + g[n // 2])
        out.append({"low": g[0], "high": g[-1], "median": med, "count": n})
    return out


def summarize(records: List[dict], flops: float, gap: float = DEFAULT_MODE_GAP) -> dict:
    import numpy as np

    bests = [r["best_s"] for r in records]
    spreads = [max(r["device_s"]) / min(r["device_s"]) for r in records if min(r["device_s"]) > 0]
    med = float(np.median(bests))
    return {
        "processes": len(records), "best_of": records[0]["iters"] if records else 0,
        "min_s": min(bests), "median_s": med, "max_s": max(bests),
        "gflops_at_min": flops / min(bests) * 1e-9, "gflops_at_median": flops / med * 1e-9,
        "gflops_at_max": flops / max(bests) * 1e-9,
        "modes": find_modes(bests, gap), "mode_gap": gap,
        "counts": [{"ms": label, "count": n} for label, n in counted(bests)],
        "within_process_spread_median": float(np.median(spreads)) if spreads else None,
        "within_process_spread_max": max(spreads) if spreads else None,
    }


def report_text(kernel: str, s: dict, records: List[dict]) -> str:
    lines = [f"best of {s['best_of']} per process, sorted (ms), with counts:",
             format_counts([r["best_s"] for r in records]),
             f"min {_fmt_ms(s['min_s'])} ms   median {_fmt_ms(s['median_s'])} ms   max {_fmt_ms(s['max_s'])} ms"
             f"   (max/min {s['max_s'] / s['min_s']:.2f}x)",
             f"GFLOP/s at min / median / max: {s['gflops_at_min']:.1f} / {s['gflops_at_median']:.1f} / "
             f"{s['gflops_at_max']:.1f}"]
    modes = s["modes"]
    if len(modes) == 1:
        lines.append(f"modes: 1 (no jump above {s['mode_gap']:.2f}x between neighbouring values): "
                     f"no bimodality seen in {s['processes']} processes")
    else:
        parts = [f"{_fmt_ms(m['median'])} ms x{m['count']} ({_fmt_ms(m['low'])}-{_fmt_ms(m['high'])})" for m in modes]
        lines.append(f"modes: {len(modes)} (split where neighbouring values jump more than {s['mode_gap']:.2f}x): "
                     + ", ".join(parts))
        lines.append(f"  slowest mode / fastest mode: {modes[-1]['median'] / modes[0]['median']:.1f}x"
                     + ("; a mode of one process may be an interruption, not a property of the kernel"
                        if any(m["count"] == 1 for m in modes) else ""))
    if s["within_process_spread_median"] is not None:
        lines.append(f"inside one process (max/min of its {s['best_of']} samples): median "
                     f"{s['within_process_spread_median']:.2f}x, worst {s['within_process_spread_max']:.2f}x")
    return "\n".join(lines)


def cmd_bench_processes(args, backend: str, baseline: Optional[str]) -> int:
    """`fastgemm bench --processes N`: the named kernels (default: the baseline) in N fresh processes."""
    from . import report
    from .cli import _progress

    if args.sizes and len(args.sizes) > 1:
        raise FastgemmError("--processes measures one problem: give --size or --shape, not --sizes")
    if args.kernels:
        names = [n.strip() for n in args.kernels.split(",") if n.strip()]
    elif baseline:
        names = [baseline]
    else:
        raise FastgemmError(f"backend {backend} has no baseline: name kernels with --kernels")
    known = {k.name for k in _fastgemm.kernels(backend)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise FastgemmError(f"unknown kernel(s) for backend {backend}: {', '.join(unknown)}")
    if args.sizes:
        shape = (args.sizes[0],) * 3
    else:
        shape = args.shape if args.shape else (args.size, args.size, args.size)
    M, N, K = shape
    flops = 2.0 * M * N * K
    st = {b.name: b for b in _fastgemm.backends()}[backend]
    threads = args.threads or _fastgemm.get_num_threads()
    print(f"fastgemm {_fastgemm.__version__} bench --processes {args.processes} · backend {backend} · {st.device} · "
          f"{M}x{N}x{K} · threads {threads}")
    print(f"each process: {args.warmup} warm-up, best of {args.iters} timed iterations (device time); processes "
          f"run one after another; verified in the first process")
    results = {}
    for name in names:
        recs = measure_in_processes(backend, name, shape, args.processes, warmup=args.warmup, iters=args.iters,
                                    seed=args.seed, threads=args.threads, progress=_progress)
        s = summarize(recs, flops)
        results[name] = {"summary": s, "processes": recs}
        print()
        print(f"[{name}]")
        print(report_text(name, s, recs))
    if args.json:
        doc = {"machine": report.machine_record(backend), "mode": "processes", "backend": backend,
               "shape": [M, N, K], "warmup": args.warmup, "iters": args.iters, "processes": args.processes,
               "kernels": results}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.csv or args.plot:
        print("note: --csv and --plot are not written with --processes (use --json: it has every sample)")
    return 0


def add_run_once_parser(sub) -> None:
    """The hidden `_run-once` subcommand: one measurement, one JSON line on stdout."""
    from .cli import parse_shape, positive_int

    r = sub.add_parser("_run-once")
    r.add_argument("--backend", required=True)
    r.add_argument("--kernel", required=True)
    g = r.add_mutually_exclusive_group()
    g.add_argument("--size", type=positive_int, default=512)
    g.add_argument("--shape", type=parse_shape)
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--iters", type=positive_int, default=5)
    r.add_argument("--threads", type=positive_int)
    r.add_argument("--seed", type=lambda s: int(s, 0), default=0x5EED)
    r.add_argument("--no-verify", action="store_true")
    r.set_defaults(func=cmd_run_once)

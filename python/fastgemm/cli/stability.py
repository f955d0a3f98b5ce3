"""`fastgemm bench --processes N`: the named kernels (default: the baseline) measured in N
fresh processes, one after another (the child-run protocol of cli.child), and the
distribution of their per-process best times (fastgemm.stability)."""

from __future__ import annotations

import subprocess
from typing import List, Optional, Sequence

from .. import _fastgemm, report, stability
from ..errors import FastgemmError
from . import child
from .common import UsageError, check_fits_in_memory, check_output_file, progress, shape_of, split_names


def measure_in_processes(backend: str, kernel: str, shape: Sequence[int], processes: int, *, warmup: int,
                         iters: int, seed: int = 0x5EED, threads: Optional[int] = None,
                         verify: str = "first") -> List[dict]:
    """Runs the measurement in `processes` fresh processes, one after another.

    verify: "first" verifies in the first process only (the result does not change between
    processes; the reference costs time), "all" in every one, "none" never.
    """
    out = []
    M, N, K = shape
    for i in progress(range(processes), f"{kernel} {M}x{N}x{K}",
                      label=lambda i: f"process {i + 1} of {processes}"):
        do_verify = verify == "all" or (verify == "first" and i == 0)
        cmd = child.command(backend, kernel, shape, warmup=warmup, iters=iters, verify=do_verify, seed=seed,
                            threads=threads)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode not in (0, 1):
            raise FastgemmError(f"process {i + 1} of {processes} failed (exit {proc.returncode}): "
                                f"{proc.stderr.strip()[-500:]}")
        rec = child.parse_output(proc.stdout)
        if rec["passed"] is False:
            raise FastgemmError(f"{kernel} FAILED verification in process {i + 1} (rel err {rec['rel_err']:.2e})")
        rec["index"] = i
        rec["best_s"] = min(rec["device_s"])
        out.append(rec)
    return out


def run_processes(args, backend: str, baseline: Optional[str]) -> int:
    """The --processes form of `fastgemm bench` (arguments checked before any process starts)."""
    if args.sizes and len(args.sizes) > 1:
        raise UsageError("--processes measures one problem: give --size or --shape, not --sizes")
    if args.csv or args.plot:
        raise UsageError("--processes writes no --csv or --plot (use --json: it has every sample)")
    if args.kernels:
        names = split_names(args.kernels)
    elif baseline:
        names = [baseline]
    else:
        raise UsageError(f"backend {backend} has no baseline: name kernels with --kernels")
    known = {k.name: k for k in _fastgemm.kernels(backend)}
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise UsageError(f"unknown kernel(s) for backend {backend}: {', '.join(unknown) or '(none named)'}")
    shape = (args.sizes[0],) * 3 if args.sizes else shape_of(args)
    M, N, K = shape
    check_fits_in_memory([shape])
    check_output_file(args.json, "--json")
    broken = [n for n in names if not known[n].accepts(M, N, K)]
    if broken:
        raise UsageError(f"{M}x{N}x{K} breaks the constraints of {', '.join(broken)}")
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
                                    seed=args.seed, threads=args.threads)
        s = stability.summarize(recs, flops)
        results[name] = {"summary": s, "processes": recs}
        print()
        print(f"[{name}]")
        print(stability.report_text(name, s, recs))
    if args.json:
        doc = {"machine": report.machine_record(backend), "mode": "processes", "backend": backend,
               "shape": [M, N, K], "warmup": args.warmup, "iters": args.iters, "processes": args.processes,
               "kernels": results}
        report.write_json_document(args.json, doc)
        print(f"results written to {args.json}")
    return 0

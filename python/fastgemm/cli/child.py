"""The child-run protocol: one kernel, one problem, one fresh process.

`python -m fastgemm _run-once --backend B --kernel K --shape MxNxK ...` verifies
(optionally), warms up and times one kernel, then prints exactly one line

    FASTGEMM_RUN_ONCE {"kernel": ..., "device_s": [...], ...}

on stdout (exit code 1 when verification failed). `bench --processes` runs it in N fresh
processes (cli.stability) and `profile` runs it under a profiler (cli.profile). The
subcommand is hidden from the top-level help: it is an interface between fastgemm
processes, not one for people.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import List, Optional, Sequence

from .. import _fastgemm
from ..errors import FastgemmError
from .common import add_problem_options, iteration_count, seed, shape_of, thread_count, warmup_count

RESULT_PREFIX = "FASTGEMM_RUN_ONCE "
COMMAND = "_run-once"


def run_once(backend: str, kernel: str, shape: Sequence[int], *, warmup: int = 1, iters: int = 5,
             verify: bool = True, seed: int = 0x5EED, threads: Optional[int] = None) -> dict:
    """Verifies (optionally), warms up and times one kernel in this process."""
    if threads:
        _fastgemm.set_num_threads(threads)
    M, N, K = (int(d) for d in shape)
    t0 = time.perf_counter()
    bench = _fastgemm.Bench(M, N, K, False, False, 1.0, 0.0, seed)
    r = _fastgemm.benchmark(bench, backend, kernel, "", warmup, iters, verify, 0.0)
    v = r.verification
    return {
        "pid": os.getpid(), "backend": r.backend, "kernel": r.kernel, "M": M, "N": N, "K": K,
        "threads": r.threads, "warmup": warmup, "iters": iters,
        "device_s": list(r.device_s), "host_s": list(r.host_s),
        "verified": bool(r.verified), "passed": bool(v.passed) if r.verified else None,
        "rel_err": float(v.rel_err) if r.verified else None,
        "wall_s": time.perf_counter() - t0,
    }


def command(backend: str, kernel: str, shape: Sequence[int], *, warmup: int, iters: int, verify: bool = True,
            seed: int = 0x5EED, threads: Optional[int] = None) -> List[str]:
    """argv of a fresh process that runs one measurement (for subprocess, or under a profiler)."""
    cmd = [sys.executable, "-m", "fastgemm", COMMAND, "--backend", backend, "--kernel", kernel,
           "--shape", "x".join(str(int(d)) for d in shape), "--warmup", str(warmup), "--iters", str(iters),
           "--seed", hex(seed)]
    if threads:
        cmd += ["--threads", str(threads)]
    if not verify:
        cmd.append("--no-verify")
    return cmd


def parse_output(stdout: str) -> dict:
    """The record from a child's stdout (the last result line)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    raise FastgemmError("the child process printed no result line")


def run(args) -> int:
    rec = run_once(args.backend, args.kernel, shape_of(args), warmup=args.warmup, iters=args.iters,
                   verify=not args.no_verify, seed=args.seed, threads=args.threads)
    sys.stdout.write(RESULT_PREFIX + json.dumps(rec) + "\n")
    sys.stdout.flush()
    return 0 if rec["passed"] is not False else 1


def add_parser(sub) -> None:
    """Registers the hidden subcommand (no help= keeps it out of the command list)."""
    r = sub.add_parser(COMMAND, description="one measurement in this process, one JSON line on stdout "
                                            "(the child of bench --processes and of profile)")
    r.add_argument("--backend", required=True, help="the backend that has the kernel")
    r.add_argument("--kernel", required=True, help="kernel name")
    add_problem_options(r)
    r.add_argument("--warmup", type=warmup_count, default=1, help="untimed iterations (default: %(default)s)")
    r.add_argument("--iters", type=iteration_count, default=5, help="timed iterations (default: %(default)s)")
    r.add_argument("--threads", type=thread_count, help="CPU threads (default: all usable cores)")
    r.add_argument("--seed", type=seed, default=0x5EED, help="seed of the random inputs (default: 0x5eed)")
    r.add_argument("--no-verify", action="store_true", help="skip the verification run")
    r.set_defaults(func=run)

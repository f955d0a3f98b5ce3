"""One problem, a list of kernels, one baseline: the measurement behind bench, sweep and
roofline. It is a thin loop over the core's BaselineComparison, the same path that
fastgemm.benchmark and the C++ Context::benchmark take (docs/measurement.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from .. import _fastgemm, api
from .common import Shape, describe_rejected, preparing, progress, runnable

# Tests replace these: a scripted clock (kernel name, measured seconds) -> seconds, the
# pause after each baseline run (None: the core's default), and whether the machine's
# other runnable threads are counted (a scripted clock must not depend on them).
clock = None
settle_seconds: Optional[float] = None
watch_contention = True


@dataclass
class LadderRun:
    results: List[api.BenchResult]  # the baseline first, when there is one
    baseline: Optional[api.BenchResult]
    reference_rows: int
    skipped: List[str] = field(default_factory=list)  # above their size cap
    rejected: List[str] = field(default_factory=list)  # "name (constraint)" for the shape's breakers


def policy(spread_limit: float = 0.10):
    kwargs = {"spread_limit": spread_limit, "drift_limit": spread_limit, "watch_contention": watch_contention}
    if settle_seconds is not None:
        kwargs["settle_seconds"] = settle_seconds
    return _fastgemm.MeasurementPolicy(**kwargs)


def measurement_record(spread_limit: float) -> dict:
    """How the rows were measured, for the JSON next to them."""
    p = policy(spread_limit)
    return {"spread": "interquartile range / median of the timed device times",
            "spread_limit": p.spread_limit, "drift_limit": p.drift_limit, "check_iters": p.check_iters,
            "interleaved_rounds": p.interleaved_rounds,
            "settle_seconds": "default" if p.settle_seconds < 0 else p.settle_seconds,
            "watch_contention": p.watch_contention,
            "rules": "docs/measurement.md"}


def run_ladder(backend: str, shape: Shape, kernels, baseline: Optional[str], args,
               progress_label: Optional[str] = None) -> LadderRun:
    """Verify and time the baseline, then each kernel, on one Bench (same inputs)."""
    M, N, K = shape
    to_run, rejected, capped = runnable(kernels, shape, getattr(args, "all", False))
    with preparing(M, N, K):
        bench = _fastgemm.Bench(M, N, K, False, False, 1.0, 0.0, args.seed)
    comparison = _fastgemm.BaselineComparison(bench, backend, baseline or "", args.warmup, args.iters, True,
                                              args.max_seconds, policy(args.spread_limit), clock)
    base = None
    results: List[api.BenchResult] = []
    if comparison.baseline is not None:
        base = api.BenchResult.from_timings(comparison.baseline)
        results.append(base)
    for info in progress(to_run, progress_label or f"{backend} {M}x{N}x{K}",
                         label=lambda i: f"{i.name} {M}x{N}x{K}"):
        t = comparison.measure(backend, info.name)
        results.append(api.BenchResult.from_timings(t, base))
    return LadderRun(results, base, len(bench.reference_rows), [i.name for i in capped],
                     [describe_rejected([i]) for i in rejected])

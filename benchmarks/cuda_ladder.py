"""Build check, verify and time the whole cuda ladder and both cuBLAS baselines in one run.

Assumes the package is installed (``pip install --no-build-isolation .`` in the same
command on the GPU machine). Every kernel runs on the same random inputs (one native
Bench per size), is verified against the float64 reference, then timed with CUDA events
(median of the timed iterations after warm-up). Prints one table per size:

    python benchmarks/cuda_ladder.py [--sizes 4096,8192] [--iters 20] [--rounds 3] [--settle-ms 0]
                                     [--json out.json]

Ratios are cuBLAS SGEMM time / kernel time (> 1 is faster than cublas), and for tf32
kernels also against cublas_tf32, from this one run. A last table checks the backend's
targets (cuda_targets.py) on this run's rows when it timed 4096^3 or 8192^3.

Rounds: the whole kernel list is timed --rounds times in turn, and a kernel's device
time is the median of its per-round medians. On the H200 a GPU that has been busy for a
few seconds runs tensor-core kernels up to ~10% slower (power and clocks), so a single
pass in ladder order timed the baselines cool and the last rungs warm; interleaving puts
every kernel, baselines included, through the same conditions. Each round after the
first takes the list in a different stride (round_order), so that no kernel always
follows the same one: in steady state on the H200 the kernel timed right after cuBLAS
SGEMM ran 1-2% slower than an identical kernel timed after it. The spread column is
(slowest - fastest round) / median.

Clocks: the SM MHz and W columns are nvidia-smi's samples (every 50 ms, instantaneous
board power where the driver reports it; gpu_telemetry.py) averaged over each kernel's
timed launches (blank when they were too short to be sampled; after --settle-ms, the
settling run's last 250 ms count too). With
--settle-ms T every kernel's warm-up runs for T ms (instead of --warmup launches), so
that it is timed at the clock its own power draw settles at rather than the one its
predecessor left (at the H200's 700 W limit, TF32 kernels settle ~20% below the
1980 MHz of a short burst).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import fastgemm
from fastgemm import _fastgemm

import cuda_targets
from gpu_telemetry import ClockSampler

# The clock window of a kernel: its timed launches, and after --settle-ms the settling
# run's last 250 ms too (the same kernel in the same power state). Without settling,
# what precedes the timed launches is mostly verification with the GPU idle, so a span
# shorter than the 50 ms sampling period often gets no sample and a blank cell.
SETTLE_TAIL_S = 0.25


def round_order(todo: list, rnd: int) -> list:
    """The kernel list for round `rnd`: every kernel once, taken with a stride coprime
    to the list's length (1 in round 0, i.e. ladder order with the baselines first; then
    the next strides in turn), so that from round to round each kernel follows a
    different one. (Rotating the list would keep every kernel's predecessor.)"""
    n = len(todo)
    strides = [m for m in range(1, n) if math.gcd(m, n) == 1] or [1]
    m = strides[rnd % len(strides)]
    return [todo[i * m % n] for i in range(n)]


def _nvidia_smi(fields: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - informational only
        return f"unavailable ({e})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096", help="comma-separated square sizes")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved passes over the kernel list")
    ap.add_argument("--max-seconds", type=float, default=2.0, help="time cap per kernel (at least 3 iterations)")
    ap.add_argument("--settle-ms", type=float, default=0.0,
                    help="run each kernel untimed this long before timing it (steady power state)")
    ap.add_argument("--kernels", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--skip-slow", action="store_true", help="skip kernels over their bench FLOP cap")
    ap.add_argument("--json", default="", help="write every result here")
    args = ap.parse_args(argv)
    started = time.perf_counter()

    status = next(b for b in fastgemm.backends() if b.name == "cuda")
    if not status.available:
        print(f"cuda backend unavailable: {status.reason}")
        return 2
    props = dict(status.properties)
    print(f"# GPU: {status.device}; {props}")
    print(f"# nvidia-smi: {_nvidia_smi('name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu')}")
    print(f"# commit: {os.environ.get('FASTGEMM_COMMIT', 'unknown')}; fastgemm {fastgemm.__version__}")
    clocks = ClockSampler(props.get("pci bus id", "")).start()
    if clocks.why_not:
        print(f"# clocks not sampled: {clocks.why_not}")
    else:
        print(f"# clocks: nvidia-smi clocks.sm and {clocks.power_field} every {clocks.period_ms} ms")
    wanted = [k for k in args.kernels.split(",") if k]
    kernels = [k for k in fastgemm.kernels("cuda") if not wanted or k.name in wanted]
    # cuBLAS first: every ratio needs it.
    kernels.sort(key=lambda k: (k.name != "cublas", k.name != "cublas_tf32", k.ladder_step))
    results = []
    for S in [int(s) for s in args.sizes.split(",") if s]:
        flops = 2.0 * S ** 3
        bench = _fastgemm.Bench(S, S, S, False, False, 1.0, 0.0, 0x5EED)
        rows, base = [], {}
        todo = [k for k in kernels if k.accepts(S, S, S) and not (args.skip_slow and flops > k.bench_flops_cap)]
        runs = {k.name: [] for k in todo}
        errors = {}
        for rnd in range(max(1, args.rounds)):
            for k in round_order(todo, rnd):
                if k.name in errors:
                    continue
                t0 = time.perf_counter()
                warmup, max_seconds = args.warmup, args.max_seconds
                if args.settle_ms > 0:  # warm-up stops at half of max_seconds (native runner)
                    warmup, max_seconds = 1 << 30, 2 * args.settle_ms / 1e3
                try:
                    r = fastgemm.benchmark(k.name, S, backend="cuda", warmup=warmup, iters=args.iters,
                                           max_seconds=max_seconds, bench=bench)
                    done = time.time()
                    timed_span = len(r.device_times) * r.host_median
                    before = SETTLE_TAIL_S if args.settle_ms > 0 else 0.0
                    clock = clocks.window(done - timed_span - before, done)
                except Exception as e:  # noqa: BLE001 - report and keep going: one table per run
                    print(f"  {k.name}: ERROR {type(e).__name__}: {e}", flush=True)
                    errors[k.name] = str(e)
                    continue
                runs[k.name].append((r, time.perf_counter() - t0, clock))
                at = f" at {clock[0]:.0f} MHz {clock[1]:.0f} W" if clock else ""
                print(f"  round {rnd} {k.name:28s} {r.device_median * 1e3:9.3f} ms rel {r.rel_err:.2e} "
                      f"{'ok' if r.passed else 'FAIL'}{at}", flush=True)
        for k in todo:
            if k.name in errors:
                rows.append(dict(kernel=k.name, size=S, error=errors[k.name]))
                continue
            rs = [r for r, _, _ in runs[k.name]]
            sampled = [c for _, _, c in runs[k.name] if c]
            meds = sorted(r.device_median * 1e3 for r in rs)
            ms = statistics.median(meds)
            if k.name in ("cublas", "cublas_tf32"):
                base[k.name] = ms
            row = dict(kernel=k.name, step=k.ladder_step, precision=k.precision, size=S, device_ms=ms,
                       host_ms=statistics.median(r.host_median * 1e3 for r in rs),
                       min_ms=min(r.device_min * 1e3 for r in rs), round_ms=meds,
                       spread=(meds[-1] - meds[0]) / ms, tflops=flops / ms * 1e-9,
                       rel_err=max(r.rel_err for r in rs), tolerance=rs[0].tolerance,
                       passed=all(r.passed for r in rs), iters=sum(len(r.device_times) for r in rs),
                       wall_s=sum(w for _, w, _ in runs[k.name]),
                       sm_mhz=statistics.mean(c[0] for c in sampled) if sampled else None,
                       power_w=statistics.mean(c[1] for c in sampled) if sampled else None)
            rows.append(row)
        for row in rows:
            if "error" not in row:
                row["x_cublas"] = base["cublas"] / row["device_ms"] if "cublas" in base else None
                row["x_cublas_tf32"] = base["cublas_tf32"] / row["device_ms"] if "cublas_tf32" in base else None
        results.extend(rows)
        settle = f", each after {args.settle_ms:.0f} ms untimed" if args.settle_ms > 0 else ""
        print(f"\n## {S}^3, {status.device} (device time: median over {args.rounds} interleaved rounds of the "
              f"median of up to {args.iters} CUDA-event timings after {args.warmup} warm-ups{settle}; "
              f"ratios from this run)\n")
        print("| kernel | step | precision | device ms | spread | host ms | TFLOP/s | rel err | tolerance | verified "
              "| x cublas | x cublas_tf32 | SM MHz | W |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "error" in r:
                print(f"| {r['kernel']} | | | | | | | | | ERROR: {r['error'][:60]} | | | | |")
                continue
            mhz = f"{r['sm_mhz']:.0f}" if r["sm_mhz"] else ""
            watts = f"{r['power_w']:.0f}" if r["power_w"] else ""
            xt = f"{r['x_cublas_tf32']:.3f}" if r["x_cublas_tf32"] and r["precision"] == "tf32" else ""
            print(f"| {r['kernel']} | {r['step']} | {r['precision']} | {r['device_ms']:.3f} | {100 * r['spread']:.1f}% "
                  f"| {r['host_ms']:.3f} "
                  f"| {r['tflops']:.2f} | {r['rel_err']:.2e} | {r['tolerance']:.1e} "
                  f"| {'yes' if r['passed'] else 'NO'} | {r['x_cublas'] or 0:.3f} | {xt} | {mhz} | {watts} |")
        print(flush=True)
    clocks.stop()
    wall_s = time.perf_counter() - started
    verdicts = cuda_targets.check(results, [k.name for k in fastgemm.kernels("cuda")], wall_s)
    if any(r["size"] in cuda_targets.SIZES for r in results):
        print(f"## Targets (issue 6, set on the H200), from this run on {status.device}\n")
        print(cuda_targets.markdown(verdicts), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=status.device, properties=props, results=results, wall_s=wall_s,
                           targets=[vars(v) for v in verdicts]), f, indent=1)
    return 0 if all(r.get("passed", False) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""`fastgemm roofline`: the ladder placed on this machine's measured roofline (compute
and memory roofs from the probes, each kernel at its no-cache intensity)."""

from __future__ import annotations

from .. import _fastgemm, profile, report, roofline
from ..errors import FastgemmError
from .common import (UsageError, add_backend_option, add_baseline_option, add_problem_options, add_timing_options,
                     apply_threads, baseline_for, check_fits_in_memory, check_output_file, check_plot_file, description,
                     load_warning, read_input_file, resolve_backend, runnable, select_kernels, shape_of, warn)
from .ladder import measurement_record, run_ladder


def add_parser(sub) -> None:
    r = sub.add_parser("roofline", help="place the ladder on this machine's measured roofline",
                       description=description(__doc__))
    add_backend_option(r)
    add_problem_options(r)
    r.add_argument("--kernels", help="comma-separated kernel names (default: the whole ladder)")
    add_baseline_option(r)
    add_timing_options(r)
    r.add_argument("--all", action="store_true", help="also run rungs above their size cap")
    r.add_argument("--measured", action="append",
                   help="profiler measurements to add as points (a `fastgemm profile --json` file; repeatable)")
    r.add_argument("--plot", help="write the roofline chart (needs matplotlib)")
    r.add_argument("--json", help="write the ceilings and every point (model and measured) to this JSON file")
    r.set_defaults(func=run)


def load_measured(paths):
    """(kernel, flop_per_byte, gflops) from every --measured file, checked before any work."""
    points = []
    for path in paths or []:
        text = read_input_file(path, "--measured")
        try:
            records = profile.parse_measurements(text, path)
        except FastgemmError as e:
            raise UsageError(f"--measured {e}") from None
        points.extend((rec["kernel"], rec["flop_per_byte"], rec["gflops"]) for rec in records)
    return points


def run(args) -> int:
    apply_threads(args.threads)
    backend = resolve_backend(args.backend)
    baseline = baseline_for(backend, args.baseline)
    kernels = select_kernels(backend, args.kernels, baseline)
    shape = shape_of(args)
    M, N, K = shape
    check_fits_in_memory([shape])
    check_output_file(args.json, "--json")
    check_plot_file(args.plot)
    measured = load_measured(args.measured)
    to_run, _, _ = runnable(kernels, shape, args.all)
    if not to_run:
        raise UsageError(f"no kernel runs at {M}x{N}x{K} (constraints or size caps; --all runs capped ones)")
    busy = load_warning()
    if busy:
        warn(busy)
    c = roofline.cached_ceilings(backend)
    if c is None:
        raise UsageError(f"backend {backend} has no roofline probes (its times are not performance numbers)"
                         if backend == "metal-emu" else f"backend {backend} reports no measured ceilings")
    ladder = run_ladder(backend, shape, kernels, baseline, args)
    infos = {k.name: k for k in _fastgemm.kernels(backend)}
    print(f"fastgemm roofline · {backend} · {M}x{N}x{K}")
    print(f"  compute roof   {c.peak_gflops:10,.1f} GFLOP/s  ({c.peak_probe})")
    print(f"  memory roof    {c.bandwidth_gbs:10,.1f} GB/s      ({c.bandwidth_probe})")
    print(f"  ridge point    {roofline.ridge(c):10,.2f} FLOP/byte")
    print()
    print(f"{'kernel':<26} {'GFLOP/s':>10} {'spread':>7} {'FLOP/byte':>10} {'MB (model)':>11} {'roof':>10} "
          f"{'% of roof':>9} {'bound':>8}")
    points, baselines, matrix_unit, rows = [], [], [], []
    over_roof = []
    for r in ladder.results:
        info = infos[r.kernel]
        row = {"kernel": r.kernel, "gflops": r.gflops, "device_spread": r.device_spread, "flags": r.flags,
               "precision": r.precision}
        spread = f"{100 * r.device_spread:6.1f}%"
        if info.baseline:
            # A vendor kernel's tiles are unknown: no model intensity, a reference line instead.
            print(f"{r.kernel:<26} {r.gflops:10.2f} {spread} {'-':>10} {'-':>11} {'-':>10} {'-':>9} {'vendor':>8}")
            baselines.append((r.kernel, r.gflops))
            rows.append(dict(row, bound="vendor"))
            continue
        model = roofline.no_cache_intensity(info, M, N, K)
        x = model.flop_per_byte
        points.append((r.kernel, x, r.gflops))
        row.update(flop_per_byte=x, model_bytes=model.bytes)
        if info.precision != "fp32":
            # Matrix units with relaxed inputs: the FP32 FFMA roof does not bound them.
            matrix_unit.append(r.kernel)
            print(f"{r.kernel:<26} {r.gflops:10.2f} {spread} {x:10.3f} {model.bytes / 1e6:11.1f} {'-':>10} {'-':>9} "
                  f"{'matrix':>8}")
            rows.append(dict(row, bound="matrix"))
            continue
        top = roofline.roof(c, x)
        bound = "memory" if x < roofline.ridge(c) else "compute"
        pct = 100 * r.gflops / top
        if r.gflops > c.peak_gflops:
            over_roof.append(r.kernel)
        print(f"{r.kernel:<26} {r.gflops:10.2f} {spread} {x:10.3f} {model.bytes / 1e6:11.1f} {top:10.1f} "
              f"{pct:8.1f}% {bound:>8}  {', '.join(r.flags)}".rstrip())
        rows.append(dict(row, roof=top, pct_of_roof=pct, bound=bound))
    if ladder.skipped:
        print(f"note: skipped above their size cap: {', '.join(ladder.skipped)} (--all runs them)")
    if ladder.rejected:
        print(f"note: not run, the shape breaks their constraints: {'; '.join(ladder.rejected)}")
    print("note: FLOP/byte is the no-cache model (every tile load reaches memory); points above their "
          "memory roof show cache reuse the model does not count; 'matrix' rungs run on matrix units with "
          "relaxed (tf32) inputs, above the FP32 roof by design")
    if over_roof:
        print(f"note: PROBE PROBLEM: {', '.join(over_roof)} ran faster than the measured FP32 peak "
              f"({c.peak_gflops:,.1f} GFLOP/s): the probe under-measured this machine")
    if busy:
        print(f"note: {busy}")
    if args.plot:
        roofline.plot_roofline(args.plot, c, points, measured_points=measured, baselines=baselines,
                               matrix_unit=matrix_unit,
                               title=f"fastgemm roofline, {backend}, {M}x{N}x{K}, "
                                     f"{ {b.name: b for b in _fastgemm.backends()}[backend].device}")
        print(f"chart written to {args.plot}")
    if args.json:
        report.write_json(args.json, ladder.results, backend, {
            "command": "roofline", "shape": [M, N, K], "ceilings": c.to_dict(), "ridge": roofline.ridge(c),
            "points": rows, "measured": [{"kernel": k, "flop_per_byte": x, "gflops": g} for k, x, g in measured],
            "peak_problem": over_roof, "measurement": measurement_record(args.spread_limit)})
        print(f"results written to {args.json}")
    return 1 if any(r.verified and not r.passed for r in ladder.results) else 0

"""`fastgemm sweep`: every kernel of a family (a name prefix) on one problem, as a table
and, when two parameters vary (tile x BK), as a grid of GFLOP/s."""

from __future__ import annotations

from .. import _fastgemm, plots, report
from .common import (UsageError, add_backend_option, add_baseline_option, add_problem_options, add_timing_options,
                     apply_threads, baseline_for, check_fits_in_memory, check_output_file, check_plot_file,
                     describe_rejected, description, load_warning, resolve_backend, runnable, shape_of, warn)
from .ladder import measurement_record, run_ladder


def add_parser(sub) -> None:
    s = sub.add_parser("sweep", help="sweep a kernel family's parameters (tile sizes, tile x BK)",
                       description=description(__doc__))
    s.add_argument("--family", required=True, help="kernel name prefix, e.g. tiled_ikj or tensorops_sync")
    add_backend_option(s)
    add_problem_options(s)
    add_baseline_option(s)
    add_timing_options(s)
    s.add_argument("--plot", help="write a chart of GFLOP/s against the varying parameter (needs matplotlib)")
    s.add_argument("--json", help="write every sample, the flags, the machine and the build to this JSON file")
    s.set_defaults(func=run)


def _families(backend: str):
    """Name prefixes that more than one kernel shares (what --family can name)."""
    prefixes = {}
    for k in _fastgemm.kernels(backend):
        if k.baseline:
            continue
        stem = k.name.rsplit("_", 1)[0] if "_" in k.name else k.name
        prefixes[stem] = prefixes.get(stem, 0) + 1
    return sorted(p for p, n in prefixes.items() if n > 1)


def run(args) -> int:
    apply_threads(args.threads)
    backend = resolve_backend(args.backend)
    family = [k for k in _fastgemm.kernels(backend) if k.name.startswith(args.family) and not k.baseline]
    if not family or not args.family.strip():
        known = _families(backend)
        why = (f"no kernels of backend {backend} start with '{args.family}'" if args.family.strip()
               else "--family must name a kernel name prefix")
        raise UsageError(why + (f"; families here: {', '.join(known)}" if known else ""))
    shape = shape_of(args)
    baseline = baseline_for(backend, args.baseline)
    check_fits_in_memory([shape])
    check_output_file(args.json, "--json")
    check_plot_file(args.plot)
    to_run, rejected, _ = runnable(family, shape, True)
    M, N, K = shape
    if not to_run:
        raise UsageError(f"no kernel of family {args.family} accepts {M}x{N}x{K}: {describe_rejected(rejected)}")
    varying = [key for key in sorted({k for info in to_run for k in info.params})
               if len({info.params.get(key) for info in to_run}) > 1]
    # The grid and the chart place the kernels that carry every varying parameter; one
    # without some of them (ikj beside ikj@O2) is in the table only.
    placed = [info for info in to_run if all(key in info.params for key in varying)]
    if args.plot and not (varying and placed):
        raise UsageError(f"--plot: nothing to chart, no parameter varies across the {args.family} kernels that run "
                         f"at {M}x{N}x{K}")
    busy = load_warning()
    if busy:
        warn(busy)
    args.all = True
    ladder = run_ladder(backend, shape, to_run, baseline, args)
    results, base = ladder.results, ladder.baseline
    notes = []
    if rejected:
        notes.append(f"not run, {M}x{N}x{K} breaks their constraints: {describe_rejected(rejected)}")
    if busy:
        notes.append(busy)
    print(f"fastgemm sweep · {backend} · family {args.family} · {M}x{N}x{K} · "
          f"varying {', '.join(varying) or 'nothing'}")
    print()
    print(report.table(results, base, time_label=f"device time, median and min of {args.iters} (native clock)",
                       notes=notes, spread_limit=args.spread_limit))
    by_name = {r.kernel: r for r in results}
    if len(varying) == 2:
        a, b = varying
        cols = sorted({info.params[b] for info in placed})
        print(f"\nGFLOP/s, {a} (rows) x {b} (columns)")
        print(f"{a:>8} " + " ".join(f"{c:>9}" for c in cols))
        for av in sorted({info.params[a] for info in placed}):
            row = []
            for c in cols:
                info = next((i for i in placed if i.params[a] == av and i.params[b] == c), None)
                row.append(f"{by_name[info.name].gflops:9.1f}" if info and info.name in by_name else f"{'-':>9}")
            print(f"{av:>8} " + " ".join(row))
    if args.plot:
        series: dict = {}
        x = varying[-1]
        for info in placed:
            label = args.family if len(varying) == 1 else f"{varying[0]}={info.params[varying[0]]}"
            series.setdefault(label, []).append((info.params[x], by_name[info.name].gflops))
        if base is not None:
            xs = sorted({info.params[x] for info in placed})
            series[base.kernel] = [(v, base.gflops) for v in xs]
        plots.plot_sweep(args.plot, series, xlabel=x, baseline_series=base.kernel if base else None,
                         title=f"fastgemm sweep {args.family} on {backend}, {M}x{N}x{K}")
        print(f"chart written to {args.plot}")
    if args.json:
        report.write_json(args.json, results, backend, {
            "command": "sweep", "family": args.family, "varying": varying, "shape": [M, N, K],
            "measurement": measurement_record(args.spread_limit), "notes": notes})
        print(f"results written to {args.json}")
    return 1 if any(r.verified and not r.passed for r in results) else 0

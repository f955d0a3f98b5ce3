"""`fastgemm bench`: the whole ladder of a backend against its vendor baseline.

Every kernel is verified against a float64 reference, then timed natively beside the
baseline on the same inputs (cli.ladder). The table gives the median, min and spread of
each row and flags the rows that were re-measured or could not be measured. Every
argument, output path and optional dependency is checked before the first kernel runs.
"""

from __future__ import annotations

from typing import List

from .. import _fastgemm, plots, report, roofline
from . import stability
from .common import (UsageError, add_backend_option, add_baseline_option, add_problem_options, add_timing_options,
                     apply_threads, baseline_for, check_fits_in_memory, check_output_file, check_plot_file,
                     describe_rejected, description, load_warning, machine_load, parse_sizes, positive_int,
                     resolve_backend, runnable, select_kernels, shape_of, warn)
from .ladder import measurement_record, run_ladder


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="verify and time the ladder against the vendor baseline",
                       description=description(__doc__))
    add_backend_option(b)
    add_problem_options(b)
    b.add_argument("--sizes", type=parse_sizes,
                   help="sweep square sizes instead: 256,512,1024 or 256:4096 (powers of two) or 256:2048:256")
    b.add_argument("--kernels", help="comma-separated kernel names (default: the whole ladder, without the "
                                     "'@' experiments)")
    add_baseline_option(b)
    add_timing_options(b)
    b.add_argument("--all", action="store_true", help="also run rungs above their size cap (slow teaching loops)")
    b.add_argument("--csv", help="write one row per kernel and size to this CSV file")
    b.add_argument("--json", help="write every sample, the flags, the machine and the build to this JSON file")
    b.add_argument("--plot", help="write a chart: ladder bars, or GFLOP/s against size with --sizes (needs "
                                  "matplotlib)")
    b.add_argument("--no-peak", action="store_true", help="skip the FMA/bandwidth probes (no %% peak column)")
    b.add_argument("--processes", type=positive_int,
                   help="run the named kernels (default: the baseline) in N fresh processes, best of --iters in "
                        "each, and print the distribution (run-to-run stability)")
    b.set_defaults(func=run)


def _notes_for(backend: str, args, kernels_named: bool) -> List[str]:
    notes = []
    if backend == "metal-emu":
        notes.append("metal-emu runs Metal shaders on the CPU to check them: its times are NOT performance numbers")
    if not kernels_named and any("@" in k.name for k in _fastgemm.kernels(backend)):
        notes.append("experiments (names with '@': the -O ladder ikj@O0 ... transposed_b_split4@O3fm) are not in "
                     "the default list; name them with --kernels")
    return notes


def run(args) -> int:
    apply_threads(args.threads)
    backend = resolve_backend(args.backend)
    baseline = baseline_for(backend, args.baseline)
    if args.processes:  # run-to-run stability across fresh processes
        return stability.run_processes(args, backend, baseline)
    kernels = select_kernels(backend, args.kernels, baseline)
    shapes = [(n, n, n) for n in args.sizes] if args.sizes else [shape_of(args)]
    check_fits_in_memory(shapes)
    check_output_file(args.csv, "--csv")
    check_output_file(args.json, "--json")
    check_plot_file(args.plot)
    for shape in shapes:
        to_run, rejected, capped = runnable(kernels, shape, args.all)
        if not to_run:
            why = []
            if rejected:
                why.append(f"their constraints reject it: {describe_rejected(rejected)}")
            if capped:
                why.append(f"above their size cap (--all runs them): {', '.join(i.name for i in capped)}")
            if not kernels:
                why.append("no kernel is selected besides the baseline")
            raise UsageError(f"no kernel runs at {'x'.join(map(str, shape))}: {'; '.join(why)}")

    busy = load_warning()
    if busy:
        warn(busy)
    ceilings = None if args.no_peak else roofline.cached_ceilings(backend)
    peak = ceilings.peak_gflops if ceilings and ceilings.peak_gflops > 0 else None
    st = {b.name: b for b in _fastgemm.backends()}[backend]
    all_results, failed = [], []
    sweep: dict = {}
    notes_by_shape = {}
    for shape in shapes:
        M, N, K = shape
        notes = _notes_for(backend, args, args.kernels is not None)
        ladder = run_ladder(backend, shape, kernels, baseline, args)
        if ladder.rejected:
            notes.append(f"not run, the shape breaks their constraints: {'; '.join(ladder.rejected)}")
        if ladder.skipped:
            notes.append(f"skipped above their size cap (they would take many seconds per call; --all runs "
                         f"them): {', '.join(ladder.skipped)}")
        results = ladder.results
        if any(r.truncated for r in results):
            notes.append(f"some kernels ran fewer iterations: --max-seconds {args.max_seconds:g} per kernel")
        bad = [r.kernel for r in results if r.verified and not r.passed]
        if bad:
            notes.append(f"FAILED verification against the float64 reference: {', '.join(bad)}")
            failed.extend(bad)
        if peak:
            notes.append(f"% peak: of {peak:,.1f} GFLOP/s measured by {ceilings.peak_probe}")
        if busy:
            notes.append(busy)
        notes_by_shape["x".join(map(str, shape))] = notes
        print(f"fastgemm {_fastgemm.__version__} bench · backend {backend} · {st.device} · "
              f"{M}x{N}x{K} (M x N x K) · threads {_fastgemm.get_num_threads()}")
        print(f"verified against float64 (rows checked: {ladder.reference_rows} of {M}); "
              f"{args.iters} iterations after {args.warmup} warm-up; inputs uniform in [-1, 1), seed {args.seed:#x}")
        print()
        print(report.table(results, ladder.baseline,
                           time_label=f"device time, median and min of {args.iters} (native clock)",
                           notes=notes, peak_gflops=peak, spread_limit=args.spread_limit))
        print()
        all_results.extend(results)
        for r in results:
            sweep.setdefault(r.kernel, []).append((M, r.gflops))
        if args.plot and len(shapes) == 1:
            for w in plots.plot_ladder(args.plot, results, ladder.baseline, peak_gflops=peak,
                                       title=f"fastgemm {backend} ladder, {M}x{N}x{K}, {st.device}, "
                                             f"threads {_fastgemm.get_num_threads()}"):
                print(f"note: chart: {w}")
    if args.plot and len(shapes) > 1:
        plots.plot_sweep(args.plot, sweep, baseline_series=baseline, xlabel="size (M = N = K)",
                         title=f"fastgemm {backend} sweep, {st.device}")
    if args.plot:
        print(f"chart written to {args.plot}")
    if args.csv:
        report.write_csv(args.csv, all_results, backend)
        print(f"results written to {args.csv}")
    if args.json:
        end_load = machine_load()
        report.write_json(args.json, all_results, backend, {
            "command": "bench", "shapes": [list(s) for s in shapes], "baseline": baseline,
            "warmup": args.warmup, "iters": args.iters, "seed": args.seed,
            "measurement": measurement_record(args.spread_limit),
            "ceilings": ceilings.to_dict() if ceilings else None,
            "peak_problem": report.above_peak(all_results, peak),
            "load_average_end": end_load[0] if end_load else None,
            "notes": notes_by_shape})
        print(f"results written to {args.json}")
    return 1 if failed else 0

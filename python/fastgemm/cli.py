"""The `fastgemm` command: bench, kernels, info.

`fastgemm bench` runs the whole ladder of the best available backend plus its vendor
baseline on one problem, verifying every kernel first, and prints the seed-style table.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import List, Optional

from . import _fastgemm, api, plots, report, roofline
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
    # Names with '@' are experiments (the -O ladder: ikj@O0 ...): run when named, not by default.
    return [k for k in _fastgemm.kernels(backend) if not k.baseline and "@" not in k.name]


def parse_sizes(text: str) -> List[int]:
    """'256,512,1024', '256:4096' (powers of two) or '256:2048:256' (a step)."""
    out: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        bits = part.split(":")
        try:
            nums = [int(b) for b in bits]
        except ValueError:
            raise argparse.ArgumentTypeError(f"sizes look like 256,512 or 256:4096 or 256:2048:256, got {part!r}")
        if any(n < 1 for n in nums) or len(nums) > 3:
            raise argparse.ArgumentTypeError(f"bad size range {part!r}")
        if len(nums) == 1:
            out.append(nums[0])
        elif len(nums) == 2:
            n = nums[0]
            while n <= nums[1]:
                out.append(n)
                n *= 2
        else:
            out.extend(range(nums[0], nums[1] + 1, nums[2]))
    if not out:
        raise argparse.ArgumentTypeError("no sizes given")
    return out


def _resolve_backend(name: str) -> str:
    backend = _fastgemm.best_backend() if name == "auto" else name
    status = {b.name: b for b in _fastgemm.backends()}
    if backend not in status:
        raise FastgemmError(f"unknown backend '{backend}'; choose from {', '.join(status)}, auto")
    if not status[backend].available:
        raise FastgemmError(f"backend '{backend}' is unavailable: {status[backend].reason}")
    return backend


def run_ladder(backend, shape, kernels, baseline, args, notes, progress_label=None):
    """Verify and time the baseline, then each kernel, on one Bench (same inputs).

    Returns (results, baseline_result, skipped, bench); kernels whose constraints reject
    the shape are noted in `notes` rather than run.
    """
    M, N, K = shape
    flops = 2.0 * M * N * K
    bench = _fastgemm.Bench(M, N, K, False, False, 1.0, 0.0, args.seed)
    results, skipped = [], []
    base = base_out = None
    if baseline:
        base, base_out = api.run_baseline(bench, backend, baseline, args.warmup, args.iters, True,
                                          args.max_seconds)
        results.append(base)
    rejected = []
    for info in _progress(kernels, progress_label or f"{backend} {M}x{N}x{K}"):
        if not info.accepts(M, N, K):
            rejected.append(f"{info.name} ({', '.join(info.constraints)})")
            continue
        if flops > info.bench_flops_cap and not args.all:
            skipped.append(info.name)
            continue
        r = bench.run(backend, info.name, args.warmup, args.iters, True, args.max_seconds)
        res = api.BenchResult.from_native(r, info.precision)
        if base is not None:
            api.compare_with_baseline(res, bench, base, base_out)
        results.append(res)
    if rejected:
        notes.append(f"not run, the shape breaks their constraints: {'; '.join(rejected)}")
    return results, base, skipped, bench


def _peak(backend: str, args) -> Optional[float]:
    if getattr(args, "no_peak", False):
        return None
    c = roofline.cached_ceilings(backend)
    return c.peak_gflops if c and c.peak_gflops > 0 else None


def cmd_bench(args) -> int:
    if args.threads:
        _fastgemm.set_num_threads(args.threads)
    backend = _resolve_backend(args.backend)
    baseline = None if args.baseline == "none" else (args.baseline or api.default_baseline(backend))
    if args.processes:  # run-to-run stability across fresh processes (fastgemm.stability)
        from . import stability

        return stability.cmd_bench_processes(args, backend, baseline)
    kernels = _select_kernels(backend, args.kernels, baseline)
    if args.sizes:
        shapes = [(n, n, n) for n in args.sizes]
    else:
        shapes = [args.shape if args.shape else (args.size, args.size, args.size)]

    st = {b.name: b for b in _fastgemm.backends()}[backend]
    peak = _peak(backend, args)
    all_results, failed, exit_code = [], [], 0
    sweep: dict = {}
    for shape in shapes:
        M, N, K = shape
        notes = []
        if backend == "metal-emu":
            notes.append("metal-emu runs Metal shaders on the CPU to check them: its times are NOT "
                         "performance numbers")
        if not args.kernels and any("@" in k.name for k in _fastgemm.kernels(backend)):
            notes.append("experiments (names with '@': the -O ladder ikj@O0 ... transposed_b_split4@O3fm) are not in "
                         "the default list; name them with --kernels")
        results, base, skipped, bench = run_ladder(backend, shape, kernels, baseline, args, notes)
        if skipped:
            notes.append(f"skipped above their size cap (they would take many seconds per call; --all runs "
                         f"them): {', '.join(skipped)}")
        if any(r.truncated for r in results):
            notes.append(f"some kernels ran fewer iterations: --max-seconds {args.max_seconds:g} per kernel")
        bad = [r.kernel for r in results if r.verified and not r.passed]
        if bad:
            notes.append(f"FAILED verification against the float64 reference: {', '.join(bad)}")
            failed.extend(bad)
        if peak:
            c = roofline.cached_ceilings(backend)
            notes.append(f"% peak: of {peak:,.1f} GFLOP/s measured by {c.peak_probe}")
        print(f"fastgemm {_fastgemm.__version__} bench · backend {backend} · {st.device} · "
              f"{M}x{N}x{K} (M x N x K) · threads {_fastgemm.get_num_threads()}")
        print(f"verified against float64 (rows checked: {len(bench.reference_rows)} of {M}); "
              f"{args.iters} iterations after {args.warmup} warm-up; inputs uniform in [-1, 1), seed {args.seed:#x}")
        print()
        print(report.table(results, base, time_label=f"device time, median of {args.iters} (native clock)",
                           notes=notes, peak_gflops=peak))
        print()
        all_results.extend(results)
        for r in results:
            sweep.setdefault(r.kernel, []).append((M, r.gflops))
        if args.plot and len(shapes) == 1:
            plots.plot_ladder(args.plot, results, base, peak_gflops=peak,
                              title=f"fastgemm {backend} ladder, {M}x{N}x{K}, {st.device}, "
                                    f"threads {_fastgemm.get_num_threads()}")
    if args.plot and len(shapes) > 1:
        plots.plot_sweep(args.plot, sweep, baseline_series=baseline, xlabel="size (M = N = K)",
                         title=f"fastgemm {backend} sweep, {st.device}")
    if args.plot:
        print(f"chart written to {args.plot}")
    if args.csv:
        report.write_csv(args.csv, all_results, backend)
    if args.json:
        report.write_json(args.json, all_results, backend, {"shapes": [list(s) for s in shapes]})
    return 1 if failed else exit_code


def cmd_sweep(args) -> int:
    """A kernel-parameter sweep: every kernel of a family (name prefix) on one problem."""
    if args.threads:
        _fastgemm.set_num_threads(args.threads)
    backend = _resolve_backend(args.backend)
    family = [k for k in _fastgemm.kernels(backend) if k.name.startswith(args.family) and not k.baseline]
    if not family:
        raise FastgemmError(f"no kernels of backend {backend} start with '{args.family}'")
    shape = args.shape if args.shape else (args.size, args.size, args.size)
    baseline = None if args.baseline == "none" else (args.baseline or api.default_baseline(backend))
    varying = [key for key in sorted({k for info in family for k in info.params})
               if len({info.params.get(key) for info in family}) > 1]
    args.all = True
    results, base, _, _ = run_ladder(backend, shape, family, baseline, args, [])
    print(f"fastgemm sweep · {backend} · family {args.family} · {shape[0]}x{shape[1]}x{shape[2]} · "
          f"varying {', '.join(varying) or 'nothing'}")
    print()
    print(report.table(results, base, time_label=f"device time, median of {args.iters} (native clock)"))
    if len(varying) == 2:
        # The seed 004 grid: one row per value of the first parameter.
        a, b = varying
        cols = sorted({r_info.params[b] for r_info in family})
        print(f"\nGFLOP/s, {a} (rows) x {b} (columns)")
        print(f"{a:>8} " + " ".join(f"{c:>9}" for c in cols))
        by_name = {r.kernel: r for r in results}
        for av in sorted({info.params[a] for info in family}):
            row = []
            for c in cols:
                info = next((i for i in family if i.params[a] == av and i.params[b] == c), None)
                row.append(f"{by_name[info.name].gflops:9.1f}" if info and info.name in by_name else f"{'-':>9}")
            print(f"{av:>8} " + " ".join(row))
    if args.plot:
        by_name = {r.kernel: r for r in results}
        series: dict = {}
        if len(varying) >= 1:
            x = varying[-1]
            for info in family:
                if info.name not in by_name:
                    continue
                label = args.family if len(varying) == 1 else f"{varying[0]}={info.params[varying[0]]}"
                series.setdefault(label, []).append((info.params[x], by_name[info.name].gflops))
            if base is not None:
                xs = sorted({info.params[x] for info in family})
                series[base.kernel] = [(v, base.gflops) for v in xs]
            plots.plot_sweep(args.plot, series, xlabel=x, baseline_series=base.kernel if base else None,
                             title=f"fastgemm sweep {args.family} on {backend}, {shape[0]}x{shape[1]}x{shape[2]}")
            print(f"chart written to {args.plot}")
    if args.json:
        report.write_json(args.json, results, backend, {"family": args.family, "varying": varying})
    return 0


def cmd_roofline(args) -> int:
    if args.threads:
        _fastgemm.set_num_threads(args.threads)
    backend = _resolve_backend(args.backend)
    c = roofline.cached_ceilings(backend)
    if c is None:
        raise FastgemmError(f"backend {backend} has no roofline probes (its times are not performance numbers)"
                            if backend == "metal-emu" else f"backend {backend} reports no measured ceilings")
    baseline = None if args.baseline == "none" else (args.baseline or api.default_baseline(backend))
    kernels = _select_kernels(backend, args.kernels, baseline)
    shape = args.shape if args.shape else (args.size, args.size, args.size)
    M, N, K = shape
    results, base, skipped, _ = run_ladder(backend, shape, kernels, baseline, args, [])
    infos = {k.name: k for k in _fastgemm.kernels(backend)}
    print(f"fastgemm roofline · {backend} · {M}x{N}x{K}")
    print(f"  compute roof   {c.peak_gflops:10,.1f} GFLOP/s  ({c.peak_probe})")
    print(f"  memory roof    {c.bandwidth_gbs:10,.1f} GB/s      ({c.bandwidth_probe})")
    print(f"  ridge point    {roofline.ridge(c):10,.2f} FLOP/byte")
    print()
    print(f"{'kernel':<26} {'GFLOP/s':>10} {'FLOP/byte':>10} {'MB (model)':>11} {'roof':>10} {'% of roof':>9} "
          f"{'bound':>8}")
    points, baselines, matrix_unit = [], [], []
    for r in results:
        info = infos[r.kernel]
        if info.baseline:
            # A vendor kernel's tiles are unknown: no model intensity, a reference line instead.
            print(f"{r.kernel:<26} {r.gflops:10.2f} {'-':>10} {'-':>11} {'-':>10} {'-':>9} {'vendor':>8}")
            baselines.append((r.kernel, r.gflops))
            continue
        model = roofline.no_cache_intensity(info, M, N, K)
        x = model.flop_per_byte
        points.append((r.kernel, x, r.gflops))
        if info.precision != "fp32":
            # Matrix units with relaxed inputs: the FP32 FFMA roof does not bound them.
            matrix_unit.append(r.kernel)
            print(f"{r.kernel:<26} {r.gflops:10.2f} {x:10.3f} {model.bytes / 1e6:11.1f} {'-':>10} {'-':>9} "
                  f"{'matrix':>8}")
            continue
        top = roofline.roof(c, x)
        bound = "memory" if x < roofline.ridge(c) else "compute"
        print(f"{r.kernel:<26} {r.gflops:10.2f} {x:10.3f} {model.bytes / 1e6:11.1f} {top:10.1f} "
              f"{100 * r.gflops / top:8.1f}% {bound:>8}")
    if skipped:
        print(f"note: skipped above their size cap: {', '.join(skipped)} (--all runs them)")
    print("note: FLOP/byte is the no-cache model (every tile load reaches memory); points above their "
          "roof show cache reuse the model does not count; 'matrix' rungs run on matrix units with "
          "relaxed (tf32) inputs, above the FP32 roof by design")
    measured = []
    for path in args.measured or []:
        from . import profile

        for rec in profile.load_measurements(path):
            measured.append((rec["kernel"], rec["flop_per_byte"], rec["gflops"]))
    if args.plot:
        roofline.plot_roofline(args.plot, c, points, measured_points=measured, baselines=baselines,
                               matrix_unit=matrix_unit,
                               title=f"fastgemm roofline, {backend}, {M}x{N}x{K}, "
                                     f"{ {b.name: b for b in _fastgemm.backends()}[backend].device}")
        print(f"chart written to {args.plot}")
    return 0


def cmd_compare(args) -> int:
    import json

    docs = [json.loads(open(p).read()) for p in (args.first, args.second)]
    key = lambda r: (r["backend"], r["kernel"], r["M"], r["N"], r["K"])  # noqa: E731
    first = {key(r): r for r in docs[0]["results"]}
    second = {key(r): r for r in docs[1]["results"]}
    for i, d in enumerate(docs):
        m = d.get("machine", {})
        print(f"{'AB'[i]}: {(args.first, args.second)[i]}  {m.get('date')}  {m.get('device')}  commit {m.get('commit')}")
    print()
    print(f"{'backend':<10} {'kernel':<26} {'shape':>16} {'A GFLOP/s':>10} {'B GFLOP/s':>10} {'B/A':>7}")
    for k in sorted(set(first) & set(second)):
        a, b = first[k]["gflops"], second[k]["gflops"]
        print(f"{k[0]:<10} {k[1]:<26} {f'{k[2]}x{k[3]}x{k[4]}':>16} {a:10.2f} {b:10.2f} {b / a:6.2f}x")
    only = sorted(set(first) ^ set(second))
    if only:
        print(f"\nin one file only: {', '.join(f'{k[0]}/{k[1]} {k[2]}x{k[3]}x{k[4]}' for k in only)}")
    return 0


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
            c = None if args.no_probes else roofline.cached_ceilings(b.name)
            if c is not None:
                print(f"      {'peak (probe)':<14} {c.peak_gflops:,.1f} GFLOP/s fp32: {c.peak_probe}")
                print(f"      {'memory (probe)':<14} {c.bandwidth_gbs:,.1f} GB/s: {c.bandwidth_probe}")
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
    b.add_argument("--sizes", type=parse_sizes, help="sweep square sizes: 256,512,1024 or 256:4096 or 256:2048:256")
    b.add_argument("--plot", help="write a PNG chart (ladder bars, or GFLOP/s vs size with --sizes)")
    b.add_argument("--no-peak", action="store_true", help="skip the FMA/bandwidth probes (no %% peak column)")
    b.add_argument("--processes", type=positive_int,
                   help="run the named kernels (default: the baseline) in N fresh processes, best of --iters in "
                        "each, and print the distribution (run-to-run stability)")
    b.set_defaults(func=cmd_bench)

    def common(sp, size_default=DEFAULT_SIZE):
        sp.add_argument("--backend", default="auto")
        g = sp.add_mutually_exclusive_group()
        g.add_argument("--size", type=positive_int, default=size_default)
        g.add_argument("--shape", type=parse_shape, help="MxNxK")
        sp.add_argument("--baseline", help="baseline kernel name, or 'none'")
        sp.add_argument("--warmup", type=int, default=1)
        sp.add_argument("--iters", type=positive_int, default=5)
        sp.add_argument("--threads", type=positive_int)
        sp.add_argument("--max-seconds", type=float, default=3.0)
        sp.add_argument("--seed", type=lambda s: int(s, 0), default=0x5EED)
        sp.add_argument("--plot", help="write a PNG chart")
        sp.add_argument("--json", help="write results to this JSON file")

    r = sub.add_parser("roofline", help="place the ladder on this machine's measured roofline")
    common(r)
    r.add_argument("--kernels", help="comma-separated kernel names (default: the whole ladder)")
    r.add_argument("--all", action="store_true", help="also run rungs above their size cap")
    r.add_argument("--measured", action="append", help="profiler measurements (fastgemm profile --json) to add")
    r.set_defaults(func=cmd_roofline)

    s = sub.add_parser("sweep", help="sweep a kernel family's parameters (seed 003 tiles, seed 004 tile x BK)")
    common(s)
    s.add_argument("--family", required=True, help="kernel name prefix, e.g. tiled_ikj or tensorops_sync")
    s.set_defaults(func=cmd_sweep)

    from .emu import add_emu_parser

    add_emu_parser(sub)

    from . import exactness, profile, stability

    exactness.add_parser(sub)  # explain-diff
    profile.add_parser(sub)  # profile
    stability.add_run_once_parser(sub)  # _run-once (hidden: the child of --processes and profile)

    c = sub.add_parser("compare", help="per-kernel ratios between two --json result files")
    c.add_argument("first")
    c.add_argument("second")
    c.set_defaults(func=cmd_compare)

    k = sub.add_parser("kernels", help="list registered kernels with their constraints")
    k.add_argument("--backend")
    k.set_defaults(func=cmd_kernels)

    i = sub.add_parser("info", help="machine, build, backends and their measured roofline ceilings")
    i.add_argument("--no-probes", action="store_true", help="skip the peak and bandwidth probes")
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
    except BrokenPipeError:  # `fastgemm info | head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

"""`fastgemm explain-diff`: which kernels add each output in strict increasing-k order,
by a bit-exact comparison with two numpy references (fastgemm.exactness)."""

from __future__ import annotations

import sys
from dataclasses import asdict

import numpy as np

from .. import _fastgemm, exactness, report
from .common import (UsageError, add_backend_option, add_baseline_option, add_problem_options, apply_threads,
                     baseline_for, check_fits_in_memory, check_output_file, describe_rejected, description, progress,
                     resolve_backend, runnable, seed, select_kernels, shape_of, split_names, thread_count)


def add_parser(sub) -> None:
    e = sub.add_parser("explain-diff",
                       help="which kernels add each output in strict k order (bit-exact check vs numpy references)",
                       description=description(__doc__))
    add_backend_option(e)
    add_problem_options(e)
    e.add_argument("--kernels", help="comma-separated kernel names (default: every kernel of the backend, "
                                     "including the -O ladder)")
    add_baseline_option(e)
    e.add_argument("--all", action="store_true", help="also run kernels above their size cap")
    e.add_argument("--threads", type=thread_count, help="CPU threads (default: all usable cores)")
    e.add_argument("--seed", type=seed, default=0x5EED, help="seed of the random inputs (default: 0x5eed)")
    e.add_argument("--json", help="write every kernel's classification to this JSON file")
    e.set_defaults(func=run)


def run(args) -> int:
    apply_threads(args.threads)
    backend = resolve_backend(args.backend)
    M, N, K = shape = shape_of(args)
    baseline = baseline_for(backend, args.baseline)
    if args.kernels is not None:
        chosen = select_kernels(backend, args.kernels, baseline)
        if not chosen and baseline not in split_names(args.kernels):
            raise UsageError("--kernels names no kernel")
    else:
        chosen = [k for k in _fastgemm.kernels(backend) if not k.baseline]
    check_fits_in_memory([shape])
    check_output_file(args.json, "--json")
    to_run, rejected, capped = runnable(chosen, shape, args.all)
    if not to_run and not baseline:
        raise UsageError(f"no kernel runs at {M}x{N}x{K}"
                         + (f"; constraints: {describe_rejected(rejected)}" if rejected else "")
                         + (f"; above their size cap (--all): {', '.join(k.name for k in capped)}" if capped else ""))

    rng = np.random.default_rng(args.seed)
    A = rng.uniform(-1.0, 1.0, size=(M, K)).astype(np.float32)
    B = rng.uniform(-1.0, 1.0, size=(K, N)).astype(np.float32)
    named = lambda items, desc: progress(items, desc, label=lambda i: f"{i.name} {M}x{N}x{K}")  # noqa: E731
    rows, meta = exactness.check(backend, to_run, A, B, baseline, progress=named)

    print(f"fastgemm explain-diff · backend {backend} · {M}x{N}x{K} (M x N x K) · inputs uniform in [-1, 1), "
          f"seed {args.seed:#x} · alpha 1, beta 0")
    print("references (numpy): one float32 running sum per C(i,j) over k = 0..K-1;")
    print("  non-fused: s = fl(s + fl(a*b))  (two roundings)     fused: s = fl(s + a*b)  (one rounding, FMA)")
    print()
    print(exactness.table(rows, baseline))
    print()
    conclusions = exactness.conclusions(rows, baseline, meta)
    for line in conclusions:
        print(f"note: {line}")
    if capped:
        print(f"note: skipped above their size cap (--all runs them): {', '.join(k.name for k in capped)}")
    if rejected:
        print(f"note: not run, their constraints reject {M}x{N}x{K}: {', '.join(k.name for k in rejected)}")
    if args.json:
        report.write_json_document(args.json, {
            "machine": report.machine_record(backend), "shape": [M, N, K], "seed": args.seed, "baseline": baseline,
            "meta": meta, "kernels": [asdict(r) for r in rows], "conclusions": conclusions})
        print(f"results written to {args.json}")
    contradicted = [r.kernel for r in rows if r.consistent is False]
    if contradicted:
        print(f"note: measurement contradicts the written order for: {', '.join(contradicted)}", file=sys.stderr)
    return 0

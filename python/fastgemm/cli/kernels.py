"""`fastgemm kernels`: every registered kernel with its ladder step, precision class,
parameters and shape constraints, as a table or (--json) as records."""

from __future__ import annotations

import math

from .. import _fastgemm
from .common import UsageError, check_output_file, description, emit_json


def add_parser(sub) -> None:
    k = sub.add_parser("kernels", help="list registered kernels with their constraints",
                       description=description(__doc__))
    k.add_argument("--backend", help="only this backend's kernels (default: every backend)")
    k.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="print the list as JSON (to FILE when given, else to stdout)")
    k.set_defaults(func=run)


def record(k) -> dict:
    return {"name": k.name, "backend": k.backend, "ladder_step": k.ladder_step, "baseline": k.baseline,
            "precision": k.precision, "constraints": list(k.constraints), "params": dict(k.params),
            "source": k.source, "description": k.description, "flags": k.flags, "isa": k.isa,
            "auto_candidate": k.auto_candidate,
            # null for no cap: JSON has no infinity that every parser takes
            "bench_flops_cap": k.bench_flops_cap if math.isfinite(k.bench_flops_cap) else None}


def run(args) -> int:
    status = {b.name: b for b in _fastgemm.backends()}
    if args.backend is not None and args.backend not in status:
        raise UsageError(f"unknown backend '{args.backend}'; choose from {', '.join(status)}")
    if args.json not in (None, "-"):
        check_output_file(args.json, "--json")
    backends = [args.backend] if args.backend else list(status)
    listed = {be: _fastgemm.kernels(be) for be in backends}
    if args.backend and not listed[args.backend]:
        b = status[args.backend]
        why = b.reason if not b.available else "it registers none"
        raise UsageError(f"backend {args.backend} has no kernels in this build: {why}")
    if args.json is not None:
        doc = {"kernels": [record(k) for ks in listed.values() for k in ks],
               "backends_without_kernels": {be: status[be].reason for be, ks in listed.items() if not ks}}
        emit_json(doc, args.json)
        return 0
    for be, ks in listed.items():
        if not ks:
            print(f"[{be}] no kernels in this build: {status[be].reason or 'none registered'}")
            continue
        print(f"[{be}]")
        for k in ks:
            tag = "baseline" if k.baseline else f"step {k.ladder_step:>2}"
            cons = f"  requires {', '.join(k.constraints)}" if k.constraints else ""
            params = " ".join(f"{a}={b}" for a, b in k.params.items())
            print(f"  {k.name:<26} {tag:<9} {k.precision:<7} {k.description}"
                  f"{'  [' + params + ']' if params else ''}{cons}")
    return 0

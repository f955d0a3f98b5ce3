"""`fastgemm compare A.json B.json`: per-row ratios between two `bench --json` result
files, and with --fail-above a CI gate: exit code 1 when a row of B is slower than the
same row of A by more than the given share. metal-emu rows are shown but never count:
emulator times are not performance numbers."""

from __future__ import annotations

import json
import math
from typing import Dict, Tuple

from .. import report
from .common import UsageError, add_backend_option, check_output_file, description, percentage, read_input_file

Key = Tuple[str, str, int, int, int]
NOT_TIMINGS = ("metal-emu",)  # backends whose times are not performance numbers
_REQUIRED = ("backend", "kernel", "M", "N", "K")


def add_parser(sub) -> None:
    c = sub.add_parser("compare", help="per-kernel ratios between two --json result files (a CI regression gate)",
                       description=description(__doc__))
    c.add_argument("first", metavar="A.json", help="the reference run (`fastgemm bench --json`)")
    c.add_argument("second", metavar="B.json", help="the run to judge against A")
    c.add_argument("--fail-above", type=percentage, metavar="PCT",
                   help="exit with code 1 when a row of B takes longer than in A by more than PCT, e.g. 5%%")
    add_backend_option(c, default=None, help="compare only the rows of this backend (default: every backend)")
    c.add_argument("--json", help="write the comparison (every common row with its ratio) to this JSON file")
    c.set_defaults(func=run)


def _number(row: dict, name: str, where: str) -> float:
    v = row.get(name)
    try:
        ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
    except OverflowError:  # an int beyond any float
        ok = False
    if not ok:
        raise UsageError(f"{where}: '{name}' is {str(v)[:40]}, not a number within float range")
    return float(v)


def load_results(path: str) -> Tuple[dict, Dict[Key, dict]]:
    """(machine record, rows by (backend, kernel, M, N, K)) of a `bench --json` file."""
    text = read_input_file(path, "compare")
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise UsageError(f"{path}: not JSON ({e})") from None
    except RecursionError:
        raise UsageError(f"{path}: JSON nested too deeply to be a `fastgemm bench --json` file") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise UsageError(f"{path}: not a `fastgemm bench --json` file (no 'results' list)")
    rows: Dict[Key, dict] = {}
    for i, r in enumerate(doc["results"]):
        where = f"{path}: result {i}"
        if not isinstance(r, dict) or not all(k in r for k in _REQUIRED):
            raise UsageError(f"{where} lacks one of {', '.join(_REQUIRED)}")
        if not isinstance(r.get("flags", []), list):
            raise UsageError(f"{where} ({r['kernel']}): 'flags' is {type(r['flags']).__name__}, not a list")
        dims = [_number(r, d, where) for d in "MNK"]
        if any(d < 1 or d != int(d) for d in dims):
            raise UsageError(f"{where} ({r['kernel']}) has a shape that is not whole numbers >= 1: {dims}")
        if "device_median" not in r and "gflops" not in r:
            raise UsageError(f"{where} ({r['kernel']}) has no device_median or gflops")
        time_s = _number(r, "device_median", where) if "device_median" in r else None
        gflops = _number(r, "gflops", where) if "gflops" in r else None
        if (time_s is not None and time_s <= 0) or (time_s is None and gflops <= 0):
            raise UsageError(f"{where} ({r['kernel']}) has no positive time or GFLOP/s: not a timing")
        key = (str(r["backend"]), str(r["kernel"]), int(dims[0]), int(dims[1]), int(dims[2]))
        rows[key] = dict(r, _time=time_s if time_s is not None else 2.0 * key[2] * key[3] * key[4] / gflops * 1e-9)
    machine = doc.get("machine") if isinstance(doc.get("machine"), dict) else {}
    return machine, rows


def run(args) -> int:
    check_output_file(args.json, "--json")
    (ma, first), (mb, second) = load_results(args.first), load_results(args.second)
    if args.backend:
        first = {k: v for k, v in first.items() if k[0] == args.backend}
        second = {k: v for k, v in second.items() if k[0] == args.backend}
    common = sorted(set(first) & set(second))
    if not common:
        raise UsageError(f"{args.first} and {args.second} have no row in common (same backend, kernel and shape)")
    for label, path, m in (("A", args.first, ma), ("B", args.second, mb)):
        dirty = " (uncommitted changes)" if m.get("dirty") in ("true", True) else ""
        print(f"{label}: {path}  {m.get('date')}  {m.get('device')}  commit {m.get('commit')}{dirty}")
    print()
    print(f"{'backend':<10} {'kernel':<26} {'shape':>16} {'A ms':>10} {'B ms':>10} {'B/A time':>9}  note")
    regressions, compared = [], []
    for k in common:
        a, b = first[k], second[k]
        ratio = b["_time"] / a["_time"]
        notes = []
        counts = k[0] not in NOT_TIMINGS
        if not counts:
            notes.append("emulator: not a timing, never a regression")
        doubtful = [x for x in (a, b) if "unstable" in (x.get("flags") or [])]
        if doubtful:
            notes.append("unstable in " + " and ".join("AB"[(a, b).index(x)] for x in doubtful))
        regressed = counts and args.fail_above is not None and ratio > 1.0 + args.fail_above
        if regressed:
            notes.append(f"REGRESSION (> {100 * args.fail_above:g}% slower)")
            regressions.append(k)
        shape = f"{k[2]}x{k[3]}x{k[4]}"
        print(f"{k[0]:<10} {k[1]:<26} {shape:>16} {a['_time'] * 1e3:10.3f} {b['_time'] * 1e3:10.3f} "
              f"{ratio:8.3f}x  {'; '.join(notes)}".rstrip())
        compared.append({"backend": k[0], "kernel": k[1], "M": k[2], "N": k[3], "K": k[4], "a_s": a["_time"],
                         "b_s": b["_time"], "time_ratio": ratio, "counts": counts, "regression": bool(regressed),
                         "flags_a": a.get("flags") or [], "flags_b": b.get("flags") or []})
    only = sorted(set(first) ^ set(second))
    if only:
        print(f"\nin one file only: {', '.join(f'{k[0]}/{k[1]} {k[2]}x{k[3]}x{k[4]}' for k in only)}")
    print("\nB/A time: B's median device time over A's (above 1: B is slower)")
    if args.json:
        report.write_json_document(args.json, {"a": args.first, "b": args.second, "fail_above": args.fail_above,
                                               "rows": compared, "regressions": len(regressions)})
    if regressions:
        print(f"{len(regressions)} of {len(compared)} rows regressed by more than {100 * args.fail_above:g}%: "
              + ", ".join(f"{k[1]} {k[2]}x{k[3]}x{k[4]}" for k in regressions))
        return 1
    return 0

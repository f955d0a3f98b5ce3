"""`fastgemm info`: this build (version, source commit, compiler, flags), this machine,
every backend with its availability, the measured roofline ceilings, and kernel="auto"'s
tuning: whether it times candidates, its cache file, how many shape classes this process
knows (loaded from the cache or tuned since) and how many of them are not yet confirmed
(awaiting their second opinion, or picked by rule while timing was off)."""

from __future__ import annotations

import os

from .. import _fastgemm, autotune, report, roofline
from .common import check_output_file, description, emit_json


def add_parser(sub) -> None:
    i = sub.add_parser("info", help="machine, build, backends and their measured roofline ceilings",
                       description=description(__doc__))
    i.add_argument("--no-probes", action="store_true", help="skip the peak and bandwidth probes")
    i.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="print the same as JSON (to FILE when given, else to stdout)")
    i.set_defaults(func=run)


def collect(probe: bool) -> dict:
    backends = []
    for b in _fastgemm.backends():
        c = roofline.cached_ceilings(b.name) if (probe and b.available) else None
        backends.append({"name": b.name, "available": b.available, "reason": b.reason, "device": b.device,
                         "properties": dict(b.properties), "ceilings": c.to_dict() if c else None})
    return {"fastgemm": _fastgemm.__version__, "build": report.provenance(), "cores": _fastgemm.available_cores(),
            "threads": _fastgemm.get_num_threads(), "backends": backends, "auto": _fastgemm.best_backend(),
            "machine": report.machine_record(_fastgemm.best_backend()),
            "tuning": {"autotune": _fastgemm.autotune_enabled(), "cache_file": str(autotune.cache_file()),
                       "classes": len(autotune.table()), "provisional": len(_fastgemm.provisional_choices())}}


def run(args) -> int:
    if args.json not in (None, "-"):
        check_output_file(args.json, "--json")
    doc = collect(probe=not args.no_probes)
    if args.json is not None:
        emit_json(doc, args.json)
        return 0
    build = doc["build"]
    dirty = {"true": ", with uncommitted changes", "false": ""}.get(build.get("dirty"), "")
    print(f"fastgemm {build['version']}")
    print(f"  source        {build.get('describe')} (commit {build.get('commit')}{dirty})")
    print(f"  compiler      {build['compiler']} ({build.get('build_type')}: {build.get('cxx_flags')})")
    print(f"  cpu           {build['cpu_model']}")
    print(f"  cpu isa       {build['cpu_isa']}")
    print(f"  cores         {doc['cores']} (threads in use: {doc['threads']})")
    print("backends:")
    for b in doc["backends"]:
        if b["available"]:
            print(f"  {b['name']:<10} available    {b['device']}")
            for k, v in b["properties"].items():
                print(f"      {k:<14} {v}")
            c = b["ceilings"]
            if c is not None:
                print(f"      {'peak (probe)':<14} {c['peak_gflops']:,.1f} GFLOP/s fp32: {c['peak_probe']}")
                print(f"      {'memory (probe)':<14} {c['bandwidth_gbs']:,.1f} GB/s: {c['bandwidth_probe']}")
                for unit, gops in c.get("matrix_peaks_gops", {}).items():
                    print(f"      {'matrix (probe)':<14} {gops / 1000:,.0f} TOPS: {unit}")
        else:
            print(f"  {b['name']:<10} unavailable  {b['reason']}")
    print(f"  auto picks: {doc['auto']}")
    t = doc["tuning"]
    print("tuning (kernel=\"auto\"):")
    print(f"  {'timing':<14}{'on' if t['autotune'] else 'off (FASTGEMM_AUTOTUNE)'}")
    # A path's undecodable bytes as \xNN, so that a strict UTF-8 terminal can print it.
    print(f"  {'cache':<14}{os.fsencode(t['cache_file']).decode('utf-8', 'backslashreplace')}")
    print(f"  {'shape classes':<14}{t['classes']} known, {t['provisional']} not yet confirmed")
    return 0

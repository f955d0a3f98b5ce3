"""Tables and machine-readable records of benchmark results.

The table follows the seeds' probe output (time, GFLOP/s, checksum, max abs diff against
the baseline on the same inputs, the ratio to the baseline) with what a reader needs to
judge each number: the median and min time, the spread of the timed iterations, and the
flags of rows that were re-measured or could not be measured (docs/measurement.md).
CSV and JSON carry every sample together with the machine, the build's provenance and
the library versions.
"""

from __future__ import annotations

import csv
import datetime as _dt
import itertools
import json
import os
import platform
from pathlib import Path
from typing import Iterable, List, Optional

from . import _fastgemm

# % of the measured peak above this is a probe problem, never a result.
PEAK_LIMIT_PERCENT = 100.0


def _fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:10.3f}"


def _fmt_diff(d: Optional[float]) -> str:
    if d is None:
        return "-"
    return "0" if d == 0 else f"{d:.3g}"


def _fmt_ratio(ratio: Optional[float]) -> str:
    if ratio is None:
        return "-"
    if ratio >= 1.0:
        return f"{ratio:.2f}x faster" if ratio > 1.005 else "1.00x"
    slower = 1.0 / ratio
    return f"{slower:.2f}x slower" if slower < 10 else f"{slower:.1f}x slower"


def format_ratio(r) -> str:
    """The ratio as the table prints it: '(... ?)' when the row could not be measured."""
    text = _fmt_ratio(r.ratio)
    if r.ratio is not None and r.ratio_trusted is False:
        return f"({text}?)"
    return text


def percent_of_peak(r, peak_gflops: Optional[float]) -> Optional[float]:
    """% of the FP32 FMA peak, for fp32 rows (matrix-unit rungs are not bounded by it)."""
    if not peak_gflops or r.precision != "fp32":
        return None
    return 100.0 * r.gflops / peak_gflops


def above_peak(results, peak_gflops: Optional[float]) -> List[str]:
    """Kernels whose GFLOP/s exceed the measured peak: the probe under-measured."""
    return [r.kernel for r in results
            if (percent_of_peak(r, peak_gflops) or 0.0) > PEAK_LIMIT_PERCENT]


def table(results, baseline=None, *, time_label="device time", notes: Iterable[str] = (),
          peak_gflops: Optional[float] = None, spread_limit: Optional[float] = None) -> str:
    """The ladder table, one row per result."""
    base_name = baseline.kernel if baseline is not None else "baseline"
    head = (f"{'kernel':<24} {'median ms':>10} {'min ms':>10} {'spread':>7} {'GFLOP/s':>10} {'checksum':>14} "
            f"{'rel err':>9} {'max|diff| vs ' + base_name:>22} {'vs ' + base_name:>18}")
    if peak_gflops:
        head += f" {'% peak':>8}"
    head += "  flags"
    lines = [head, "-" * len(head)]
    probe_problem = above_peak(results, peak_gflops)
    for r in results:
        is_base = r is baseline
        status = "" if not r.verified else ("" if r.passed else "  FAILED verification")
        row = (f"{r.kernel:<24} {_fmt_ms(r.device_median)} {_fmt_ms(r.device_min)} "
               f"{100.0 * r.device_spread:6.1f}% {r.gflops:10.2f} {r.checksum:14.6f} "
               f"{(f'{r.rel_err:.1e}' if r.rel_err is not None else '-'):>9} "
               f"{_fmt_diff(r.diff_vs_baseline if not is_base else None):>22} "
               f"{(format_ratio(r) if not is_base else 'baseline'):>18}")
        if peak_gflops:
            pct = percent_of_peak(r, peak_gflops)
            if pct is None:
                row += f" {'-':>8}"
            elif r.kernel in probe_problem:
                row += f" {'>peak?':>8}"  # never printed as a percentage: the probe is wrong
            else:
                row += f" {pct:7.1f}%"
        row += "  " + ", ".join(r.flags)
        extras = []
        if r.prep_median > 0:
            extras.append(f"incl. {r.prep_median * 1e3:.3f} ms operand prep")
        if r.truncated:
            extras.append(f"{len(r.device_times)} iters: time cap")
        if extras:
            row += "  (" + "; ".join(extras) + ")"
        lines.append(row.rstrip() + status)
    lines.append(f"time: {time_label}; spread: (75th - 25th percentile) / median of the timed iterations")
    flagged = [r for r in results if r.flags]
    if flagged:
        limit = f" above {100 * spread_limit:g}%" if spread_limit else ""
        lines.append(f"flags: noisy / baseline-noisy = spread{limit}; drift = a re-check of the baseline or the "
                     f"kernel right after its block moved{limit}; remeasured = ratio from an interleaved "
                     f"baseline/kernel re-measure; disagrees = that ratio differs from the first; unstable = even "
                     f"interleaved it did not settle; busy = other processes competed for the cores throughout; "
                     f"a ratio in parentheses with '?' is not a measurement")
    if peak_gflops and any(r.precision != "fp32" for r in results):
        lines.append("% peak: FP32 FMA peak; tf32 and fp32x3 rungs run on matrix units, which it does not bound")
    if probe_problem:
        lines.append(f"% peak: PROBE PROBLEM: {', '.join(probe_problem)} ran faster than the measured peak of "
                     f"{peak_gflops:,.1f} GFLOP/s, so the probe under-measured this machine (a competing load "
                     f"during the probe?); '>peak?' marks them and no percentage is claimed for them")
    lines.extend(f"note: {n}" for n in notes)
    return "\n".join(lines)


def _library_versions() -> dict:
    """Versions of the Python packages a result depends on (None: not installed)."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("numpy", "scipy-openblas32", "tqdm", "matplotlib", "threadpoolctl", "pytest-benchmark"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def provenance() -> dict:
    """What was built, from the build itself: version, source commit and dirty flag,
    compiler, flags (fastgemm._fastgemm.build_info)."""
    return dict(_fastgemm.build_info)


def machine_record(backend: str) -> dict:
    status = {b.name: b for b in _fastgemm.backends()}.get(backend)
    build = provenance()
    libraries = _library_versions()
    try:
        load = list(os.getloadavg())
    except (OSError, AttributeError):
        load = None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "fastgemm": _fastgemm.__version__,
        # The commit the library was built from (not the directory the command ran in).
        "commit": build.get("commit"),
        "describe": build.get("describe"),
        "dirty": build.get("dirty"),
        "python": platform.python_version(),
        "numpy": libraries["numpy"],
        "libraries": libraries,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "hostname": platform.node(),
        "cores": _fastgemm.available_cores(),
        "load_average": load,
        "backend": backend,
        "device": status.device if status else None,
        "backend_properties": dict(status.properties) if status else {},
        "build": build,
        "threads": _fastgemm.get_num_threads(),
    }


_temporary_names = itertools.count()


def write_text(path, text: str) -> None:
    """Writes the whole file or nothing: a temporary file beside it, renamed over it.

    Through a symbolic link the file written is the link's target (the link stays a
    link). A stream rather than a file (/dev/stdout, a pipe, a terminal: a path under
    /dev or /proc, or one that is not a regular file) is appended to in place, since a
    rename would replace the device's name instead of writing to it, and truncating it
    would lose what was written there before. The temporary file's name is short, so
    that a target name at the file system's length limit still gets one."""
    p = Path(path)
    if str(p) == os.devnull:
        return
    absolute = os.path.abspath(p)
    target = Path(os.path.realpath(p))
    if absolute.startswith(("/dev/", "/proc/")) or (target.exists() and not target.is_file()):
        with open(p, "a") as stream:
            stream.write(text)
        return
    tmp = target.with_name(f".fastgemm-{os.getpid()}-{next(_temporary_names)}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json_document(path, doc: dict) -> None:
    write_text(path, json.dumps(doc, indent=1, allow_nan=True) + "\n")


def write_json(path, results: List, backend: str, extra: Optional[dict] = None) -> None:
    doc = {"machine": machine_record(backend), "results": [r.to_dict() for r in results]}
    if extra:
        doc.update(extra)
    write_json_document(path, doc)


CSV_FIELDS = ["kernel", "backend", "M", "N", "K", "threads", "precision", "device_median", "device_min",
              "device_spread", "host_median", "host_min", "gflops", "rel_err", "max_abs_diff", "passed",
              "checksum", "baseline", "ratio", "ratio_trusted", "flags", "diff_vs_baseline", "iterations", "date",
              "commit", "device"]


def write_csv(path, results: List, backend: str) -> None:
    import io

    m = machine_record(backend)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
    w.writeheader()
    for r in results:
        d = r.to_dict()
        row = {k: d.get(k) for k in CSV_FIELDS}
        row.update(iterations=len(r.device_times), flags=" ".join(r.flags), date=m["date"], commit=m["commit"],
                   device=m["device"])
        w.writerow(row)
    write_text(path, buf.getvalue())

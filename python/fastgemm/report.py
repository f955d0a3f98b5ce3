"""Tables and machine-readable records of benchmark results.

The table follows the seeds' probe output: time, GFLOP/s, checksum, max abs diff
against the baseline on the same inputs, and the slowdown against the baseline.
CSV and JSON carry every sample together with the machine and the versions.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import platform
import subprocess
from pathlib import Path
from typing import Iterable, List, Optional

from . import _fastgemm


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


def table(results, baseline=None, *, time_label="device time, median", notes: Iterable[str] = (),
          peak_gflops: Optional[float] = None) -> str:
    """The seed-style ladder table, one row per result."""
    base_name = baseline.kernel if baseline is not None else "baseline"
    head = (f"{'kernel':<24} {'time (ms)':>10} {'GFLOP/s':>10} {'checksum':>14} "
            f"{'rel err':>9} {'max|diff| vs ' + base_name:>22} {'vs ' + base_name:>16}")
    if peak_gflops:
        head += f" {'% peak':>7}"
    lines = [head, "-" * len(head)]
    for r in results:
        status = "" if not r.verified else ("" if r.passed else "  FAILED verification")
        row = (f"{r.kernel:<24} {_fmt_ms(r.device_median)} {r.gflops:10.2f} {r.checksum:14.6f} "
               f"{(f'{r.rel_err:.1e}' if r.rel_err is not None else '-'):>9} "
               f"{_fmt_diff(r.diff_vs_baseline if r is not baseline else None):>22} "
               f"{(_fmt_ratio(r.ratio) if r is not baseline else 'baseline'):>16}")
        if peak_gflops:
            # The probe measures FP32 FMA throughput; matrix-unit rungs (tf32, fp32x3) are
            # not bounded by it, so a percentage of it would mislead.
            row += f" {100.0 * r.gflops / peak_gflops:6.1f}%" if r.precision == "fp32" else f" {'-':>7}"
        if r.prep_median > 0:
            row += f"  (incl. {r.prep_median * 1e3:.3f} ms operand prep)"
        if r.truncated:
            row += f"  ({len(r.device_times)} iters: time cap)"
        lines.append(row + status)
    lines.append(f"time: {time_label}")
    if peak_gflops and any(r.precision != "fp32" for r in results):
        lines.append("% peak: FP32 FMA peak; tf32 and fp32x3 rungs run on matrix units, which it does not bound")
    lines.extend(f"note: {n}" for n in notes)
    return "\n".join(lines)


def git_commit() -> Optional[str]:
    here = Path(__file__).resolve().parent
    for cwd in (Path.cwd(), here):
        try:
            out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True,
                                 text=True, timeout=5)
            if out.returncode == 0:
                dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                                       capture_output=True, text=True, timeout=5).stdout.strip()
                return out.stdout.strip() + ("+dirty" if dirty else "")
        except (OSError, subprocess.SubprocessError):
            pass
    return None


def machine_record(backend: str) -> dict:
    status = {b.name: b for b in _fastgemm.backends()}.get(backend)
    import numpy

    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "fastgemm": _fastgemm.__version__,
        "commit": git_commit(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "backend": backend,
        "device": status.device if status else None,
        "backend_properties": dict(status.properties) if status else {},
        "build": dict(_fastgemm.build_info),
        "threads": _fastgemm.get_num_threads(),
    }


def write_json(path, results: List, backend: str, extra: Optional[dict] = None) -> None:
    doc = {"machine": machine_record(backend), "results": [r.to_dict() for r in results]}
    if extra:
        doc.update(extra)
    Path(path).write_text(json.dumps(doc, indent=1))


CSV_FIELDS = ["kernel", "backend", "M", "N", "K", "threads", "precision", "device_median", "device_min",
              "host_median", "host_min", "gflops", "rel_err", "max_abs_diff", "passed", "checksum",
              "baseline", "ratio", "diff_vs_baseline", "iterations", "date", "commit", "device"]


def write_csv(path, results: List, backend: str) -> None:
    m = machine_record(backend)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in results:
            d = r.to_dict()
            row = {k: d.get(k) for k in CSV_FIELDS}
            row.update(iterations=len(r.device_times), date=m["date"], commit=m["commit"], device=m["device"])
            w.writerow(row)

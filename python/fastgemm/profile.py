"""`fastgemm profile KERNEL`: measured memory traffic from hardware counters.

The roofline in `fastgemm roofline` places kernels by their *no-cache* intensity (every
tile load counted as device-memory traffic). Seeds 000 and 004 then asked the GPU: the
bytes that really reached device memory, divided into the FLOPs, give the measured
intensity, usually higher because caches absorb reuse the model does not count.

  CUDA   the kernel runs once in a child process under Nsight Compute:
           ncu --csv --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
             --target-processes all python -m fastgemm _run-once --backend cuda --kernel X ...
         (ncu's defaults flush the caches before each profiled kernel and lock the clocks at
         base, so the bytes are a cold-cache count and the profiled time is at base clock.)
         Saved `ncu --csv` output can be read back with --from-csv.
  macOS  the same child runs under Instruments:
           xcrun xctrace record --template 'Metal System Trace' --output T.trace --launch -- python ...
         (xctrace(1), Xcode's command line for Instruments: record / export --toc / export --xpath).
         GPU Read/Write Bandwidth counters are only in the trace when the template records a
         counter set; xctrace has no option for that (seed 000 patched the template), so pass a
         template saved from Instruments with --xctrace-template. Not testable on Linux.
  else   says which tool is missing and prints the no-cache model.

`--json FILE` writes records with kernel, flop_per_byte and gflops that
`fastgemm roofline --measured FILE` draws as measured points.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, asdict
from typing import Dict, List, Optional, Sequence

from . import _fastgemm
from .errors import FastgemmError

NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")

# ncu prints base units ("byte", "ns") or, with auto scaling, prefixed ones. Nsight Compute
# scales bytes by powers of 1000 (Kbyte, Mbyte); the binary spellings are accepted too.
_UNIT_SCALE = {
    "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
    "kibyte": 1024.0, "mibyte": 1024.0 ** 2, "gibyte": 1024.0 ** 3,
    "kib": 1024.0, "mib": 1024.0 ** 2, "gib": 1024.0 ** 3,
    "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
    "s": 1.0, "second": 1.0,
}


class ProfilerUnavailable(FastgemmError):
    """The profiler this kernel needs is not on this machine (or the kernel is not here)."""


# --- Nsight Compute CSV ---------------------------------------------------------------------

@dataclass
class NcuLaunch:
    """One profiled kernel launch: its metrics in base units (bytes, seconds)."""

    launch_id: int
    process_id: str
    kernel_name: str
    metrics: Dict[str, float] = field(default_factory=dict)

    @property
    def short_name(self) -> str:
        """The function name without its parameter list (and template arguments)."""
        name = re.sub(r"<.*>", "", self.kernel_name.split("(")[0]).strip()  # "void ns::k<T>(...)" -> "void ns::k"
        return name.split()[-1].split("::")[-1] if name else self.kernel_name


def _number(text: str) -> Optional[float]:
    text = text.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan", "-"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def to_base_unit(value: float, unit: str) -> float:
    u = unit.strip().lower()
    if u in _UNIT_SCALE:
        return value * _UNIT_SCALE[u]
    if u in ("", "cycle", "inst", "%"):
        return value
    raise FastgemmError(f"unknown ncu metric unit {unit!r}")


def parse_ncu_csv(text: str) -> List[NcuLaunch]:
    """Launches from `ncu --csv --metrics ...` output (one row per launch and metric).

    Accepts what ncu writes to stdout or to --log-file: ==PROF== lines and the profiled
    program's own output may precede the header row ("ID","Process ID",...,"Metric Value").
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"') and "Metric Name" in line), None)
    if start is None:
        raise FastgemmError("no ncu CSV header (\"ID\",...,\"Metric Name\",\"Metric Unit\",\"Metric Value\") found")
    reader = csv.DictReader(io.StringIO("\n".join(lines[start:])))
    launches: Dict[tuple, NcuLaunch] = {}
    for row in reader:
        lid = (row.get("ID") or "").strip()
        if not lid.isdigit():
            continue  # a stray ==PROF== line after the table
        key = (row.get("Process ID", ""), int(lid))
        launch = launches.get(key)
        if launch is None:
            launch = launches[key] = NcuLaunch(int(lid), row.get("Process ID", ""), row.get("Kernel Name", ""))
        value = _number(row.get("Metric Value", ""))
        if value is None:
            continue
        launch.metrics[row["Metric Name"]] = to_base_unit(value, row.get("Metric Unit", ""))
    return sorted(launches.values(), key=lambda l: (l.process_id, l.launch_id))


# --- one measurement -------------------------------------------------------------------------

@dataclass
class Measurement:
    kernel: str
    backend: str
    M: int
    N: int
    K: int
    dram_read_bytes: float
    dram_write_bytes: float
    gpu_time_s: float
    launches: List[str]
    gemms: int  # GEMM calls the counted launches were divided among
    tool: str
    model_flop_per_byte: Optional[float] = None
    gflops_timed: Optional[float] = None  # from an ordinary (unprofiled) timing, when there is one
    notes: List[str] = field(default_factory=list)

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K

    @property
    def bytes(self) -> float:
        return self.dram_read_bytes + self.dram_write_bytes

    @property
    def flop_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes > 0 else float("inf")

    @property
    def bandwidth_gbs(self) -> float:
        return self.bytes / self.gpu_time_s * 1e-9 if self.gpu_time_s > 0 else float("nan")

    @property
    def gflops_profiled(self) -> float:
        return self.flops / self.gpu_time_s * 1e-9 if self.gpu_time_s > 0 else float("nan")

    @property
    def gflops(self) -> float:
        """For the roofline: the ordinary timing when there is one, else the profiled time."""
        return self.gflops_timed if self.gflops_timed else self.gflops_profiled

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(flops=self.flops, bytes=self.bytes, flop_per_byte=self.flop_per_byte,
                 bandwidth_gbs=self.bandwidth_gbs, gflops_profiled=self.gflops_profiled, gflops=self.gflops)
        return d


def measurement_from_launches(launches: Sequence[NcuLaunch], kernel: str, backend: str, shape: Sequence[int],
                              gemms: Optional[int] = None, tool: str = "ncu") -> Measurement:
    """Sums the launches' DRAM bytes and GPU time and divides them among `gemms` GEMM calls
    (default: how often the most frequent kernel function was launched, i.e. one launch
    of it per GEMM)."""
    if not launches:
        raise FastgemmError("no kernel launches in the profile (was the kernel filter too narrow?)")
    missing = [m for m in NCU_METRICS if not any(m in l.metrics for l in launches)]
    if missing:
        raise FastgemmError(f"the profile lacks metric(s) {', '.join(missing)}")
    names = [l.short_name for l in launches]
    if gemms is None:
        gemms = max(names.count(n) for n in set(names))
    total = {m: sum(l.metrics.get(m, 0.0) for l in launches) for m in NCU_METRICS}
    M, N, K = (int(d) for d in shape)
    meas = Measurement(kernel=kernel, backend=backend, M=M, N=N, K=K,
                       dram_read_bytes=total["dram__bytes_read.sum"] / gemms,
                       dram_write_bytes=total["dram__bytes_write.sum"] / gemms,
                       gpu_time_s=total["gpu__time_duration.sum"] / gemms,
                       launches=sorted(set(names)), gemms=gemms, tool=tool)
    if gemms > 1 and len(launches) == gemms:
        meas.notes.append(f"mean over {gemms} launches (one per GEMM call)")
    elif len(launches) != gemms:
        meas.notes.append(f"{len(launches)} launches ({', '.join(sorted(set(names)))}) counted as {gemms} GEMM "
                          f"call(s)")
    return meas


def measurements_by_kernel_name(launches: Sequence[NcuLaunch], backend: str, shape: Sequence[int],
                                tool: str) -> List[Measurement]:
    """One measurement per kernel function in a saved profile (mean over its launches)."""
    groups: Dict[str, List[NcuLaunch]] = {}
    for l in launches:
        groups.setdefault(l.short_name, []).append(l)
    return [measurement_from_launches(g, name, backend, shape, gemms=len(g), tool=tool) for name, g in groups.items()]


# --- tools -----------------------------------------------------------------------------------

def find_ncu(explicit: Optional[str] = None) -> Optional[str]:
    if explicit:
        return explicit if (os.path.isfile(explicit) or shutil.which(explicit)) else None
    found = shutil.which("ncu")
    if found:
        return found
    for root in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"):
        if os.path.isfile(root):
            return root
    return None


def find_xctrace() -> Optional[List[str]]:
    """['xcrun', 'xctrace'] on a Mac with Xcode (or its command line tools), else None."""
    if platform.system() != "Darwin" or not shutil.which("xcrun"):
        return None
    probe = subprocess.run(["xcrun", "--find", "xctrace"], capture_output=True, text=True)
    return ["xcrun", "xctrace"] if probe.returncode == 0 else None


def run_under_ncu(ncu: str, child: List[str], kernel_regex: Optional[str] = None,
                  extra: Sequence[str] = ()) -> str:
    """Runs `child` under ncu and returns its CSV (written through --log-file, so the child's
    own stdout stays separate)."""
    with tempfile.TemporaryDirectory(prefix="fastgemm-ncu-") as tmp:
        log = os.path.join(tmp, "ncu.csv")
        cmd = [ncu, "--csv", "--log-file", log, "--metrics", ",".join(NCU_METRICS), "--target-processes", "all"]
        if kernel_regex:
            cmd += ["--kernel-name", f"regex:{kernel_regex}"]
        cmd += list(extra) + list(child)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        text = open(log).read() if os.path.exists(log) else ""
        if proc.returncode != 0 or '"Metric Name"' not in text:
            hint = ""
            if "ERR_NVGPUCTRPERM" in (proc.stdout + proc.stderr + text):
                hint = (" (the driver restricts GPU performance counters to administrators: run as root or set "
                        "NVreg_RestrictProfilingToAdminUsers=0)")
            raise FastgemmError(f"ncu failed (exit {proc.returncode}){hint}: "
                                f"{(proc.stderr or proc.stdout or text).strip()[-800:]}")
        return text


def record_xctrace(xctrace: List[str], child: List[str], trace_path: str, template: str) -> None:
    cmd = list(xctrace) + ["record", "--template", template, "--output", trace_path, "--target-stdout", "-",
                           "--launch", "--"] + list(child)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise FastgemmError(f"xctrace record failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}")


def _xctrace_table(xctrace: List[str], trace_path: str, schema: str) -> List[Dict[str, str]]:
    """Rows of one exported table, each a {column element tag: text} dict; xctrace writes a
    repeated value once with id= and later as ref= to it."""
    import xml.etree.ElementTree as ET

    xpath = f'/trace-toc/run[@number="1"]/data/table[@schema="{schema}"]'
    proc = subprocess.run(list(xctrace) + ["export", "--input", trace_path, "--xpath", xpath],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        return []
    root = ET.fromstring(proc.stdout)
    by_id: Dict[str, str] = {}
    rows = []
    for row in root.iter("row"):
        rec = {}
        for cell in row:
            if "ref" in cell.attrib:
                rec[cell.tag] = by_id.get(cell.attrib["ref"], "")
            else:
                text = cell.text or cell.attrib.get("fmt", "")
                if "id" in cell.attrib:
                    by_id[cell.attrib["id"]] = text
                rec[cell.tag] = text
        rows.append(rec)
    return rows


def xctrace_bandwidth_counters(xctrace: List[str], trace_path: str) -> Dict[str, float]:
    """Mean of the nonzero samples of each GPU counter whose name mentions bandwidth.

    Untested: written to the documented export command and the table schemas
    gpu-counter-info / gpu-counter-value; no Mac was available to check the output.
    """
    info = _xctrace_table(xctrace, trace_path, "gpu-counter-info")
    values = _xctrace_table(xctrace, trace_path, "gpu-counter-value")
    names = {}
    for r in info:
        cid = r.get("uint32") or r.get("counter-id")
        name = r.get("gpu-counter-name") or r.get("string") or r.get("name")
        if cid and name:
            names[cid] = name
    sums: Dict[str, List[float]] = {}
    for r in values:
        cid = r.get("uint32") or r.get("counter-id")
        name = names.get(cid or "")
        if not name or "bandwidth" not in name.lower():
            continue
        v = _number(r.get("fixed-decimal") or r.get("value") or "")
        if v:
            sums.setdefault(name, []).append(v)
    return {n: sum(v) / len(v) for n, v in sums.items()}


# --- reports ---------------------------------------------------------------------------------

def model_intensity(backend: str, kernel: str, M: int, N: int, K: int) -> Optional[float]:
    """The no-cache model's FLOP/byte for a registered kernel (None when it is not one)."""
    from . import roofline

    try:
        info = _fastgemm.kernel_info(backend, kernel)
    except FastgemmError:
        return None
    return roofline.no_cache_intensity(info, M, N, K).flop_per_byte


def report_text(measurements: Sequence[Measurement]) -> str:
    from . import roofline

    head = (f"{'kernel':<28} {'DRAM read MB':>13} {'write MB':>10} {'GPU ms':>9} {'FLOP/byte':>10} "
            f"{'model':>8} {'GB/s':>9} {'GFLOP/s':>10} {'roof':>10}")
    lines = [head, "-" * len(head)]
    notes = []
    for m in measurements:
        c = roofline.cached_ceilings(m.backend) if m.backend in {b.name for b in _fastgemm.backends()
                                                                 if b.available} else None
        roof = f"{roofline.roof(c, m.flop_per_byte):10.1f}" if c else f"{'-':>10}"
        model = f"{m.model_flop_per_byte:8.2f}" if m.model_flop_per_byte else f"{'-':>8}"
        lines.append(f"{m.kernel:<28} {m.dram_read_bytes / 1e6:13.2f} {m.dram_write_bytes / 1e6:10.2f} "
                     f"{m.gpu_time_s * 1e3:9.3f} {m.flop_per_byte:10.2f} {model} {m.bandwidth_gbs:9.1f} "
                     f"{m.gflops:10.1f} {roof}")
        notes.extend(f"{m.kernel}: {n}" for n in m.notes)
        if m.gflops_timed:
            notes.append(f"{m.kernel}: GFLOP/s from an unprofiled timing ({m.gflops_timed:.1f}); under the profiler "
                         f"{m.gflops_profiled:.1f}")
    lines.append("FLOP/byte: 2MNK / measured DRAM bytes (read + write); model: the no-cache intensity "
                 "(roofline.no_cache_intensity); GB/s: measured bytes / profiled GPU time; roof: min(peak, "
                 "intensity x bandwidth) from this machine's probes")
    lines.extend(f"note: {n}" for n in notes)
    return "\n".join(lines)


def parse_measurements(text: str, source: str = "measurements") -> List[dict]:
    """Records {kernel, flop_per_byte, gflops, ...} from `fastgemm profile --json` output
    (the input of `fastgemm roofline --measured`); FastgemmError names what is wrong."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise FastgemmError(f"{source}: not JSON ({e})") from None
    except RecursionError:
        raise FastgemmError(f"{source}: not a measurements file (nested too deeply to read)") from None
    recs = doc.get("measurements") if isinstance(doc, dict) else doc
    if not isinstance(recs, list):
        raise FastgemmError(f"{source}: expected a `fastgemm profile --json` file (a 'measurements' list)")
    out = []
    for i, r in enumerate(recs):
        if not isinstance(r, dict) or not all(k in r for k in ("kernel", "flop_per_byte", "gflops")):
            raise FastgemmError(f"{source}: measurement {i} lacks kernel, flop_per_byte or gflops: {str(r)[:200]}")
        if not all(isinstance(r[k], (int, float)) and not isinstance(r[k], bool) and 0 < r[k] < math.inf
                   for k in ("flop_per_byte", "gflops")):
            raise FastgemmError(f"{source}: measurement {i} ({r['kernel']}) needs positive, finite flop_per_byte "
                                f"and gflops")
        out.append(r)
    return out


def load_measurements(path) -> List[dict]:
    """parse_measurements of a file."""
    with open(path) as f:
        return parse_measurements(f.read(), str(path))

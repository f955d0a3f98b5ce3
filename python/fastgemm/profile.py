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


# --- the command -----------------------------------------------------------------------------

def _owning_backend(kernel: str, wanted: str) -> Optional[str]:
    status = {b.name: b for b in _fastgemm.backends()}
    order = [wanted] if wanted != "auto" else ["cuda", "metal", "cpu", "metal-emu"]
    for be in order:
        if be in status and status[be].available and any(k.name == kernel for k in _fastgemm.kernels(be)):
            return be
    return None


def _model(backend: str, kernel: str, M: int, N: int, K: int) -> Optional[float]:
    from . import roofline

    try:
        info = _fastgemm.kernel_info(backend, kernel)
    except Exception:
        return None
    return roofline.no_cache_intensity(info, M, N, K).flop_per_byte


def _missing_tool_message(kernel: str, backend: Optional[str], wanted: str) -> str:
    status = {b.name: b for b in _fastgemm.backends()}
    ncu = find_ncu()
    xct = find_xctrace()
    lines = []
    if backend is None:
        where = wanted if wanted != "auto" else "any available backend"
        lines.append(f"kernel '{kernel}' is not registered on {where} here.")
        for be in ("cuda", "metal"):
            if be in status and not status[be].available:
                lines.append(f"  backend {be}: unavailable ({status[be].reason})")
    elif backend in ("cpu", "metal-emu"):
        lines.append(f"'{kernel}' runs on backend {backend}: fastgemm profile measures GPU device-memory traffic "
                     f"(Nsight Compute on CUDA, Instruments on Apple GPUs) and has no CPU counter integration "
                     f"(on Linux, `perf stat` can count last-level-cache misses of a CPU run).")
    ncu_text = ncu or "not found (install the CUDA toolkit or Nsight Compute; --ncu PATH)"
    lines.append(f"  Nsight Compute (ncu): {ncu_text}")
    xct_text = "found" if xct else "not available (macOS with Xcode only)"
    lines.append(f"  Instruments (xcrun xctrace): {xct_text}")
    lines.append("  A saved `ncu --csv` profile can still be read: fastgemm profile [KERNEL] --from-csv FILE --size N")
    return "\n".join(lines)


def cmd_profile(args) -> int:
    shape = args.shape if args.shape else (args.size, args.size, args.size)
    M, N, K = shape
    measurements: List[Measurement] = []
    if args.from_csv:
        text = open(args.from_csv).read()
        launches = parse_ncu_csv(text)
        if args.kernel_regex:
            launches = [l for l in launches if re.search(args.kernel_regex, l.kernel_name)]
        backend = args.backend if args.backend != "auto" else "cuda"
        tool = f"ncu csv {os.path.basename(args.from_csv)}"
        if args.kernel:
            m = measurement_from_launches(launches, args.kernel, backend, shape, gemms=args.gemms, tool=tool)
            m.model_flop_per_byte = _model(backend, args.kernel, M, N, K)
            measurements.append(m)
        else:
            measurements = measurements_by_kernel_name(launches, backend, shape, tool)
        print(f"fastgemm profile · {args.from_csv} · {M}x{N}x{K} "
              f"(the shape the profile was taken at: --size/--shape)")
    else:
        if not args.kernel:
            raise FastgemmError("name a kernel to profile (or read a saved profile with --from-csv)")
        backend = _owning_backend(args.kernel, args.backend)
        if backend in (None, "cpu", "metal-emu"):
            model = _model(backend, args.kernel, M, N, K) if backend else None
            if model is not None:
                print(f"{args.kernel} on {backend}, {M}x{N}x{K}: no-cache model {model:.3f} FLOP/byte")
            raise ProfilerUnavailable("cannot profile here:\n"
                                      + _missing_tool_message(args.kernel, backend, args.backend))
        from . import stability

        # Exactly one GEMM call in the child: no verification, no warm-up.
        child = stability.run_once_command(backend, args.kernel, shape, warmup=0, iters=1, verify=False,
                                           seed=args.seed)
        if backend == "cuda":
            ncu = find_ncu(args.ncu)
            if not ncu:
                raise ProfilerUnavailable("cannot profile here:\n" + _missing_tool_message(args.kernel, backend,
                                                                                           args.backend))
            text = run_under_ncu(ncu, child, args.kernel_regex, extra=args.ncu_arg or ())
            if args.save_csv:
                with open(args.save_csv, "w") as f:
                    f.write(text)
            m = measurement_from_launches(parse_ncu_csv(text), args.kernel, backend, shape, gemms=1,
                                          tool=f"ncu ({ncu})")
            m.notes.append("ncu defaults: caches flushed before the kernel, clocks locked at base")
        elif backend == "metal":
            xct = find_xctrace()
            if not xct:
                raise ProfilerUnavailable("cannot profile here:\n" + _missing_tool_message(args.kernel, backend,
                                                                                           args.backend))
            m = _profile_metal(xct, args, backend, shape)
        else:
            raise ProfilerUnavailable(f"no profiler integration for backend {backend}")
        m.model_flop_per_byte = _model(backend, args.kernel, M, N, K)
        if not args.no_timing:
            from . import api

            r = api.benchmark(args.kernel, M, N, K, backend=backend, warmup=2, iters=args.iters, verify=False)
            m.gflops_timed = r.gflops
        measurements.append(m)
        print(f"fastgemm profile · {args.kernel} · backend {backend} · {M}x{N}x{K}")
    print(report_text(measurements))
    if args.json:
        from . import report

        doc = {"machine": report.machine_record(measurements[0].backend if measurements else "cpu"),
               "measurements": [m.to_dict() for m in measurements]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"measurements written to {args.json} (fastgemm roofline --measured {args.json})")
    return 0


def _profile_metal(xct: List[str], args, backend: str, shape) -> Measurement:
    """Records the child under Instruments and estimates bytes as bandwidth x GPU time
    (seed 004's method). Untested here (no macOS)."""
    from . import stability

    template = args.xctrace_template or "Metal System Trace"
    trace = args.trace_out or os.path.join(tempfile.mkdtemp(prefix="fastgemm-xctrace-"), "profile.trace")
    timed = stability.run_once_command(backend, args.kernel, shape, warmup=2, iters=args.iters, verify=False,
                                       seed=args.seed)
    record_xctrace(xct, timed, trace, template)
    counters = xctrace_bandwidth_counters(xct, trace)
    proc = subprocess.run(timed, capture_output=True, text=True)
    rec = stability.parse_run_once_output(proc.stdout)
    gpu_s = min(rec["device_s"])
    read = next((v for n, v in counters.items() if "read" in n.lower()), None)
    write = next((v for n, v in counters.items() if "write" in n.lower()), None)
    if read is None:
        raise ProfilerUnavailable(
            f"trace recorded at {trace}, but it holds no GPU bandwidth counter. The '{template}' template records "
            f"counters only when a counter set is chosen in it; xctrace has no option for that. In Instruments, "
            f"choose the Metal System Trace template, pick a counter set with GPU Read Bandwidth (e.g. Performance "
            f"Limiters), save it as a template, and pass it with --xctrace-template PATH.")
    # Bandwidth counters are rates in GB/s: bytes = rate x GPU time (seed 004, "method").
    m = Measurement(kernel=args.kernel, backend=backend, M=shape[0], N=shape[1], K=shape[2],
                    dram_read_bytes=read * 1e9 * gpu_s, dram_write_bytes=(write or 0.0) * 1e9 * gpu_s,
                    gpu_time_s=gpu_s, launches=[args.kernel], gemms=1, tool=f"xctrace ({template})")
    m.notes.append(f"trace {trace}; counters averaged over nonzero samples: "
                   + ", ".join(f"{n} {v:.1f}" for n, v in counters.items()))
    m.notes.append("GPU counters are sampled for the whole GPU, not per kernel: keep the machine idle")
    return m


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


def load_measurements(path) -> List[dict]:
    """Records {kernel, flop_per_byte, gflops, ...} from `fastgemm profile --json` output
    (the input of `fastgemm roofline --measured`)."""
    with open(path) as f:
        doc = json.load(f)
    recs = doc.get("measurements", []) if isinstance(doc, dict) else doc
    out = []
    for r in recs:
        if not all(k in r for k in ("kernel", "flop_per_byte", "gflops")):
            raise FastgemmError(f"{path}: a measurement lacks kernel, flop_per_byte or gflops: {r}")
        out.append(r)
    return out


def add_parser(sub) -> None:
    from .cli import parse_shape, positive_int

    p = sub.add_parser("profile", help="measured DRAM traffic and intensity from GPU counters (ncu / xctrace)")
    p.add_argument("kernel", nargs="?", help="kernel name (optional with --from-csv: then one row per kernel "
                                             "function in the file)")
    p.add_argument("--backend", default="auto", help="cuda, metal or auto (the backend that has the kernel)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--size", type=positive_int, default=4096, help="square size (default 4096, the seeds' GPU problem)")
    g.add_argument("--shape", type=parse_shape, help="MxNxK")
    p.add_argument("--iters", type=positive_int, default=5, help="iterations of the unprofiled timing")
    p.add_argument("--seed", type=lambda s: int(s, 0), default=0x5EED)
    p.add_argument("--no-timing", action="store_true", help="skip the unprofiled timing (GFLOP/s from the profile)")
    p.add_argument("--ncu", help="path of the ncu executable (default: PATH, then /usr/local/cuda/bin)")
    p.add_argument("--ncu-arg", action="append",
                   help="extra argument for ncu (repeatable), e.g. --ncu-arg=--clock-control=none")
    p.add_argument("--kernel-regex", help="count only launches whose CUDA function name matches")
    p.add_argument("--save-csv", help="also keep ncu's raw CSV here")
    p.add_argument("--from-csv", help="read a saved `ncu --csv --metrics ...` output instead of running ncu")
    p.add_argument("--gemms", type=positive_int,
                   help="with --from-csv and a kernel: GEMM calls in the file (default: launches of its most "
                        "frequent function)")
    p.add_argument("--xctrace-template", help="Instruments template (name or path) with a GPU counter set")
    p.add_argument("--trace-out", help="where to keep the .trace (macOS)")
    p.add_argument("--json", help="write the measurements here (input of fastgemm roofline --measured)")
    p.set_defaults(func=cmd_profile)

"""`fastgemm profile KERNEL`: measured DRAM traffic from GPU counters (Nsight Compute on
CUDA, Instruments on Apple GPUs), or a saved `ncu --csv` profile read back. The
counting and parsing live in fastgemm.profile; this module is the command around them.
The kernel runs in a child process (cli.child) under the profiler."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from typing import List

from .. import _fastgemm, api, profile, report
from ..errors import FastgemmError
from . import child
from .common import (UsageError, add_backend_option, add_problem_options, backend_of_kernel, check_output_file,
                     check_output_folder, description, iteration_count, positive_int, read_input_file, seed, shape_of)


def _regex(text: str):
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"not a regular expression ({e}): {text!r}") from None
    return text


def add_parser(sub) -> None:
    p = sub.add_parser("profile", help="measured DRAM traffic and intensity from GPU counters (ncu / xctrace)",
                       description=description(__doc__))
    p.add_argument("kernel", nargs="?", help="kernel name (optional with --from-csv: then one row per kernel "
                                             "function in the file)")
    add_backend_option(p, help="cuda, metal, or auto: the backend that has the kernel (default: %(default)s)")
    add_problem_options(p, default_size=4096)
    p.add_argument("--iters", type=iteration_count, default=5,
                   help="iterations of the unprofiled timing (default: %(default)s)")
    p.add_argument("--seed", type=seed, default=0x5EED, help="seed of the random inputs (default: 0x5eed)")
    p.add_argument("--no-timing", action="store_true", help="skip the unprofiled timing (GFLOP/s from the profile)")
    p.add_argument("--ncu", help="path of the ncu executable (default: PATH, then /usr/local/cuda/bin)")
    p.add_argument("--ncu-arg", action="append",
                   help="extra argument for ncu (repeatable), e.g. --ncu-arg=--clock-control=none")
    p.add_argument("--kernel-regex", type=_regex, help="count only launches whose CUDA function name matches")
    p.add_argument("--save-csv", help="also keep ncu's raw CSV here")
    p.add_argument("--from-csv", help="read a saved `ncu --csv --metrics ...` output instead of running ncu")
    p.add_argument("--gemms", type=positive_int,
                   help="with --from-csv and a kernel: GEMM calls in the file (default: launches of its most "
                        "frequent function)")
    p.add_argument("--xctrace-template", help="Instruments template (name or path) with a GPU counter set")
    p.add_argument("--trace-out", help="where to keep the .trace (macOS)")
    p.add_argument("--json", help="write the measurements here (input of fastgemm roofline --measured)")
    p.set_defaults(func=run)


def _missing_tool_message(kernel: str, backend, wanted: str) -> str:
    status = {b.name: b for b in _fastgemm.backends()}
    ncu = profile.find_ncu()
    xct = profile.find_xctrace()
    parts = []
    if backend is None:
        where = wanted if wanted != "auto" else "any available backend"
        parts.append(f"kernel '{kernel}' is not registered on {where} here")
        for be in ("cuda", "metal"):
            if be in status and not status[be].available:
                parts.append(f"backend {be}: unavailable ({status[be].reason})")
    elif backend in ("cpu", "metal-emu"):
        parts.append(f"'{kernel}' runs on backend {backend}: fastgemm profile measures GPU device-memory traffic "
                     f"(Nsight Compute on CUDA, Instruments on Apple GPUs) and has no CPU counter integration "
                     f"(on Linux, `perf stat` can count last-level-cache misses of a CPU run)")
    parts.append(f"Nsight Compute (ncu): {ncu or 'not found (install the CUDA toolkit or Nsight Compute; --ncu PATH)'}")
    parts.append(f"Instruments (xcrun xctrace): {'found' if xct else 'not available (macOS with Xcode only)'}")
    parts.append("a saved `ncu --csv` profile can still be read: fastgemm profile [KERNEL] --from-csv FILE --size N")
    return "; ".join(parts)


def _from_csv(args, shape) -> List[profile.Measurement]:
    M, N, K = shape
    text = read_input_file(args.from_csv, "--from-csv")
    try:
        launches = profile.parse_ncu_csv(text)
        if args.kernel_regex:
            launches = [l for l in launches if re.search(args.kernel_regex, l.kernel_name)]
        backend = args.backend if args.backend != "auto" else "cuda"
        tool = f"ncu csv {os.path.basename(args.from_csv)}"
        if args.kernel:
            m = profile.measurement_from_launches(launches, args.kernel, backend, shape, gemms=args.gemms, tool=tool)
            m.model_flop_per_byte = profile.model_intensity(backend, args.kernel, M, N, K)
            return [m]
        found = profile.measurements_by_kernel_name(launches, backend, shape, tool)
    except FastgemmError as e:
        raise UsageError(f"--from-csv {args.from_csv}: {e}") from None
    if not found:
        raise UsageError(f"--from-csv {args.from_csv}: no kernel launches"
                         + (f" match --kernel-regex {args.kernel_regex!r}" if args.kernel_regex else ""))
    return found


def _profile_metal(xct: List[str], args, backend: str, shape) -> profile.Measurement:
    """Records the child under Instruments and estimates bytes as bandwidth x GPU time
    (seed 004's method). Untested here (no macOS)."""
    template = args.xctrace_template or "Metal System Trace"
    trace = args.trace_out or os.path.join(tempfile.mkdtemp(prefix="fastgemm-xctrace-"), "profile.trace")
    timed = child.command(backend, args.kernel, shape, warmup=2, iters=args.iters, verify=False, seed=args.seed)
    profile.record_xctrace(xct, timed, trace, template)
    counters = profile.xctrace_bandwidth_counters(xct, trace)
    proc = subprocess.run(timed, capture_output=True, text=True)
    rec = child.parse_output(proc.stdout)
    gpu_s = min(rec["device_s"])
    read = next((v for n, v in counters.items() if "read" in n.lower()), None)
    write = next((v for n, v in counters.items() if "write" in n.lower()), None)
    if read is None:
        raise profile.ProfilerUnavailable(
            f"trace recorded at {trace}, but it holds no GPU bandwidth counter. The '{template}' template records "
            f"counters only when a counter set is chosen in it; xctrace has no option for that. In Instruments, "
            f"choose the Metal System Trace template, pick a counter set with GPU Read Bandwidth (e.g. Performance "
            f"Limiters), save it as a template, and pass it with --xctrace-template PATH.")
    # Bandwidth counters are rates in GB/s: bytes = rate x GPU time (seed 004, "method").
    m = profile.Measurement(kernel=args.kernel, backend=backend, M=shape[0], N=shape[1], K=shape[2],
                            dram_read_bytes=read * 1e9 * gpu_s, dram_write_bytes=(write or 0.0) * 1e9 * gpu_s,
                            gpu_time_s=gpu_s, launches=[args.kernel], gemms=1, tool=f"xctrace ({template})")
    m.notes.append(f"trace {trace}; counters averaged over nonzero samples: "
                   + ", ".join(f"{n} {v:.1f}" for n, v in counters.items()))
    m.notes.append("GPU counters are sampled for the whole GPU, not per kernel: keep the machine idle")
    return m


def _profile_kernel(args, shape) -> profile.Measurement:
    M, N, K = shape
    backend = backend_of_kernel(args.kernel, args.backend)
    if backend in (None, "cpu", "metal-emu"):
        model = profile.model_intensity(backend, args.kernel, M, N, K) if backend else None
        if model is not None:
            print(f"{args.kernel} on {backend}, {M}x{N}x{K}: no-cache model {model:.3f} FLOP/byte")
        raise profile.ProfilerUnavailable("cannot profile here: " + _missing_tool_message(args.kernel, backend,
                                                                                          args.backend))
    # Exactly one GEMM call in the child: no verification, no warm-up.
    one_call = child.command(backend, args.kernel, shape, warmup=0, iters=1, verify=False, seed=args.seed)
    if backend == "cuda":
        ncu = profile.find_ncu(args.ncu)
        if not ncu:
            raise profile.ProfilerUnavailable("cannot profile here: " + _missing_tool_message(args.kernel, backend,
                                                                                              args.backend))
        text = profile.run_under_ncu(ncu, one_call, args.kernel_regex, extra=args.ncu_arg or ())
        if args.save_csv:
            report.write_text(args.save_csv, text)
        m = profile.measurement_from_launches(profile.parse_ncu_csv(text), args.kernel, backend, shape, gemms=1,
                                              tool=f"ncu ({ncu})")
        m.notes.append("ncu defaults: caches flushed before the kernel, clocks locked at base")
    elif backend == "metal":
        xct = profile.find_xctrace()
        if not xct:
            raise profile.ProfilerUnavailable("cannot profile here: " + _missing_tool_message(args.kernel, backend,
                                                                                              args.backend))
        m = _profile_metal(xct, args, backend, shape)
    else:
        raise profile.ProfilerUnavailable(f"no profiler integration for backend {backend}")
    m.model_flop_per_byte = profile.model_intensity(backend, args.kernel, M, N, K)
    if not args.no_timing:
        r = api.benchmark(args.kernel, M, N, K, backend=backend, warmup=2, iters=args.iters, verify=False)
        m.gflops_timed = r.gflops
    return m


def run(args) -> int:
    shape = shape_of(args)
    M, N, K = shape
    check_output_file(args.json, "--json")
    check_output_file(args.save_csv, "--save-csv")
    if args.trace_out:
        check_output_folder(os.path.dirname(os.path.abspath(args.trace_out)), "--trace-out")
    if args.from_csv:
        measurements = _from_csv(args, shape)
        print(f"fastgemm profile · {args.from_csv} · {M}x{N}x{K} "
              f"(the shape the profile was taken at: --size/--shape)")
    else:
        if not args.kernel:
            raise UsageError("name a kernel to profile (or read a saved profile with --from-csv)")
        measurements = [_profile_kernel(args, shape)]
        print(f"fastgemm profile · {args.kernel} · backend {measurements[0].backend} · {M}x{N}x{K}")
    print(profile.report_text(measurements))
    if args.json:
        doc = {"machine": report.machine_record(measurements[0].backend if measurements else "cpu"),
               "measurements": [m.to_dict() for m in measurements]}
        report.write_json_document(args.json, doc)
        print(f"measurements written to {args.json} (fastgemm roofline --measured {args.json})")
    return 0

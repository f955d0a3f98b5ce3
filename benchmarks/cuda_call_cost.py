"""Where a small or mid cuda call spends its time: per shape, each candidate kernel run
through the user's call (fastgemm.sgemm on torch tensors, kernel named) and torch.matmul,
as a loop of back-to-back calls.

    python benchmarks/cuda_call_cost.py [--shapes 512x512x512,768x768x768NT,...] [--json out.json]

Per kernel and shape it prints three times, in microseconds a call:
- loop: a loop of calls between two CUDA events (what a Python loop of calls costs; the
  shape suite's measure),
- host: the same loop on the host clock, before the final synchronisation (the Python
  entry and the launches; when it is close to `loop`, the call is bound by the host),
- kernel: the kernel's own device time from the native timer (fastgemm.benchmark).
A kernel whose host time exceeds its kernel time gains nothing from a faster kernel:
its launch sequence is what to shorten.

With --host-arrays it times the numpy-array path instead: fastgemm.sgemm with backend
"auto" (and what it picked), "cpu" and "cuda", against numpy's matmul, per call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

DEFAULT_SHAPES = ("256x256x256,512x512x512,768x768x768NT,1024x1024x1024,33x65x129,32x1024x4096NT,"
                  "8x4096x4096NT,16384x64x1024,64x14336x4096NT")


def parse_shape(text: str):
    """'MxNxK' with an optional transpose suffix NN, NT, TN or TT."""
    op = "NN"
    if text[-2:].upper() in ("NN", "NT", "TN", "TT"):
        text, op = text[:-2], text[-2:].upper()
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k, op[0] == "T", op[1] == "T"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="comma-separated MxNxK[op]")
    ap.add_argument("--calls", type=int, default=200, help="calls per timed loop")
    ap.add_argument("--json", default="", help="write the rows here")
    ap.add_argument("--host-arrays", action="store_true", help="time the numpy-array path instead")
    args = ap.parse_args(argv)
    if args.host_arrays:
        return host_arrays(args)

    import torch

    import fastgemm

    if not torch.cuda.is_available():
        print("cuda_call_cost: PyTorch sees no CUDA GPU")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for spec in args.shapes.split(","):
        M, N, K, ta, tb = parse_shape(spec.strip())
        g = torch.Generator(device="cuda").manual_seed(M + N + K)
        A = torch.rand((K, M) if ta else (M, K), device="cuda", generator=g) * 2 - 1
        B = torch.rand((N, K) if tb else (K, N), device="cuda", generator=g) * 2 - 1
        opA, opB = (A.t() if ta else A), (B.t() if tb else B)
        C = torch.empty((M, N), device="cuda")
        ref = opA.double() @ opB.double()

        def measure(fn):
            fn()
            torch.cuda.synchronize()
            loops, hosts = [], []
            for _ in range(3):
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    fn()
                host = time.perf_counter() - t0
                stop.record()
                stop.synchronize()
                loops.append(start.elapsed_time(stop) * 1e3 / args.calls)
                hosts.append(host * 1e6 / args.calls)
            return statistics.median(loops), statistics.median(hosts)

        names = ["auto", "cublas"] + [k.name for k in fastgemm.kernels("cuda")
                                      if k.auto_candidate and not k.baseline and k.precision != "tf32"
                                      and k.accepts(M, N, K, ta, tb, 1.0, 0.0)]
        label = f"{M}x{N}x{K} {'T' if ta else 'N'}{'T' if tb else 'N'}"
        loop, host = measure(lambda: torch.matmul(opA, opB, out=C))
        print(f"{label:24s} torch.matmul{'':24s} loop {loop:8.1f} host {host:7.1f}", flush=True)
        rows.append(dict(shape=label, kernel="torch.matmul", loop_us=loop, host_us=host))
        for name in names:
            try:
                fn = lambda: fastgemm.sgemm(A, B, C, trans_a=ta, trans_b=tb, kernel=name)  # noqa: E731
                loop, host = measure(fn)
                err = ((C.double() - ref).norm() / ref.norm()).item()
                picked = fastgemm._fastgemm.cuda_sgemm(
                    name, M, N, K, A.data_ptr(), A.stride(0), B.data_ptr(), B.stride(0), C.data_ptr(),
                    C.stride(0), ta, tb, 1.0, 0.0, torch.cuda.current_stream().cuda_stream, C.device.index)
                kernel_us = None
                if name != "auto":
                    r = fastgemm.benchmark(name, M, N, K, backend="cuda", trans_a=ta, trans_b=tb, warmup=2,
                                           iters=10, max_seconds=0.2)
                    kernel_us = r.device_median * 1e6
            except Exception as e:  # noqa: BLE001 - one kernel's failure must not end the run
                print(f"{label:24s} {name:36s} {type(e).__name__}: {e}", flush=True)
                continue
            k_text = f"{kernel_us:8.1f}" if kernel_us is not None else "       -"
            print(f"{label:24s} {name + ('=' + picked if name == 'auto' else ''):36s} loop {loop:8.1f} "
                  f"host {host:7.1f} kernel {k_text} err {err:.1e}", flush=True)
            rows.append(dict(shape=label, kernel=name, picked=picked, loop_us=loop, host_us=host,
                             kernel_us=kernel_us, rel_err=err))
        del A, B, C, ref
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), f, indent=1)
    return 0


def host_arrays(args) -> int:
    import numpy as np

    import fastgemm

    def per_call_us(fn, reps=20):
        fn()
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            best.append((time.perf_counter() - t0) * 1e6 / reps)
        return statistics.median(best)

    rows = []
    rng = np.random.default_rng(1)
    for spec in args.shapes.split(","):
        M, N, K, ta, tb = parse_shape(spec.strip())
        A = rng.uniform(-1, 1, (K, M) if ta else (M, K)).astype(np.float32)
        B = rng.uniform(-1, 1, (N, K) if tb else (K, N)).astype(np.float32)
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        C = np.empty((M, N), np.float32)
        label = f"{M}x{N}x{K} {'T' if ta else 'N'}{'T' if tb else 'N'}"
        row = dict(shape=label, numpy_us=per_call_us(lambda: np.matmul(opA, opB, out=C)))
        for backend in ("auto", "cpu", "cuda"):
            row[f"{backend}_us"] = per_call_us(
                lambda: fastgemm.sgemm(A, B, C, trans_a=ta, trans_b=tb, backend=backend))
            key = fastgemm._fastgemm.shape_class(backend, M, N, K, ta, tb)
            row[f"{backend}_pick"] = fastgemm.autotune.table().get(key, "?")
        print(f"{label:24s} numpy {row['numpy_us']:9.1f}  " + "  ".join(
            f"{b} {row[b + '_us']:9.1f} {row[b + '_pick']}" for b in ("auto", "cpu", "cuda")), flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, rejections=list(fastgemm.autotune.rejections())), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The cuda backend over a suite of shapes users call, against the libraries they would call.

    python benchmarks/cuda_shapes.py [--quick] [--json out.json] [--iters 5] [--max-minutes 9]
    python benchmarks/cuda_shapes.py --merge part1.json part2.json --json suite.json

Assumes the package is installed with the cuda backend and PyTorch with CUDA is present
(the user-facing comparison is against torch). Per shape, in one process and one run:

- native device times (CUDA events, median after warm-up, each kernel verified against
  float64 first) of cuBLAS SGEMM, cuBLAS TF32 and the best kernel of each family:
  strict fp32 (FFMA), tf32, fp32x3 and fp32_ozaki (the Ozaki rung), among the kernels
  that may win somewhere;
- fastgemm.sgemm(kernel="auto") on torch CUDA tensors, timed per call with CUDA events
  around the user-facing call, against torch.matmul with TF32 off; which kernel auto
  picked; both results' relative error against float64;
- fastgemm.sgemm on numpy arrays against numpy and torch's copy + matmul + copy (host
  clock, whole calls), for shapes up to --numpy-max-gflop;
- for memory-bound shapes (M or N at most 16), the bytes they must move over the time,
  as a percentage of the device copy bandwidth measured at the start of the run.

Ratios are the other library's time over fastgemm's (> 1: fastgemm is faster). The run
ends with the geomeans and the worst shapes of each ratio. --json writes every row:
label, M, N, K, trans_a, trans_b, and per library its time, GFLOP/s, relative error
(and kernel), plus the ratios.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional

MEMORY_BOUND_MAX = 16  # M or N at most this: the shape is bound by the bytes it moves


@dataclass(frozen=True)
class Shape:
    label: str
    category: str
    M: int
    N: int
    K: int
    trans_a: bool = False
    trans_b: bool = False

    @property
    def op(self) -> str:
        return ("T" if self.trans_a else "N") + ("T" if self.trans_b else "N")

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K

    @property
    def memory_bound(self) -> bool:
        return min(self.M, self.N) <= MEMORY_BOUND_MAX

    @property
    def min_bytes(self) -> int:
        """What the problem must move at least: A and B read once, C written once."""
        return 4 * (self.M * self.K + self.K * self.N + self.M * self.N)


def _linear(label: str, category: str, tokens: int, out_features: int, in_features: int) -> Shape:
    """y = x @ W^T with W stored out x in (PyTorch Linear): M tokens, N out, K in, trans_b."""
    return Shape(label, category, tokens, out_features, in_features, False, True)


def suite(quick: bool = False) -> List[Shape]:
    """The public shape suite: LLM inference and training, K-heavy, tall-skinny, small
    squares, odd sizes, every transpose. --quick keeps one or two of each kind."""
    s = [
        # Decode steps and small batches through Linear layers (7B-class: hidden 4096,
        # MLP 11008 / 14336, GQA key-value width 1024).
        _linear("decode qkv", "inference", 1, 4096, 4096),
        _linear("decode mlp up", "inference", 1, 11008, 4096),
        _linear("decode mlp down", "inference", 1, 4096, 11008),
        _linear("batch 8 proj", "inference", 8, 4096, 4096),
        _linear("batch 16 proj", "inference", 16, 4096, 4096),
        _linear("batch 32 kv proj", "inference", 32, 1024, 4096),
        _linear("batch 64 mlp up", "inference", 64, 14336, 4096),
        _linear("lm head 16", "inference", 16, 16384, 4096),
        # Prefill.
        _linear("prefill 128", "inference", 128, 4096, 4096),
        _linear("prefill 512 mlp", "inference", 512, 11008, 4096),
        _linear("prefill 2048", "inference", 2048, 4096, 4096),
        _linear("prefill 4096 mlp", "inference", 4096, 14336, 4096),
        _linear("prefill 8192", "inference", 8192, 4096, 4096),
        # Training: forward (NT), input gradient dX = dY W (NN), weight gradient
        # dW = dY^T X (TN, K = tokens), and the TT combination.
        _linear("train fwd", "training", 4096, 4096, 4096),
        Shape("train dX", "training", 4096, 4096, 11008),
        Shape("train dW", "training", 4096, 11008, 4096, True, False),
        Shape("train dW long", "training", 1024, 4096, 16384, True, False),
        Shape("train TT", "training", 2048, 4096, 4096, True, True),
        # K much larger than M x N needs to fill the GPU.
        Shape("K-heavy 256", "K-heavy", 256, 256, 65536),
        Shape("K-heavy 512", "K-heavy", 512, 512, 32768),
        Shape("K-heavy 1024", "K-heavy", 1024, 1024, 16384),
        Shape("K-heavy NT", "K-heavy", 384, 640, 16384, False, True),
        # Tall and skinny.
        Shape("tall N=1", "tall-skinny", 16384, 1, 4096),
        Shape("tall N=16", "tall-skinny", 8192, 16, 4096),
        Shape("tall N=64", "tall-skinny", 16384, 64, 1024),
        Shape("wide M=4 TN", "tall-skinny", 4, 8192, 2048, True, False),
        # Small and mid squares, every transpose at 1024.
        Shape("square 256", "square", 256, 256, 256),
        Shape("square 512", "square", 512, 512, 512),
        Shape("square 1024", "square", 1024, 1024, 1024),
        Shape("square 1024 NT", "square", 1024, 1024, 1024, False, True),
        Shape("square 1024 TN", "square", 1024, 1024, 1024, True, False),
        Shape("square 1024 TT", "square", 1024, 1024, 1024, True, True),
        Shape("square 2048", "square", 2048, 2048, 2048),
        Shape("square 4096", "square", 4096, 4096, 4096),
        # Odd sizes: primes and off-by-one.
        Shape("primes 997", "odd", 997, 1009, 1013),
        Shape("primes 2039", "odd", 2039, 2053, 2063, False, True),
        Shape("off-by-one 1023", "odd", 1023, 1023, 1023),
        Shape("off-by-one 1025", "odd", 1025, 1025, 1025, True, False),
        Shape("off-by-one 4097", "odd", 4097, 4095, 4097),
        Shape("tiny odd", "odd", 33, 65, 129),
    ]
    if quick:
        keep = {"decode qkv", "batch 16 proj", "prefill 512 mlp", "train dW", "K-heavy 256", "K-heavy 1024",
                "tall N=16", "square 256", "square 1024 TT", "square 4096", "primes 997", "tiny odd"}
        s = [x for x in s if x.label in keep]
    return s


# --- summaries (pure functions, tested without a GPU) ----------------------------------

RATIOS = {
    "auto_vs_torch": "fastgemm.sgemm auto (torch tensors) vs torch.matmul, TF32 off",
    "strict_vs_cublas": "best strict-fp32 kernel vs cuBLAS SGEMM",
    "fp32x3_vs_cublas": "best fp32x3 kernel vs cuBLAS SGEMM",
    "ozaki_vs_cublas": "the Ozaki rung (fp32_ozaki) vs cuBLAS SGEMM",
    "tf32_vs_cublas_tf32": "best tf32 kernel vs cuBLAS TF32",
    "tf32_request_vs_cublas_tf32": "best kernel precision='tf32' allows (any class) vs cuBLAS TF32",
    "numpy_vs_best_host": "fastgemm.sgemm (numpy arrays) vs the faster of numpy and torch copy+matmul+copy",
}


def geomean(values: List[float]) -> Optional[float]:
    vals = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def summarize(rows: List[dict], worst: int = 5) -> Dict[str, dict]:
    """Per ratio: its geomean over the rows that measured it, the worst shapes, and the
    shape count."""
    out = {}
    for key in RATIOS:
        measured = [(r["ratios"][key], r["label"]) for r in rows if r["ratios"].get(key)]
        out[key] = dict(geomean=geomean([v for v, _ in measured]), shapes=len(measured),
                        worst=[dict(label=l, ratio=v) for v, l in sorted(measured)[:worst]])
    bw = [(r["pct_copy_bw"], r["label"]) for r in rows if r.get("pct_copy_bw") is not None]
    out["memory_bound_pct_copy_bw"] = dict(min=min(bw)[0] if bw else None, shapes=len(bw),
                                           worst=[dict(label=l, pct=v) for v, l in sorted(bw)[:worst]])
    return out


def ratio(other_ms: Optional[float], ours_ms: Optional[float]) -> Optional[float]:
    return other_ms / ours_ms if other_ms and ours_ms else None


# The columns of the results table (benchmarks/results_table.py, shape-suite format):
# every library's time on each shape, and its ratio against torch.matmul.
TABLE_LIBRARIES = {
    "auto_torch": "fastgemm auto (torch tensors)",
    "torch": "torch.matmul",
    "cublas": "cuBLAS SGEMM",
    "best_fp32": "best strict fp32 kernel",
    "best_fp32x3": "best fp32x3 kernel",
    "best_fp32_ozaki": "Ozaki rung",
    "cublas_tf32": "cuBLAS TF32",
    "best_tf32": "best tf32 kernel",
}


def suite_document(rows: List[dict], **top) -> dict:
    """What --json writes: every measured field, plus the fields results_table.py renders
    (suite, backend, baseline; per row shape, trans and libraries)."""
    for r in rows:
        res = r["results"]
        base = (res.get("torch") or {}).get("ms")
        r["shape"], r["trans"] = r["label"], r["op"]
        r["libraries"] = {name: dict(ms=res[key]["ms"], gflops=res[key]["gflops"], rel_err=res[key].get("rel_err"),
                                     ratio=ratio(base, res[key]["ms"]))
                          for key, name in TABLE_LIBRARIES.items() if (res.get(key) or {}).get("ms")}
    return dict(suite="cuda shapes", backend="cuda", baseline="torch.matmul", **top, rows=rows,
                summary=summarize(rows))


def host_blas(_fastgemm) -> str:
    """The BLAS that fastgemm's cpu backend calls: the numpy-array comparisons against
    numpy are only like for like when it is numpy's own build (a machine without a
    package index links the system CBLAS instead of scipy-openblas32)."""
    try:
        description = _fastgemm.kernel_info("cpu", "openblas").description
    except Exception:  # noqa: BLE001 - built without a BLAS baseline
        return "none"
    return description.split(": ", 1)[-1]


def entry(shape: Shape, ms: Optional[float], rel_err: Optional[float] = None, kernel: Optional[str] = None,
          **extra) -> dict:
    return dict(ms=ms, gflops=shape.flops / (ms * 1e6) if ms else None, rel_err=rel_err, kernel=kernel, **extra)


# --- measurement ----------------------------------------------------------------------

def _fail(msg: str) -> int:
    print(f"cuda_shapes: {msg}")
    return 2


def _median_batches(run_batch: Callable[[int], float], target_s: float, max_reps: int) -> float:
    """Seconds per call: one timed call to size the batches, then the median of three
    batches of about target_s / 3 each."""
    one = max(run_batch(1), 1e-7)
    reps = int(min(max_reps, max(1, target_s / 3 / one)))
    return statistics.median(run_batch(reps) / reps for _ in range(3))


def device_timer(torch):
    def time_call(fn: Callable[[], object], target_s: float = 0.05, max_reps: int = 200) -> float:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def batch(reps: int) -> float:
            start.record()
            for _ in range(reps):
                fn()
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop) * 1e-3

        fn()
        torch.cuda.synchronize()
        return _median_batches(batch, target_s, max_reps) * 1e3  # ms

    return time_call


def host_time_call(fn: Callable[[], object], target_s: float = 0.3, max_reps: int = 100) -> float:
    def batch(reps: int) -> float:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return time.perf_counter() - t0

    fn()
    return _median_batches(batch, target_s, max_reps) * 1e3  # ms


def copy_bandwidth_gbs(torch) -> float:
    """Device-to-device copy of 1 GiB, bytes read + written, best of 5 (as the backend's
    own probe counts it)."""
    n = 1 << 28
    src = torch.empty(n, dtype=torch.float32, device="cuda").fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    best = float("inf")
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b) * 1e-3)
    del src, dst
    torch.cuda.empty_cache()
    return 2.0 * 4 * n / best / 1e9


def candidates(fastgemm, all_kernels: bool) -> Dict[str, list]:
    """The kernels timed per family: those that may win somewhere (auto's candidates on
    this machine), or every rung with --all-kernels."""
    fam = {"fp32": [], "tf32": [], "fp32x3": [], "fp32_ozaki": []}
    for k in fastgemm.kernels("cuda"):
        if k.baseline or not (all_kernels or k.auto_candidate):
            continue
        fam[k.precision].append(k)
    return fam


def native_times(fastgemm, _fastgemm, shape: Shape, families, iters: int, max_seconds: float) -> dict:
    """Device times of the baselines and every family's kernels on one Bench."""
    bench = _fastgemm.Bench(shape.M, shape.N, shape.K, shape.trans_a, shape.trans_b, 1.0, 0.0, 0x5EED)
    out = {}

    def run(name):
        try:
            r = fastgemm.benchmark(name, shape.M, shape.N, shape.K, backend="cuda", trans_a=shape.trans_a,
                                   trans_b=shape.trans_b, warmup=2, iters=iters, max_seconds=max_seconds,
                                   bench=bench)
        except Exception as e:  # noqa: BLE001 - one failed kernel must not end the run
            return dict(error=f"{type(e).__name__}: {e}")
        return dict(ms=r.device_median * 1e3, rel_err=r.rel_err, passed=r.passed)

    for base in ("cublas", "cublas_tf32"):
        res = run(base)
        out[base] = entry(shape, res.get("ms"), res.get("rel_err"), base, error=res.get("error"))
    for family, kernels in families.items():
        best = None
        tried = {}
        for k in kernels:
            if not k.accepts(shape.M, shape.N, shape.K, shape.trans_a, shape.trans_b, 1.0, 0.0):
                continue
            res = run(k.name)
            tried[k.name] = res.get("ms") if res.get("passed") else res.get("error", "not verified")
            if res.get("passed") and (best is None or res["ms"] < best[1]["ms"]):
                best = (k.name, res)
        out[f"best_{family}"] = (entry(shape, best[1]["ms"], best[1]["rel_err"], best[0], tried=tried) if best
                                 else entry(shape, None, tried=tried))
    return out


def _sgemm_kwargs(fastgemm) -> dict:
    """precision="fp32" where fastgemm.sgemm takes it (FP32-accurate, the default)."""
    return {"precision": "fp32"} if "precision" in inspect.signature(fastgemm.sgemm).parameters else {}


def _new_tunings(fastgemm, before: list) -> list:
    """The tunings since the log read `before`, with each candidate's best time (ms) in
    the tournament, so that a slow pick can be told from a slow candidate. The log keeps
    the last 64: the new records are those after its longest overlap with `before`."""
    after = fastgemm.autotune.records()
    keep = len(after)
    while keep and after[:keep] != before[len(before) - keep:]:
        keep -= 1
    return [dict(shape_class=r["shape_class"], winner=r["winner"],
                 ms={k: round(v * 1e3, 4) for k, v in r["seconds"].items()}) for r in after[keep:]]


def torch_times(fastgemm, _fastgemm, torch, shape: Shape, time_call) -> dict:
    """fastgemm.sgemm(kernel="auto") on torch tensors against torch.matmul (TF32 off)."""
    g = torch.Generator(device="cuda").manual_seed(shape.M * 7 + shape.N * 3 + shape.K)
    A = torch.rand((shape.K, shape.M) if shape.trans_a else (shape.M, shape.K), device="cuda", generator=g) * 2 - 1
    B = torch.rand((shape.N, shape.K) if shape.trans_b else (shape.K, shape.N), device="cuda", generator=g) * 2 - 1
    opA, opB = (A.t() if shape.trans_a else A), (B.t() if shape.trans_b else B)
    C, Ct = torch.empty((shape.M, shape.N), device="cuda"), torch.empty((shape.M, shape.N), device="cuda")
    kw = _sgemm_kwargs(fastgemm)
    tunings_before = fastgemm.autotune.records()
    t0 = time.perf_counter()
    fastgemm.sgemm(A, B, C, trans_a=shape.trans_a, trans_b=shape.trans_b, **kw)  # the first call tunes
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    picked = _fastgemm.cuda_sgemm("auto", shape.M, shape.N, shape.K, A.data_ptr(), A.stride(0), B.data_ptr(),
                                  B.stride(0), C.data_ptr(), C.stride(0), shape.trans_a, shape.trans_b, 1.0, 0.0,
                                  torch.cuda.current_stream().cuda_stream, C.device.index)
    fast_ms = time_call(lambda: fastgemm.sgemm(A, B, C, trans_a=shape.trans_a, trans_b=shape.trans_b, **kw))
    torch_ms = time_call(lambda: torch.matmul(opA, opB, out=Ct))
    ref = opA.double() @ opB.double()
    norm = ref.norm().item() or 1.0
    err = lambda X: ((X.double() - ref).norm() / norm).item()  # noqa: E731
    out = dict(auto_torch=entry(shape, fast_ms, err(C), picked, first_call_ms=first_ms,
                                tunings=_new_tunings(fastgemm, tunings_before)),
               torch=entry(shape, torch_ms, err(Ct), "torch.matmul"))
    del A, B, C, Ct, ref
    return out


OPENBLAS_SPIN_S = 0.25  # seconds: OpenBLAS's workers spin 2^28 TSC ticks after a call


def numpy_times(fastgemm, _fastgemm, torch, np, shape: Shape) -> dict:
    """fastgemm.sgemm on numpy arrays against numpy and torch's copy + matmul + copy."""
    rng = np.random.default_rng(shape.M + shape.N + shape.K)
    A = rng.uniform(-1, 1, (shape.K, shape.M) if shape.trans_a else (shape.M, shape.K)).astype(np.float32)
    B = rng.uniform(-1, 1, (shape.N, shape.K) if shape.trans_b else (shape.K, shape.N)).astype(np.float32)
    opA, opB = (A.T if shape.trans_a else A), (B.T if shape.trans_b else B)
    C, Cn = np.empty((shape.M, shape.N), np.float32), np.empty((shape.M, shape.N), np.float32)
    kw = _sgemm_kwargs(fastgemm)
    refused_before = set(fastgemm.autotune.rejections())
    tunings_before = fastgemm.autotune.records()

    def torch_copy():
        a, b = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
        return ((a.t() if shape.trans_a else a) @ (b.t() if shape.trans_b else b)).cpu()

    # OpenBLAS's workers (numpy's, and the copy fastgemm calls) spin on the cores for about
    # 0.1 s after each call and slow any other threaded code several times over meanwhile:
    # each library is timed (and fastgemm tuned) only after the previous one's have gone
    # to sleep.
    time.sleep(OPENBLAS_SPIN_S)
    fast_ms = host_time_call(lambda: fastgemm.sgemm(A, B, C, trans_a=shape.trans_a, trans_b=shape.trans_b, **kw))
    time.sleep(OPENBLAS_SPIN_S)
    numpy_ms = host_time_call(lambda: np.matmul(opA, opB, out=Cn))
    time.sleep(OPENBLAS_SPIN_S)
    copy_ms = host_time_call(torch_copy)
    rows = np.unique(np.linspace(0, shape.M - 1, min(shape.M, 64)).astype(np.int64))
    ref = opA[rows].astype(np.float64) @ opB.astype(np.float64)
    norm = np.linalg.norm(ref) or 1.0
    err = lambda X: float(np.linalg.norm(X[rows].astype(np.float64) - ref) / norm)  # noqa: E731
    # What "auto" chose for host arrays (backend/kernel from the tuning table) and the
    # candidates it refused on the way, so that a slow pick can be told from a refusal.
    key = _fastgemm.shape_class("auto", shape.M, shape.N, shape.K, shape.trans_a, shape.trans_b)
    picked = fastgemm.autotune.table().get(key, "auto")
    refused = [r for r in fastgemm.autotune.rejections() if r not in refused_before]
    return dict(numpy_fastgemm=entry(shape, fast_ms, err(C), picked, refused=refused,
                                      tunings=_new_tunings(fastgemm, tunings_before)),
                numpy=entry(shape, numpy_ms, err(Cn), "numpy"),
                torch_copy=entry(shape, copy_ms, err(torch_copy().numpy()), "torch copy+matmul+copy"))


def row_ratios(res: dict) -> dict:
    ms = lambda k: res.get(k, {}).get("ms")  # noqa: E731
    host_best = min([m for m in (ms("numpy"), ms("torch_copy")) if m] or [0]) or None
    return dict(auto_vs_torch=ratio(ms("torch"), ms("auto_torch")),
                strict_vs_cublas=ratio(ms("cublas"), ms("best_fp32")),
                fp32x3_vs_cublas=ratio(ms("cublas"), ms("best_fp32x3")),
                ozaki_vs_cublas=ratio(ms("cublas"), ms("best_fp32_ozaki")),
                tf32_vs_cublas_tf32=ratio(ms("cublas_tf32"), ms("best_tf32")),
                # precision="tf32" admits every class: where cuBLAS TF32 itself runs FFMA
                # (decode steps), the strict kernels are the tf32 request's answer too.
                tf32_request_vs_cublas_tf32=ratio(ms("cublas_tf32"), min(
                    [m for m in (ms("best_tf32"), ms("best_fp32"), ms("best_fp32x3"), ms("best_fp32_ozaki")) if m]
                    or [0]) or None),
                numpy_vs_best_host=ratio(host_best, ms("numpy_fastgemm")))


def _fmt(e: dict, with_kernel: bool = False) -> str:
    if not e or not e.get("ms"):
        return "-"
    k = f" {e['kernel']}" if with_kernel and e.get("kernel") else ""
    return f"{e['ms']:.3f}{k}"


def _x(v: Optional[float]) -> str:
    return f"{v:.2f}x" if v else "-"


def print_row(shape: Shape, r: dict) -> None:
    res, x = r["results"], r["ratios"]
    bw = f"{r['pct_copy_bw']:.0f}%" if r.get("pct_copy_bw") is not None else ""
    err = lambda k: f"{res[k]['rel_err']:.1e}" if res.get(k, {}).get("rel_err") is not None else "-"  # noqa: E731
    print(f"| {shape.label} | {shape.M}x{shape.N}x{shape.K} {shape.op} | {_fmt(res['cublas'])} "
          f"| {_fmt(res['best_fp32'], True)} ({_x(x['strict_vs_cublas'])}) "
          f"| {_fmt(res['best_fp32x3'], True)} ({_x(x['fp32x3_vs_cublas'])}) "
          f"| {_fmt(res.get('best_fp32_ozaki'))} ({_x(x['ozaki_vs_cublas'])}) "
          f"| {_fmt(res['cublas_tf32'])} | {_fmt(res['best_tf32'], True)} ({_x(x['tf32_vs_cublas_tf32'])}) "
          f"| {_fmt(res.get('auto_torch'), True)} | {_fmt(res.get('torch'))} | {_x(x['auto_vs_torch'])} "
          f"| {err('auto_torch')} / {err('torch')} "
          f"| {_fmt(res.get('numpy_fastgemm'))} | {_fmt(res.get('numpy'))} | {_fmt(res.get('torch_copy'))} "
          f"| {_x(x['numpy_vs_best_host'])} | {bw} |", flush=True)


HEADER = ("| shape | M x N x K op | cuBLAS ms | best fp32 ms kernel (x cuBLAS) | best fp32x3 (x cuBLAS) "
          "| Ozaki rung ms (x cuBLAS) "
          "| cuBLAS TF32 ms | best tf32 (x cuBLAS TF32) | auto on torch ms kernel | torch ms | x torch "
          "| rel err auto / torch | numpy path: fastgemm ms | numpy ms | torch copy ms | x best host | % copy BW |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a dozen shapes, one or two of each kind")
    ap.add_argument("--iters", type=int, default=5, help="timed iterations per kernel (native)")
    ap.add_argument("--max-seconds", type=float, default=0.25, help="time cap per kernel and shape (native)")
    ap.add_argument("--numpy-max-gflop", type=float, default=140.0,
                    help="largest problem (GFLOP) timed through numpy arrays (4096^3 is 137)")
    ap.add_argument("--max-minutes", type=float, default=9.0, help="stop before a shape would start after this")
    ap.add_argument("--all-kernels", action="store_true", help="time every rung, not only auto's candidates")
    ap.add_argument("--shapes", default="", help="comma-separated labels to run (default: the whole suite)")
    ap.add_argument("--json", default="", help="write every row here")
    ap.add_argument("--merge", nargs="+", metavar="JSON", default=[],
                    help="measure nothing: join the rows of earlier --json files (runs of parts of the "
                         "suite) into one table, summary and --json file")
    args = ap.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.json)
    started = time.perf_counter()

    import numpy as np

    import fastgemm
    from fastgemm import _fastgemm

    if not getattr(_fastgemm, "built_with_cuda", False):
        return _fail("fastgemm was built without the cuda backend (no nvcc at build time)")
    status = next(b for b in fastgemm.backends() if b.name == "cuda")
    if not status.available:
        return _fail(f"no usable CUDA GPU: {status.reason}")
    try:
        import torch
    except ImportError:
        return _fail("needs PyTorch with CUDA (the user-facing comparison is against torch.matmul)")
    if not torch.cuda.is_available():
        return _fail("PyTorch sees no CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    shapes = suite(args.quick)
    if args.shapes:
        wanted = {s.strip() for s in args.shapes.split(",") if s.strip()}
        unknown = wanted - {s.label for s in suite(False)}
        if unknown:
            return _fail(f"unknown shape labels: {', '.join(sorted(unknown))}")
        shapes = [s for s in suite(False) if s.label in wanted]
    families = candidates(fastgemm, args.all_kernels)
    time_call = device_timer(torch)
    bw = copy_bandwidth_gbs(torch)
    print(f"# GPU: {status.device}; {dict(status.properties)}")
    print(f"# torch {torch.__version__}, numpy {np.__version__}, fastgemm {fastgemm.__version__}, "
          f"commit {os.environ.get('FASTGEMM_COMMIT', 'unknown')}")
    print(f"# device copy bandwidth (1 GiB, read + write): {bw:.0f} GB/s")
    blas = host_blas(_fastgemm)
    print(f"# host BLAS of fastgemm's cpu backend (numpy arrays' CPU candidates): {blas}")
    print(f"# {len(shapes)} shapes; times in ms; ratios are the other library's time over fastgemm's\n")
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    rows, stopped = [], None
    for shape in shapes:
        if time.perf_counter() - started > args.max_minutes * 60:
            stopped = shape.label
            break
        res = native_times(fastgemm, _fastgemm, shape, families, args.iters, args.max_seconds)
        try:
            res.update(torch_times(fastgemm, _fastgemm, torch, shape, time_call))
        except Exception as e:  # noqa: BLE001 - report and keep going
            res["auto_torch"] = entry(shape, None, error=f"{type(e).__name__}: {e}")
        if shape.flops <= args.numpy_max_gflop * 1e9:
            try:
                res.update(numpy_times(fastgemm, _fastgemm, torch, np, shape))
            except Exception as e:  # noqa: BLE001
                res["numpy_fastgemm"] = entry(shape, None, error=f"{type(e).__name__}: {e}")
        torch.cuda.empty_cache()
        r = dict(asdict(shape), op=shape.op, results=res)
        r["ratios"] = row_ratios(res)
        auto_ms = res.get("auto_torch", {}).get("ms")
        r["pct_copy_bw"] = (100.0 * shape.min_bytes / (auto_ms * 1e-3) / (bw * 1e9)
                            if shape.memory_bound and auto_ms else None)
        rows.append(r)
        print_row(shape, r)

    wall_s = time.perf_counter() - started
    report(rows, wall_s, stopped, bw)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(suite_document(rows, device=status.device, properties=dict(status.properties),
                                     torch=torch.__version__, copy_bandwidth_gbs=bw, quick=args.quick,
                                     host_blas=blas, wall_s=wall_s, stopped_before=stopped), f, indent=1)
    return 0


def report(rows: List[dict], wall_s: float, stopped: Optional[str], bw: float) -> None:
    summary = summarize(rows)
    print(f"\n## Summary ({len(rows)} shapes in {wall_s:.0f} s"
          + (f"; stopped before '{stopped}' at --max-minutes" if stopped else "") + ")\n")
    for key, text in RATIOS.items():
        s = summary[key]
        g = f"{s['geomean']:.2f}x" if s["geomean"] else "-"
        worst = ", ".join(f"{w['label']} {w['ratio']:.2f}x" for w in s["worst"])
        print(f"- {text}: geomean {g} over {s['shapes']} shapes; worst: {worst}")
    m = summary["memory_bound_pct_copy_bw"]
    if m["shapes"]:
        worst = ", ".join(f"{w['label']} {w['pct']:.0f}%" for w in m["worst"])
        print(f"- memory-bound shapes (M or N <= {MEMORY_BOUND_MAX}), auto on torch, % of {bw:.0f} GB/s: "
              f"min {m['min']:.0f}% over {m['shapes']} shapes; worst: {worst}")


def merge(paths: List[str], out: str) -> int:
    """One suite from runs that each measured part of it (a machine lent for minutes at a
    time): rows in suite order, a later file's row replacing an earlier one's."""
    by_label, docs = {}, []
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
            rows = doc["rows"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            return _fail(f"--merge {path}: not a cuda_shapes.py --json file ({type(e).__name__}: {e})")
        docs.append(doc)
        by_label.update({r["label"]: r for r in rows})
    shapes = [s for s in suite(False) if s.label in by_label]
    unknown = set(by_label) - {s.label for s in shapes}
    if unknown:
        return _fail(f"--merge: rows of shapes not in the suite: {', '.join(sorted(unknown))}")
    bws = [d.get("copy_bandwidth_gbs") for d in docs if d.get("copy_bandwidth_gbs")]
    bw = min(bws) if bws else float("nan")
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    rows = []
    for shape in shapes:
        r = by_label[shape.label]
        r["ratios"] = row_ratios(r["results"])
        auto_ms = (r["results"].get("auto_torch") or {}).get("ms")
        r["pct_copy_bw"] = (100.0 * shape.min_bytes / (auto_ms * 1e-3) / (bw * 1e9)
                            if shape.memory_bound and auto_ms else None)
        rows.append(r)
        print_row(shape, r)
    report(rows, sum(d.get("wall_s") or 0.0 for d in docs), None, bw)
    first = docs[0]
    if out:
        with open(out, "w") as f:
            json.dump(suite_document(rows, device=first.get("device"), properties=first.get("properties"),
                                     torch=first.get("torch"), copy_bandwidth_gbs=bw, quick=False,
                                     host_blas=first.get("host_blas"),
                                     wall_s=sum(d.get("wall_s") or 0.0 for d in docs), stopped_before=None,
                                     merged_from=len(docs)), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""fastgemm's fp32_ozaki rung against GEMMul8's Ozaki-II INT8 SGEMM and cuBLAS SGEMM, same inputs, one process.

    python benchmarks/gemmul8_compare.py --gemmul8 PATH [--sizes 4096,8192,16384] [--json OUT]

PATH is a checkout of GEMMul8 (RIKEN-RCCS/GEMMul8), fetched by you, outside this
repository; this script neither downloads nor copies it. It builds GEMMul8's static library
there with GEMMul8's own Makefile (`make BACKEND=cuda GPU_ARCH=90 lib/libgemmul8.a`), then
compiles a small C-ABI driver written here (DRIVER below: device buffers, cuBLAS SGEMM,
gemmul8::gemm<float> and CUDA events) against GEMMul8's public header into --build-dir, and
loads it with ctypes. fastgemm's rung (and fp32x3_wgmma_128x128, fastgemm's other
FP32-accurate family, for scale) runs on the driver's device buffers through
fastgemm's device-pointer entry point on the same stream, so every library sees the same A
and B and is timed by the same events, interleaved in rounds.

Per size (M = N = K) and input class (uniform(-1, 1); random signs with magnitudes
log-uniform over [2^-20, 2^20], so every row and column spans 2^40): cuBLAS SGEMM, the rung, fp32x3,
and GEMMul8 at each --moduli count in fast and accurate mode; median device time over
--rounds rounds, the ratio against cuBLAS SGEMM, and the relative error
||C - ref||_F / ||ref||_F on --check-rows rows against float64. --json writes the rows in the
shape-suite format of benchmarks/results_table.py (baseline cublas).

GEMMul8's library is one source file that nvcc compiles for more than five minutes;
`--build-only` builds it and stops, on any machine with nvcc (`--cublas-include` names
cuBLAS's headers where the toolkit lacks them: the nvidia-cublas wheel has them), and a
later run takes it with `--library`.

Exit status 2 with one line when there is no usable GPU, no cuda backend, or the checkout
cannot be built.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNG = "ozaki_int8_128x256"
# fastgemm's other FP32-accurate family on the same inputs, for scale.
FP32X3 = "fp32x3_wgmma_128x128"
NAME = "gemmul8_compare"

# The driver: C ABI over device buffers, cuBLAS SGEMM and GEMMul8. Row-major C = A B is
# column-major C^T = B^T A^T, which is how both libraries are called.
DRIVER = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "gemmul8.hpp"

namespace {
std::string last_error;
int fail(const std::string& what) { last_error = what; return 1; }
#define CHECK_CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) return fail(std::string(#x) + ": " + cudaGetErrorString(e_)); } while (0)
#define CHECK_BLAS(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) return fail(std::string(#x) + ": cuBLAS status " + std::to_string(int(s_))); } while (0)
}  // namespace

// Outside the anonymous namespace: a function whose parameters name a type of an
// anonymous namespace is local to this file, extern "C" or not, and would not be exported.
struct Bench {
    cublasHandle_t blas = nullptr;
    float *A = nullptr, *B = nullptr, *C = nullptr;
    void* work = nullptr;
    size_t work_bytes = 0;
    cudaEvent_t start = nullptr, stop = nullptr;
    int M = 0, N = 0, K = 0;
};

extern "C" {
const char* gm8_error() { return last_error.c_str(); }

int gm8_open(Bench** out, int M, int N, int K, int max_moduli) {
    Bench* b = new Bench;
    *out = b;
    b->M = M, b->N = N, b->K = K;
    CHECK_BLAS(cublasCreate(&b->blas));
    CHECK_BLAS(cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH));
    CHECK_CUDA(cudaMalloc(&b->A, size_t(M) * K * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&b->B, size_t(K) * N * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&b->C, size_t(M) * N * sizeof(float)));
    b->work_bytes = gemmul8::workSize<false, gemmul8::Backend::INT8>(size_t(N), size_t(M), size_t(K), unsigned(max_moduli));
    CHECK_CUDA(cudaMalloc(&b->work, b->work_bytes));
    CHECK_CUDA(cudaEventCreate(&b->start));
    CHECK_CUDA(cudaEventCreate(&b->stop));
    return 0;
}

int gm8_upload(Bench* b, const float* A, const float* B) {
    CHECK_CUDA(cudaMemcpy(b->A, A, size_t(b->M) * b->K * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b->B, B, size_t(b->K) * b->N * sizeof(float), cudaMemcpyHostToDevice));
    return 0;
}

void gm8_pointers(Bench* b, unsigned long long* ptrs) {
    ptrs[0] = (unsigned long long)b->A, ptrs[1] = (unsigned long long)b->B, ptrs[2] = (unsigned long long)b->C;
}

// library 0: cuBLAS SGEMM; 1: GEMMul8 with `moduli`, fast mode if `fast`.
int gm8_run(Bench* b, int library, int moduli, int fast) {
    const float alpha = 1.0f, beta = 0.0f;
    if (library == 0) {
        CHECK_BLAS(cublasSgemm(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, b->N, b->M, b->K, &alpha, b->B, b->N, b->A, b->K,
                               &beta, b->C, b->N));
        return 0;
    }
    gemmul8::gemm<float, gemmul8::Backend::INT8>(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, size_t(b->N), size_t(b->M),
                                                 size_t(b->K), &alpha, b->B, size_t(b->N), b->A, size_t(b->K), &beta,
                                                 b->C, size_t(b->N), unsigned(moduli), fast != 0, b->work);
    CHECK_CUDA(cudaGetLastError());
    return 0;
}

int gm8_begin(Bench* b) { CHECK_CUDA(cudaEventRecord(b->start, 0)); return 0; }
int gm8_end(Bench* b, float* ms) {
    CHECK_CUDA(cudaEventRecord(b->stop, 0));
    CHECK_CUDA(cudaEventSynchronize(b->stop));
    CHECK_CUDA(cudaEventElapsedTime(ms, b->start, b->stop));
    return 0;
}

int gm8_download(Bench* b, float* C) {
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(C, b->C, size_t(b->M) * b->N * sizeof(float), cudaMemcpyDeviceToHost));
    return 0;
}

void gm8_close(Bench* b) {
    if (!b) return;
    cudaFree(b->A); cudaFree(b->B); cudaFree(b->C); cudaFree(b->work);
    if (b->blas) cublasDestroy(b->blas);
    if (b->start) cudaEventDestroy(b->start);
    if (b->stop) cudaEventDestroy(b->stop);
    delete b;
}
}
"""


class Unavailable(Exception):
    """What stops the comparison, in one line."""


def parse_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def gpu_status():
    """The cuda backend's status, or Unavailable saying why there is none."""
    import fastgemm
    from fastgemm import _fastgemm

    if not getattr(_fastgemm, "built_with_cuda", False):
        raise Unavailable("fastgemm was built without the cuda backend (no nvcc at build time)")
    status = next(b for b in fastgemm.backends() if b.name == "cuda")
    if not status.available:
        raise Unavailable(f"no usable CUDA GPU: {status.reason}")
    missing = {RUNG, FP32X3} - {k.name for k in fastgemm.kernels("cuda")}
    if missing:
        raise Unavailable(f"this fastgemm has no cuda kernel {', '.join(sorted(missing))}")
    return status


def gemmul8_root(checkout: Path) -> Path:
    """The folder of GEMMul8's Makefile in a checkout (the repository or that folder)."""
    root = checkout / "GEMMul8" if (checkout / "GEMMul8" / "include" / "gemmul8.hpp").is_file() else checkout
    if not (root / "include" / "gemmul8.hpp").is_file():
        raise Unavailable(f"{checkout} is not a GEMMul8 checkout (no GEMMul8/include/gemmul8.hpp)")
    return root


def find_nvcc() -> str:
    nvcc = shutil.which("nvcc")
    if not nvcc:
        raise Unavailable("nvcc is not on PATH (needed to build GEMMul8 and the driver)")
    return nvcc


def build_library(root: Path, arch: str, jobs: int, log: Path, cublas_include: Path | None = None) -> Path:
    """GEMMul8's static library, built by its own Makefile in the checkout. Needs nvcc and
    cuBLAS's headers, not a GPU: with `cublas_include` (a folder holding cublas_v2.h, e.g.
    from the nvidia-cublas wheel) it builds on a machine whose CUDA toolkit has no cuBLAS,
    with GEMMul8's own compiler flags plus that folder."""
    if cublas_include is not None and not (cublas_include / "cublas_v2.h").is_file():
        raise Unavailable(f"--cublas-include {cublas_include}: no cublas_v2.h there")
    cuda_path = str(Path(find_nvcc()).resolve().parent.parent)
    cmd = ["make", "-C", str(root), f"-j{jobs}", "BACKEND=cuda", f"GPU_ARCH={arch}", f"CUDA_PATH={cuda_path}"]
    if cublas_include is not None:
        cmd.append(f"FLAGS=-std=c++20 -O3 -diag-suppress 177 -I{cublas_include}")
    with open(log, "w") as out:
        make = subprocess.run(cmd + ["lib/libgemmul8.a"], stdout=out, stderr=subprocess.STDOUT)
    library = root / "lib" / "libgemmul8.a"
    if make.returncode != 0 or not library.is_file():
        raise Unavailable(f"building GEMMul8 in {root} failed; see {log}")
    return library


def build_driver(checkout: Path, build_dir: Path, arch: str, jobs: int, library: Path | None = None) -> Path:
    """GEMMul8's static library (unless `library` names one built before) and the driver
    linked to it."""
    root = gemmul8_root(checkout)
    nvcc = find_nvcc()
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "build.log"
    if library is not None:
        if not library.is_file():
            raise Unavailable(f"--library {library}: no such file")
        log.write_text(f"using the GEMMul8 library built before: {library}\n")
    else:
        library = build_library(root, arch, jobs, log)
    source = build_dir / "gemmul8_driver.cu"
    source.write_text(DRIVER)
    shared = build_dir / "libgemmul8_driver.so"
    cmd = [nvcc, "-std=c++20", "-O2", "-shared", "-Xcompiler", "-fPIC", f"-gencode=arch=compute_{arch},code=sm_{arch}",
           "-I", str(root / "include"), str(source), str(library), "-lcublas", "-lcublasLt", "-o", str(shared)]
    with open(log, "a") as out:
        link = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
    if link.returncode != 0:
        raise Unavailable(f"compiling the driver against GEMMul8 failed; see {log}")
    return shared


def load_driver(path: Path):
    lib = ctypes.CDLL(str(path))
    vp, i, f = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
    lib.gm8_error.restype = ctypes.c_char_p
    lib.gm8_open.argtypes = [ctypes.POINTER(vp), i, i, i, i]
    lib.gm8_upload.argtypes = [vp, vp, vp]
    lib.gm8_pointers.argtypes = [vp, ctypes.POINTER(ctypes.c_ulonglong)]
    lib.gm8_run.argtypes = [vp, i, i, i]
    lib.gm8_begin.argtypes = [vp]
    lib.gm8_end.argtypes = [vp, ctypes.POINTER(f)]
    lib.gm8_download.argtypes = [vp, vp]
    lib.gm8_close.argtypes = [vp]
    return lib


def inputs(kind: str, n: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.uniform(-1.0, 1.0, (n, n)).astype(np.float32)
    signs = rng.choice(np.array([-1.0, 1.0], np.float32), (n, n))
    return (signs * np.exp2(rng.uniform(-20.0, 20.0, (n, n)).astype(np.float32))).astype(np.float32)


def rel_error(C, A, B, rows) -> float:
    import numpy as np

    ref = A[rows].astype(np.float64) @ B.astype(np.float64)
    return float(np.linalg.norm(C[rows].astype(np.float64) - ref) / np.linalg.norm(ref))


def suite_rows(measured: list[dict]) -> dict:
    """The shape-suite document (benchmarks/results_table.py, format 3) of measured rows:
    each {"n", "inputs", "libraries": {name: {"ms", "rel_err"}}}."""
    rows = []
    for m in measured:
        n, libs = m["n"], m["libraries"]
        base = libs.get("cublas", {}).get("ms")
        entries = {}
        for name, v in libs.items():
            entry = {"ms": float(v["ms"]), "gflops": 2.0 * n**3 / (v["ms"] * 1e-3) / 1e9}
            if base:
                entry["ratio"] = base / v["ms"]
            if v.get("rel_err") is not None:
                entry["rel_err"] = float(v["rel_err"])
            entries[name] = entry
        rows.append({"shape": f"{n}^3 {m['inputs']}", "M": n, "N": n, "K": n, "trans": "NN", "libraries": entries})
    return {"suite": NAME, "backend": "cuda", "baseline": "cublas", "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemmul8", required=True, type=Path, help="a GEMMul8 checkout outside this repository")
    ap.add_argument("--sizes", type=parse_list, default=[4096, 8192, 16384], help="M = N = K values")
    ap.add_argument("--moduli", type=parse_list, default=[6, 7, 8], help="GEMMul8 moduli counts to run")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (median reported)")
    ap.add_argument("--check-rows", type=int, default=128, help="rows of C compared with float64")
    ap.add_argument("--arch", default="90", help="GPU architecture for GEMMul8 and the driver (H100/H200: 90)")
    ap.add_argument("--build-dir", type=Path, default=None, help="where the driver is built (default: a temp dir)")
    ap.add_argument("--library", type=Path, default=None,
                    help="a libgemmul8.a built before from the same checkout (its one source file takes nvcc "
                         "more than five minutes), instead of running GEMMul8's Makefile")
    ap.add_argument("--build-only", action="store_true",
                    help="only build GEMMul8's library in the checkout and print its path (no GPU needed)")
    ap.add_argument("--cublas-include", type=Path, default=None,
                    help="with --build-only: a folder with cuBLAS's headers, for a CUDA toolkit without cuBLAS")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", default="", help="write the rows here (shape-suite format)")
    args = ap.parse_args(argv)
    if args.build_only:
        try:
            root = gemmul8_root(args.gemmul8.resolve())
            include = args.cublas_include.resolve() if args.cublas_include else None
            print(build_library(root, args.arch, args.jobs, root / "gemmul8_compare_build.log", include))
        except Unavailable as e:
            print(f"{NAME}: {e}", file=sys.stderr)
            return 2
        return 0
    try:
        status = gpu_status()
        build_dir = args.build_dir or Path(tempfile.mkdtemp(prefix="gemmul8_compare_"))
        library = args.library.resolve() if args.library else None
        driver = load_driver(build_driver(args.gemmul8.resolve(), build_dir, args.arch, args.jobs, library))
    except Unavailable as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        return 2

    import numpy as np
    from fastgemm import _fastgemm

    print(f"# GPU: {status.device}")
    print(f"# GEMMul8: {args.gemmul8}; fastgemm rung: {RUNG}")
    measured = []
    for n in args.sizes:
        for kind in ("uniform", "wide"):
            A, B = inputs(kind, n, 2 * n + 1), inputs(kind, n, 2 * n + 2)
            bench = ctypes.c_void_p()
            if driver.gm8_open(ctypes.byref(bench), n, n, n, max(args.moduli)) or driver.gm8_upload(
                    bench, A.ctypes.data, B.ctypes.data):
                print(f"{NAME}: {driver.gm8_error().decode()}", file=sys.stderr)
                driver.gm8_close(bench)
                return 2
            ptrs = (ctypes.c_ulonglong * 3)()
            driver.gm8_pointers(bench, ptrs)

            def run_fastgemm(kernel):
                _fastgemm.cuda_sgemm(kernel, n, n, n, ptrs[0], n, ptrs[1], n, ptrs[2], n, False, False, 1.0, 0.0,
                                     stream=0, device=-1, precision="fp32")

            libraries = {"cublas": lambda: driver.gm8_run(bench, 0, 0, 0),
                         f"fastgemm {RUNG}": lambda: run_fastgemm(RUNG),
                         f"fastgemm {FP32X3}": lambda: run_fastgemm(FP32X3)}
            for mod in args.moduli:
                for fast in (1, 0):
                    libraries[f"GEMMul8 {mod} moduli {'fast' if fast else 'accurate'}"] = (
                        lambda mod=mod, fast=fast: driver.gm8_run(bench, 1, mod, fast))
            times = {name: [] for name in libraries}
            errors = {}
            rows = np.linspace(0, n - 1, min(args.check_rows, n)).astype(np.int64)
            C = np.empty((n, n), np.float32)
            for name, call in libraries.items():  # warm up and check once
                call()
                driver.gm8_download(bench, C.ctypes.data)
                errors[name] = rel_error(C, A, B, rows)
            ms = ctypes.c_float()
            for r in range(args.rounds):
                order = list(libraries.items())
                for name, call in order if r % 2 == 0 else reversed(order):
                    driver.gm8_begin(bench)
                    call()
                    driver.gm8_end(bench, ctypes.byref(ms))
                    times[name].append(ms.value)
            driver.gm8_close(bench)
            med = {name: float(np.median(t)) for name, t in times.items()}
            libs = {name: {"ms": med[name], "rel_err": errors[name]} for name in libraries}
            measured.append({"n": n, "inputs": kind, "libraries": libs})
            print(f"\n{n}^3, {kind} inputs")
            print(f"  {'library':<34} {'ms':>9} {'TFLOP/s':>8} {'x cuBLAS':>9} {'rel err':>9}")
            for name in libraries:
                tflops = 2.0 * n**3 / (med[name] * 1e-3) / 1e12
                print(f"  {name:<34} {med[name]:9.3f} {tflops:8.1f} {med['cublas'] / med[name]:8.2f}x "
                      f"{errors[name]:9.2e}")
    if args.json:
        doc = suite_rows(measured)
        doc["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        Path(args.json).write_text(json.dumps(doc, indent=1))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

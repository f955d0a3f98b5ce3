"""The packed CPU SGEMM against OpenBLAS, device-timed (fastgemm.harness.device_clock).

Square 128..4096 and the tall-skinny / short-wide shapes, on 1 thread and on all
threads; each group holds `packed` and the BLAS baseline at the same shape and thread
count, so pytest-benchmark's table reads as the ratio the issue asks about.

    pytest benchmarks/bench_cpu_packed.py --benchmark-only --fastgemm-rounds 5
    pytest benchmarks/bench_cpu_packed.py --benchmark-only -k "1024 or 2048"
"""

import time

import pytest

import fastgemm
from fastgemm import harness

SQUARE = [128, 256, 512, 1024, 2048, 4096]
SKINNY = [(4096, 64, 4096), (64, 4096, 4096), (4096, 4096, 64)]
SHAPES = [(n, n, n) for n in SQUARE] + SKINNY
THREADS = sorted({1, fastgemm._fastgemm.available_cores()})
KERNELS = ["packed"] + [k.name for k in fastgemm.kernels("cpu") if k.baseline]


@pytest.fixture
def threads(request):
    saved = fastgemm.get_num_threads()
    yield fastgemm.set_num_threads
    fastgemm.set_num_threads(saved)


@pytest.mark.benchmark(timer=harness.device_clock)
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("n_threads", THREADS, ids=lambda t: f"{t}t")
def test_packed_vs_blas(benchmark, kernel, shape, n_threads, threads, rounds):
    M, N, K = shape
    threads(n_threads)
    benchmark.group = f"cpu {M}x{N}x{K} {n_threads} thread(s)"
    k = harness.DeviceTimedKernel(kernel, M, N, K, backend="cpu")
    # OpenBLAS workers keep spinning ~0.1 s after a call and would take a core from the
    # next kernel on a 2-core machine; let them (and ours) go to sleep first.
    time.sleep(0.3)
    flops = 2.0 * M * N * K
    benchmark.pedantic(k, rounds=max(rounds, 3) if flops < 1e10 else rounds,
                       iterations=1, warmup_rounds=2)
    benchmark.extra_info.update(k.extra_info(benchmark))
    benchmark.extra_info["threads"] = n_threads

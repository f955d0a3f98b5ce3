"""The packed CPU SGEMM against OpenBLAS, device-timed (fastgemm.harness.device_clock).

Square sizes (--fastgemm-sizes, default 128..4096) and tall-skinny / short-wide / K-light
shapes at the largest of them, on 1 thread and on all threads; each group holds `packed`
and the BLAS baseline at the same shape and thread count, so pytest-benchmark's table
reads as the ratio.

    pytest benchmarks/bench_cpu_packed.py --benchmark-only --fastgemm-rounds 5
    pytest benchmarks/bench_cpu_packed.py --benchmark-only --fastgemm-sizes 1024,2048
"""

import pytest

import fastgemm
from fastgemm import _fastgemm, harness

THREADS = sorted({1, fastgemm._fastgemm.available_cores()})
KERNELS = ["packed"] + [k.name for k in fastgemm.kernels("cpu") if k.baseline]


@pytest.fixture
def threads(request):
    saved = fastgemm.get_num_threads()
    yield fastgemm.set_num_threads
    fastgemm.set_num_threads(saved)


@pytest.mark.benchmark(timer=harness.device_clock)
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n_threads", THREADS, ids=lambda t: f"{t}t")
def test_packed_vs_blas(benchmark, kernel, packed_shape, n_threads, threads, rounds):
    M, N, K = packed_shape
    threads(n_threads)
    benchmark.group = f"cpu {M}x{N}x{K} {n_threads} thread(s)"
    k = harness.DeviceTimedKernel(kernel, M, N, K, backend="cpu")
    # The core's pause after a BLAS call: its spinning workers would take a core from
    # whatever is timed next (here, after the verification run or the previous case).
    if len(KERNELS) > 1:
        _fastgemm.settle_after_baseline("cpu", KERNELS[1])
    benchmark.pedantic(k, rounds=rounds, iterations=1, warmup_rounds=2)
    benchmark.extra_info.update(k.extra_info(benchmark))
    benchmark.extra_info["threads"] = n_threads

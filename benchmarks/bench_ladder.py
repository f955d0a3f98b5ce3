"""Every kernel and baseline of every available backend, device-timed.

Each benchmark verifies its kernel first, then runs native iterations; pytest-benchmark's
statistics are the native per-launch device times (fastgemm.harness.device_clock).
"""

import pytest

import fastgemm
from fastgemm import harness
from conftest import ladder_cases

EMU_MAX = 64  # the emulator checks shaders; it is no performance source


@pytest.mark.benchmark(timer=harness.device_clock)
@pytest.mark.parametrize("backend,kernel", ladder_cases())
def test_ladder(benchmark, backend, kernel, size, rounds):
    info = next(k for k in fastgemm.kernels(backend) if k.name == kernel)
    n = min(size, EMU_MAX) if backend == "metal-emu" else size
    if 2.0 * n ** 3 > info.bench_flops_cap:
        pytest.skip(f"{kernel} is capped at {info.bench_flops_cap:.3g} FLOP (a teaching loop this slow "
                    "would dominate the run); `fastgemm bench --all` runs it")
    if not info.accepts(n, n, n):
        pytest.skip(f"{kernel} does not accept {n}^3: requires {', '.join(info.constraints)}")
    benchmark.group = f"{backend} {n}x{n}x{n}"
    k = harness.DeviceTimedKernel(kernel, n, backend=backend)
    benchmark.pedantic(k, rounds=rounds, warmup_rounds=1)
    benchmark.extra_info.update(k.extra_info(benchmark))

"""Every kernel and baseline of every available backend, device-timed.

Each benchmark verifies its kernel first, then runs native iterations; pytest-benchmark's
statistics are the native per-launch device times (fastgemm.harness.device_clock).
metal-emu rows are grouped apart and never saved or compared (conftest.is_timing).
"""

import pytest

from fastgemm import harness


@pytest.mark.benchmark(timer=harness.device_clock)
def test_ladder(benchmark, backend, kernel, ladder_n, rounds):
    # Cases come from conftest.ladder_cases: only sizes the kernel accepts and is timed at.
    note = " (emulator: not a performance number)" if backend == "metal-emu" else ""
    benchmark.group = f"{backend} {ladder_n}x{ladder_n}x{ladder_n}{note}"
    k = harness.DeviceTimedKernel(kernel, ladder_n, backend=backend)
    benchmark.pedantic(k, rounds=rounds, warmup_rounds=1)
    benchmark.extra_info.update(k.extra_info(benchmark))

"""pytest-benchmark timed on the device, not on Python.

pytest-benchmark times a function with a clock it reads before and after each call.
:data:`device_clock` is such a clock whose time advances only by the native device
times of the launches run through :class:`DeviceTimedKernel`: between two readings it
moves by exactly the device time of the launch in between, so the statistics that
pytest-benchmark reports are the native timings, with no Python dispatch in them.

    import pytest, fastgemm.harness as h

    @pytest.mark.benchmark(timer=h.device_clock, group="cpu 1024")
    def test_ikj(benchmark):
        k = h.DeviceTimedKernel("ikj", 1024, backend="cpu")
        benchmark.pedantic(k, rounds=5, warmup_rounds=1)
        benchmark.extra_info.update(k.extra_info(benchmark))

Use ``benchmark.pedantic``: pytest-benchmark's automatic calibration expects a clock
that moves on its own.
"""

from __future__ import annotations

import threading
from typing import List, Optional

from . import _fastgemm, api, roofline


class DeviceClock:
    """A monotonic clock in seconds that advances only by recorded device times."""

    def __init__(self):
        self._now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("device time cannot be negative")
        with self._lock:
            self._now += seconds


#: The clock to pass as ``@pytest.mark.benchmark(timer=device_clock)``.
device_clock = DeviceClock()


class DeviceTimedKernel:
    """A kernel bound to random operands; each call runs one native iteration.

    Calling it advances :data:`device_clock` by that iteration's device time (or host
    time with ``time="host"``) and records it in :attr:`device_times`, so tests can
    check that pytest-benchmark reports exactly the native numbers.
    """

    def __init__(self, kernel: str, M: int, N: Optional[int] = None, K: Optional[int] = None, *,
                 backend: Optional[str] = None, time: str = "device", verify: bool = True,
                 clock: DeviceClock = device_clock, seed: int = 0x5EED):
        N = M if N is None else N
        K = M if K is None else K
        if time not in ("device", "host"):
            raise ValueError("time must be 'device' or 'host'")
        self.backend = api._resolve_backend_for(kernel, backend)
        self.M, self.N, self.K = M, N, K
        self._bench = _fastgemm.Bench(M, N, K, False, False, 1.0, 0.0, seed)
        self.verification = None
        if verify:  # a timed kernel is a verified kernel
            r = self._bench.run(self.backend, kernel, 0, 1, True, 0.0)
            self.verification = r.verification
            if not r.verification.passed:
                raise AssertionError(f"{kernel} failed verification: rel err {r.verification.rel_err:.2e}")
        self._launch = self._bench.prepare(self.backend, kernel)
        self.info = self._launch.kernel
        self.kernel = self.info.name
        self._time_index = 0 if time == "device" else 1
        self._clock = clock
        self.device_times: List[float] = []
        self.host_times: List[float] = []

    def __call__(self) -> None:
        device_s, host_s, _prep = self._launch.step()
        self.device_times.append(device_s)
        self.host_times.append(host_s)
        self._clock.advance((device_s, host_s)[self._time_index])

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K

    def extra_info(self, benchmark=None) -> dict:
        """GFLOP/s, % of measured peak, relative error, backend and device for extra_info."""
        import numpy as np

        times = self.device_times[-len(benchmark.stats.stats.data):] if benchmark is not None else self.device_times
        median = float(np.median(times)) if times else float("nan")
        gflops = self.flops / median * 1e-9 if times else float("nan")
        status = {b.name: b for b in _fastgemm.backends()}[self.backend]
        info = {
            "kernel": self.kernel, "backend": self.backend, "device": status.device,
            "M": self.M, "N": self.N, "K": self.K, "gflops": gflops,
            "precision": self.info.precision, "threads": _fastgemm.get_num_threads(),
            "rel_err": self.verification.rel_err if self.verification else None,
        }
        ceil = roofline.cached_ceilings(self.backend)
        if ceil and ceil.peak_gflops > 0:
            info["pct_of_peak"] = 100.0 * gflops / ceil.peak_gflops
        return info

"""benchmarks/gpu_telemetry.py: parsing nvidia-smi's samples and averaging them over a
kernel's timed span (the SM MHz and W columns of benchmarks/cuda_ladder.py)."""

import datetime
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import gpu_telemetry  # noqa: E402


def test_parse_sample_reads_timestamp_clock_and_power():
    t, mhz, watts = gpu_telemetry.parse_sample("2026/11/29 20:45:53.081, 1530, 691.42\n")
    assert t == pytest.approx(datetime.datetime(2026, 11, 29, 20, 45, 53, 81000).timestamp())
    assert (mhz, watts) == (1530.0, 691.42)


@pytest.mark.parametrize("line", ["timestamp, clocks.current.sm [MHz], power.draw [W]",
                                  "2026/11/29 20:45:53.081, [N/A], 691.42", "", "No devices were found"])
def test_parse_sample_skips_what_is_not_a_sample(line):
    assert gpu_telemetry.parse_sample(line) is None


def test_mean_window_averages_only_the_samples_inside():
    samples = [(10.0, 1980.0, 400.0), (10.05, 1500.0, 690.0), (10.10, 1400.0, 700.0), (10.15, 1980.0, 100.0)]
    mhz, watts, n = gpu_telemetry.mean_window(samples, 10.04, 10.11)
    assert (mhz, watts, n) == (pytest.approx(1450.0), pytest.approx(695.0), 2)
    assert gpu_telemetry.mean_window(samples, 11.0, 12.0) is None


def test_nvidia_smi_index_matches_cuda_bus_id_to_nvidia_smi_row():
    listing = "00000000:18:00.0, 0\n00000000:19:00.0, 1\n00000000:3A:00.0, 2\n"
    assert gpu_telemetry.nvidia_smi_index("0000:19:00.0", listing) == "1"
    assert gpu_telemetry.nvidia_smi_index("0000:3a:00.0", listing) == "2"  # case of the hex digits
    assert gpu_telemetry.nvidia_smi_index("0000:99:00.0", listing) == "0"
    assert gpu_telemetry.nvidia_smi_index("", listing) == "0"


def test_sampler_without_nvidia_smi_says_why_and_reports_nothing(monkeypatch):
    monkeypatch.setattr(gpu_telemetry.shutil, "which", lambda _: None)
    s = gpu_telemetry.ClockSampler("0000:19:00.0").start()
    assert s.why_not == "nvidia-smi not found"
    assert s.window(0.0, 1e12) is None
    s.stop()


def test_cuda_ladder_prints_clock_columns_and_settles(monkeypatch, capsys):
    """benchmarks/cuda_ladder.py end to end on a stand-in backend: ratios from the same
    run, the clock columns from the sampler, and --settle-ms turning the warm-up into a
    timed one (warm-up count unbounded, stopped by the native runner at max_seconds / 2)."""
    import cuda_ladder

    class Status:
        name, available, device, reason = "cuda", True, "StandIn GPU", ""
        properties = [("pci bus id", "0000:19:00.0")]

    class Kernel:
        def __init__(self, name, step, precision):
            self.name, self.ladder_step, self.precision, self.bench_flops_cap = name, step, precision, 1e30

        def accepts(self, *shape):
            return True

    class Result:
        def __init__(self, ms):
            self.device_times = [ms / 1e3] * 5
            self.device_median = self.device_min = ms / 1e3
            self.host_median = ms / 1e3 + 1e-5
            self.rel_err, self.passed, self.tolerance = 1e-6, True, 1e-4

    calls = []

    def benchmark(name, S, **kw):
        calls.append((name, kw))
        return Result({"cublas": 2.0, "cublas_tf32": 0.4, "rung": 1.6}[name])

    class Sampler(gpu_telemetry.ClockSampler):
        def start(self):
            import time
            now = time.time()
            self.samples = [(now + 0.01 * i, 1500.0, 690.0) for i in range(-100, 2000)]
            return self

        def stop(self):
            pass

    monkeypatch.setattr(cuda_ladder.fastgemm, "backends", lambda: [Status()])
    monkeypatch.setattr(cuda_ladder.fastgemm, "kernels",
                        lambda backend: [Kernel("rung", 9, "fp32"), Kernel("cublas", 0, "fp32"),
                                         Kernel("cublas_tf32", 0, "tf32")])
    monkeypatch.setattr(cuda_ladder.fastgemm, "benchmark", benchmark)
    monkeypatch.setattr(cuda_ladder._fastgemm, "Bench", lambda *args: object())
    monkeypatch.setattr(cuda_ladder, "ClockSampler", Sampler)
    assert cuda_ladder.main(["--sizes", "64", "--rounds", "2", "--settle-ms", "10"]) == 0
    out = capsys.readouterr().out
    assert "| SM MHz | W |" in out
    assert "| rung | 9 | fp32 | 1.600 |" in out and "| 1.250 |  | 1500 | 690 |" in out
    # every kernel once per round; the first round in ladder order, baselines first
    assert [name for name, _ in calls] == ["cublas", "cublas_tf32", "rung", "cublas", "rung", "cublas_tf32"]
    assert all(kw["warmup"] == 1 << 30 and kw["max_seconds"] == 0.02 for _, kw in calls)


@pytest.mark.parametrize("knows_instant,expected", [(True, "power.draw.instant"), (False, "power.draw")])
def test_power_field_falls_back_where_the_driver_lacks_instant_power(tmp_path, knows_instant, expected):
    """Current drivers average power.draw over a second; power.draw.instant is preferred,
    and an older driver that rejects it gets power.draw."""
    fake = tmp_path / "nvidia-smi"
    reject = "" if knows_instant else (
        'case "$*" in *power.draw.instant*) echo \'Field "power.draw.instant" is not a valid field to query.\'; '
        "exit 2;; esac\n")
    fake.write_text("#!/bin/sh\n" + reject + "echo '2026/11/29 20:45:53.081, 1980, 612.50'\n")
    fake.chmod(0o755)
    assert gpu_telemetry.ClockSampler._first_supported(str(fake), "0") == expected


def test_rounds_change_which_kernel_follows_which():
    """cuda_ladder.round_order: each round times every kernel once, the first in ladder
    order, and the kernel right after a given one changes from round to round (the slot
    after cuBLAS SGEMM cost 1-2% on the H200 in steady state)."""
    import cuda_ladder

    kernels = ["cublas", "cublas_tf32", "async_tma_128x256", "tf32_wgmma_256x128", "fp32x3_wgmma_128x128", "tf32_mma_sync_128x128", "naive"]
    orders = [cuda_ladder.round_order(kernels, r) for r in range(3)]
    assert orders[0] == kernels
    assert all(sorted(o) == sorted(kernels) for o in orders)

    def successor(order, name):
        return order[(order.index(name) + 1) % len(order)]

    for name in kernels:
        assert len({successor(o, name) for o in orders}) == 3, name
    assert cuda_ladder.round_order([], 1) == []
    assert cuda_ladder.round_order(["cublas"], 2) == ["cublas"]
    assert cuda_ladder.round_order(["a", "b", "c"], 1) == ["a", "c", "b"]

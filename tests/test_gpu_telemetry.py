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

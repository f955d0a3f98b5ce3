"""The measurement harness: device clock, statistics, intensity model, records, charts."""

import csv
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import fastgemm
from fastgemm import harness, roofline


@pytest.mark.benchmark(timer=harness.device_clock)
def test_pytest_benchmark_reports_the_native_device_times(benchmark):
    k = harness.DeviceTimedKernel("ikj", 48, backend="cpu")
    benchmark.pedantic(k, rounds=6, warmup_rounds=2)
    data = benchmark.stats.stats.data
    # The clock advanced by exactly the native times of the timed rounds (not the warm-up).
    assert len(data) == 6 and len(k.device_times) == 8
    assert data == pytest.approx(k.device_times[2:], rel=1e-9, abs=1e-12)
    assert benchmark.stats.stats.min == pytest.approx(min(k.device_times[2:]))
    info = k.extra_info(benchmark)
    assert info["backend"] == "cpu" and info["gflops"] > 0 and info["rel_err"] < 1e-5
    assert math.isclose(info["gflops"], 2 * 48 ** 3 / np.median(k.device_times[2:]) / 1e9)


def test_device_clock_only_moves_by_recorded_time():
    clock = harness.DeviceClock()
    t0 = clock()
    k = harness.DeviceTimedKernel("kij", 16, backend="cpu", clock=clock, verify=False)
    assert clock() == t0
    k()
    k()
    assert clock() - t0 == pytest.approx(sum(k.device_times))
    with pytest.raises(ValueError):
        clock.advance(-1.0)


def test_benchresult_statistics():
    r = fastgemm.benchmark("ikj", 32, backend="cpu", warmup=0, iters=5)
    assert r.device_median == pytest.approx(float(np.median(r.device_times)))
    assert r.device_min == min(r.device_times)
    assert r.gflops_best >= r.gflops


def _info(**params):
    class Info:
        pass

    i = Info()
    i.params = params
    return i


def test_no_cache_model_matches_the_seed_counts():
    n = 4096
    naive = roofline.no_cache_intensity(_info(), n, n, n)
    # Two floats per multiply-add: 0.25 FLOP/byte (seed 000), plus one write of C.
    assert naive.flop_per_byte == pytest.approx(0.25, rel=1e-3)
    assert naive.bytes == pytest.approx(4 * (2 * n ** 3 + n * n))
    for t in (16, 32):
        tiled = roofline.no_cache_intensity(_info(tile=t), n, n, n)
        assert tiled.flop_per_byte == pytest.approx(t / 4, rel=1e-2)  # seed 000's T / 4
    rect = roofline.no_cache_intensity(_info(BM=128, BN=64), 256, 512, 64)
    assert rect.bytes == 4 * (256 * 64 * (512 // 64) + 64 * 512 * (256 // 128) + 256 * 512)
    edge = roofline.no_cache_intensity(_info(BM=64, BN=64), 65, 65, 10)  # edge tiles count whole
    assert edge.bytes == 4 * (65 * 10 * 2 + 10 * 65 * 2 + 65 * 65)
    assert roofline.tile_reuse(_info(MR=6, NR=16)) == (6, 16)


def test_roof_and_ridge():
    class C:
        peak_gflops = 1000.0
        bandwidth_gbs = 100.0

    assert roofline.ridge(C) == 10.0
    assert roofline.roof(C, 1.0) == 100.0 and roofline.roof(C, 50.0) == 1000.0


def test_cpu_ceilings_are_measured():
    c = roofline.cached_ceilings("cpu")
    assert c is not None and c.peak_gflops > 1 and c.bandwidth_gbs > 0.1
    assert "thread" in c.peak_probe and "MiB" in c.bandwidth_probe


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "fastgemm", *args], capture_output=True, text=True, timeout=600)


def _is_png(path):
    data = path.read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_bench_plot_json_csv_schema(tmp_path):
    png, js, cs = tmp_path / "ladder.png", tmp_path / "r.json", tmp_path / "r.csv"
    out = _cli("bench", "--backend", "cpu", "--size", "64", "--iters", "2", "--warmup", "0",
               "--kernels", "ikj,kij,tiled_ikj_32", "--plot", str(png), "--json", str(js), "--csv", str(cs))
    assert out.returncode == 0, out.stderr
    assert "% peak" in out.stdout
    assert _is_png(png)
    doc = json.loads(js.read_text())
    m = doc["machine"]
    for key in ("date", "fastgemm", "commit", "backend", "device", "build", "threads", "numpy"):
        assert key in m
    for r in doc["results"]:
        assert len(r["device_times"]) == 2 and r["gflops"] > 0 and r["passed"]
    rows = list(csv.DictReader(cs.open()))
    assert {r["kernel"] for r in rows} == {"openblas", "ikj", "kij", "tiled_ikj_32"} or len(rows) == 3
    assert float(rows[0]["gflops"]) > 0


def test_size_sweep_plot(tmp_path):
    png = tmp_path / "sweep.png"
    out = _cli("bench", "--backend", "cpu", "--sizes", "16:64", "--iters", "1", "--warmup", "0",
               "--kernels", "ikj,packed" if "packed" in {k.name for k in fastgemm.kernels("cpu")} else "ikj,kij",
               "--plot", str(png), "--no-peak")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("bench · backend cpu") == 3  # 16, 32, 64
    assert _is_png(png)


def test_tile_sweep_and_roofline_charts(tmp_path):
    out = _cli("sweep", "--backend", "cpu", "--family", "tiled_ikj", "--size", "64", "--iters", "1",
               "--plot", str(tmp_path / "tiles.png"))
    assert out.returncode == 0, out.stderr
    assert "varying BS" in out.stdout and _is_png(tmp_path / "tiles.png")
    out = _cli("roofline", "--backend", "cpu", "--size", "64", "--iters", "1", "--kernels", "ijk,ikj",
               "--plot", str(tmp_path / "roof.png"))
    assert out.returncode == 0, out.stderr
    assert "ridge point" in out.stdout and "FLOP/byte" in out.stdout
    assert _is_png(tmp_path / "roof.png")


def test_compare_prints_ratios(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        out = _cli("bench", "--backend", "cpu", "--size", "32", "--iters", "1", "--kernels", "ikj",
                   "--json", str(path), "--no-peak")
        assert out.returncode == 0, out.stderr
    out = _cli("compare", str(a), str(b))
    assert out.returncode == 0, out.stderr
    assert "ikj" in out.stdout and "B/A" in out.stdout


def test_missing_matplotlib_message(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_mpl(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    from fastgemm import plots

    with pytest.raises(fastgemm.FastgemmError, match="pip install"):
        plots.pyplot()

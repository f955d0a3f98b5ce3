"""Measurement you can trust, driven by a scripted clock: no test here depends on how fast
anything runs. The kernels really run (tiny problems), but the core's time source is
replaced by a clock that returns each kernel's quiet time multiplied by the load of a
simulated machine at that moment, so the flagging logic meets every disturbance we
script: spreads, drifts, re-measures, unstable pairs, probe problems and busy machines.
One test at the end starts a real competing load and checks that what bench prints is
consistent with its own evidence."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from fastgemm import _fastgemm, plots, report, roofline
from fastgemm.api import BenchResult
from fastgemm.cli import ladder, main

# Quiet time per call of each kernel (seconds); the true ratio is QUIET[base] / QUIET[k].
QUIET = {"ikj": 1.0e-3, "kij": 4.0e-3, "jki": 0.5e-3, "ijk": 2.0e-3}
BASE = "ikj"
KERNELS = ["kij", "jki", "ijk"]
LIMIT = 0.10


class ScriptedClock:
    """The n-th timed call of any kernel takes QUIET[kernel] * load(n)."""

    def __init__(self, load=lambda n: 1.0):
        self.load = load
        self.calls = []

    def __call__(self, kernel, measured_s):
        n = len(self.calls)
        self.calls.append(kernel)
        return QUIET[kernel] * self.load(n)


def quiet_policy(**kw):
    return _fastgemm.MeasurementPolicy(spread_limit=LIMIT, drift_limit=LIMIT, settle_seconds=0.0,
                                       watch_contention=False, **kw)


def compare(clock, kernels=KERNELS, iters=5):
    bench = _fastgemm.Bench(8, 8, 8, False, False, 1.0, 0.0, 1)
    c = _fastgemm.BaselineComparison(bench, "cpu", BASE, 1, iters, True, 0.0, quiet_policy(), clock)
    return c, [c.measure("cpu", k) for k in kernels]


def true_ratio(kernel):
    return QUIET[BASE] / QUIET[kernel]


def test_a_quiet_machine_gives_exact_ratios_and_no_flags():
    c, rows = compare(ScriptedClock())
    assert c.baseline.flags == []
    for k, t in zip(KERNELS, rows):
        assert t.flags == [] and t.ratio_trusted
        assert t.ratio == pytest.approx(true_ratio(k), rel=1e-12)
        assert t.interleaved is None
        assert _fastgemm.relative_spread(list(t.device_s)) == 0.0


def test_spread_is_the_interquartile_range_over_the_median():
    samples = [1.0, 2.0, 3.0, 4.0, 100.0]
    assert _fastgemm.relative_spread(samples) == pytest.approx(
        (np.percentile(samples, 75) - np.percentile(samples, 25)) / np.median(samples))
    assert _fastgemm.relative_spread([5.0]) == 0.0
    r = BenchResult("k", "cpu", 1, 1, 1, samples, samples, [], 1, False, None, None, None, None, 0.0, False)
    assert r.device_spread == pytest.approx(_fastgemm.relative_spread(samples))
    assert r.device_min == 1.0 and r.device_median == 3.0


def test_a_slow_baseline_block_is_caught_and_the_ratio_remeasured():
    # The baseline's first timed block runs 10x slow and nothing else does: its spread is
    # 0, but the check right after the first kernel disagrees with it.
    clock = ScriptedClock(lambda n: 10.0 if n < 5 else 1.0)
    _, rows = compare(clock)
    first = rows[0]
    assert first.block_ratio == pytest.approx(10 * true_ratio(KERNELS[0]))
    assert {"drift", "remeasured", "disagrees"} <= set(first.flags)
    assert first.ratio_trusted and first.ratio == pytest.approx(true_ratio(KERNELS[0]))
    for k, t in zip(KERNELS, rows):
        assert t.ratio == pytest.approx(true_ratio(k)), (k, t.flags)


def test_a_noisy_kernel_is_flagged_and_remeasured():
    # Three of the first kernel's five timed calls are 3x slow: the median moves, and so
    # does the interquartile range.
    clock = ScriptedClock(lambda n: 3.0 if n in (6, 8, 9) else 1.0)
    _, rows = compare(clock)
    assert "noisy" in rows[0].flags and "remeasured" in rows[0].flags
    assert rows[0].interleaved is not None and len(rows[0].interleaved.kernel_s) == 7
    assert rows[0].ratio == pytest.approx(true_ratio(KERNELS[0]))


def test_pairs_that_never_agree_make_the_row_unstable():
    rng = np.random.default_rng(7)
    factors = rng.uniform(1.0, 8.0, size=10_000)
    _, rows = compare(ScriptedClock(lambda n: factors[n]))
    unstable = [t for t in rows if "unstable" in t.flags]
    assert unstable, [t.flags for t in rows]
    for t in unstable:
        assert not t.ratio_trusted and t.ratio == t.block_ratio
        assert t.interleaved.spread > LIMIT


def _slowdowns():
    for start in range(0, 64):
        for length in (1, 2, 3, 4, 5, 6, 7, 8, 11, 14, 20, 40, 10_000):
            yield start, length


def test_no_single_slowdown_leaves_a_wrong_ratio_unflagged():
    """A slowdown by 6x of any start and length: every ratio still marked trusted is the
    true one; the rows it distorted carry flags."""
    for start, length in _slowdowns():
        clock = ScriptedClock(lambda n: 6.0 if start <= n < start + length else 1.0)
        _, rows = compare(clock)
        for k, t in zip(KERNELS, rows):
            if t.ratio_trusted:
                assert t.ratio == pytest.approx(true_ratio(k), rel=1e-9), (start, length, k, list(t.flags))
            if t.flags == []:
                assert t.block_ratio == pytest.approx(true_ratio(k), rel=1e-9), (start, length, k)


def test_a_steady_load_keeps_ratios_when_it_slows_both_sides_alike():
    _, rows = compare(ScriptedClock(lambda n: 3.0))
    for k, t in zip(KERNELS, rows):
        assert t.flags == [] and t.ratio == pytest.approx(true_ratio(k))


# --- the command, with the same scripted clock --------------------------------------------

@pytest.fixture
def scripted(monkeypatch):
    def use(load):
        clock = ScriptedClock(load)
        monkeypatch.setattr(ladder, "clock", clock)
        monkeypatch.setattr(ladder, "settle_seconds", 0.0)
        monkeypatch.setattr(ladder, "watch_contention", False)
        return clock
    return use


def _bench(tmp_path, capsys, *extra):
    path = tmp_path / "run.json"
    rc = main(["bench", "--backend", "cpu", "--size", "8", "--baseline", BASE, "--kernels", ",".join(KERNELS),
               "--iters", "5", "--no-peak", "--json", str(path), *extra])
    out = capsys.readouterr().out
    assert rc == 0, out
    return out, json.loads(path.read_text())


def _printed_rows(out):
    return {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in QUIET}


def test_bench_prints_median_min_spread_and_flags(tmp_path, capsys, scripted):
    scripted(lambda n: 10.0 if n < 5 else 1.0)
    out, doc = _bench(tmp_path, capsys)
    assert "median ms" in out and "min ms" in out and "spread" in out
    rows = _printed_rows(out)
    for r in doc["results"]:
        line = rows[r["kernel"]]
        for flag in r["flags"]:
            assert flag in line, (r["kernel"], flag, line)
        assert r["device_min"] <= r["device_median"]
        assert r["device_spread"] == pytest.approx(_fastgemm.relative_spread(r["device_times"]))
    assert doc["measurement"]["spread_limit"] == LIMIT


def test_every_printed_ratio_whose_remeasure_disagrees_is_flagged(tmp_path, capsys, scripted):
    scripted(lambda n: 10.0 if 5 <= n < 9 or 30 <= n < 34 else 1.0)
    out, doc = _bench(tmp_path, capsys)
    rows = _printed_rows(out)
    disagreeing = 0
    for r in doc["results"]:
        if r["kernel"] == BASE:
            continue
        il = r["interleaved"]
        if il is not None:
            assert "remeasured" in r["flags"]
            if abs(max(il["ratio"], r["block_ratio"]) / min(il["ratio"], r["block_ratio"]) - 1) > LIMIT:
                disagreeing += 1
                assert "disagrees" in r["flags"] and "disagrees" in rows[r["kernel"]]
        if r["ratio_trusted"]:
            assert r["ratio"] == pytest.approx(true_ratio(r["kernel"]))
        else:
            assert "?" in rows[r["kernel"]]
    assert disagreeing >= 1


def test_peak_probe_takes_the_best_of_several_trials():
    class Trial:
        def __init__(self, peak, bw):
            self.peak_gflops, self.bandwidth_gbs = peak, bw
            self.peak_probe, self.bandwidth_probe = f"fma {peak}", f"copy {bw}"

    trials = iter([Trial(65.0, 30.0), Trial(220.0, 25.0), Trial(150.0, 31.0)])
    c = roofline.best_of_trials("cpu", trials=3, probe=lambda backend: next(trials))
    assert c.peak_gflops == 220.0 and c.bandwidth_gbs == 31.0 and c.trials == 3
    assert "best of 3" in c.peak_probe


def test_matrix_unit_roofs_keep_their_best_trial_and_are_drawn(tmp_path):
    """A backend's matrix-unit roofs (the int8 tensor cores under fp32_ozaki) are kept per
    unit at their best trial, written to the JSON, and drawn on the roofline chart."""
    pytest.importorskip("matplotlib", reason="charts need matplotlib (an optional dependency)")

    class Trial:
        def __init__(self, peak, int8):
            self.peak_gflops, self.bandwidth_gbs = peak, 4000.0
            self.peak_probe, self.bandwidth_probe = "ffma", "copy"
            self.matrix_peaks_gops = [("int8 tensor cores", int8)]

    trials = iter([Trial(60e3, 1.5e6), Trial(61e3, 1.9e6), Trial(59e3, 1.7e6)])
    c = roofline.best_of_trials("cuda", trials=3, probe=lambda backend: next(trials))
    assert c.matrix_peaks == (("int8 tensor cores", 1.9e6),)
    assert c.to_dict()["matrix_peaks_gops"] == {"int8 tensor cores": 1.9e6}
    path = tmp_path / "roof.png"
    roofline.plot_roofline(path, c, [("ffma rung", 20.0, 50e3)], title="test", matrix_unit=())
    assert path.stat().st_size > 1000


def _result(kernel, seconds, precision="fp32", flags=()):
    n = 256
    return BenchResult(kernel, "cpu", n, n, n, [seconds] * 3, [seconds] * 3, [], 1, True, True, 0.0, 1e-7, 1e-5,
                       0.0, False, precision=precision, flags=list(flags))


def test_above_the_peak_is_a_probe_problem_not_a_percentage():
    n = 256
    fast = _result("fast", 2.0 * n ** 3 / 200e9)  # 200 GFLOP/s
    slow = _result("slow", 2.0 * n ** 3 / 50e9)   # 50 GFLOP/s
    text = report.table([slow, fast], None, peak_gflops=100.0)
    fast_line = next(line for line in text.splitlines() if line.startswith("fast"))
    slow_line = next(line for line in text.splitlines() if line.startswith("slow"))
    assert ">peak?" in fast_line and "200.0%" not in text
    assert "50.0%" in slow_line
    assert "PROBE PROBLEM" in text and report.above_peak([slow, fast], 100.0) == ["fast"]


def test_the_chart_flags_a_peak_line_below_its_bars(tmp_path):
    pytest.importorskip("matplotlib")
    n = 256
    fast = _result("fast", 2.0 * n ** 3 / 200e9)
    shaky = _result("shaky", 2.0 * n ** 3 / 50e9, flags=["remeasured", "unstable"])
    warnings = plots.plot_ladder(tmp_path / "l.png", [shaky, fast], None, title="t", peak_gflops=100.0)
    assert any("PROBE PROBLEM" in w and "fast" in w for w in warnings)
    assert any("shaky" in w for w in warnings)
    below = plots.plot_ladder(tmp_path / "m.png", [shaky], None, title="t", peak_gflops=100.0)
    assert below and not any("PROBE" in w for w in below)


def test_bench_warns_when_the_machine_is_busy(tmp_path, capsys, scripted, monkeypatch):
    scripted(lambda n: 1.0)
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    path = tmp_path / "r.json"
    assert main(["bench", "--backend", "cpu", "--size", "8", "--kernels", "kij", "--baseline", BASE, "--iters", "3",
                 "--no-peak", "--json", str(path)]) == 0
    cap = capsys.readouterr()
    assert "warning: the machine is busy (load average 64.00" in cap.err
    assert json.loads(path.read_text())["machine"]["load_average"][0] == 64.0


# --- a real competing load -----------------------------------------------------------------

def _change(a, b):
    return max(a, b) / min(a, b) - 1 if min(a, b) > 0 else 0.0


def test_bench_under_a_competing_load_flags_what_it_could_not_measure(tmp_path):
    """One spinning process per core while bench runs. Whatever the timings turn out to
    be, every row must be consistent with its own evidence (samples, checks, pairs), and
    every ratio printed as a measurement must come from a row that earned it."""
    cores = _fastgemm.available_cores()
    spin = "import time\nend = time.time() + 90\nwhile time.time() < end: pass\n"
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(cores)]
    try:
        path = tmp_path / "loaded.json"
        out = subprocess.run([sys.executable, "-m", "fastgemm", "bench", "--backend", "cpu", "--size", "64",
                              "--kernels", "ikj,tiled_ikj_32", "--baseline", "kij", "--iters", "5", "--no-peak",
                              "--json", str(path)], capture_output=True, text=True, timeout=300)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert out.returncode == 0, out.stderr
    doc = json.loads(path.read_text())
    limit = doc["measurement"]["spread_limit"]
    rows = _printed_rows_any(out.stdout, [r["kernel"] for r in doc["results"]])
    base = doc["results"][0]
    assert base["kernel"] == "kij" and base["baseline"] is None
    before = float(np.median(base["device_times"]))
    base_noisy = _fastgemm.relative_spread(base["device_times"]) > limit
    for r in doc["results"][1:]:
        flags = set(r["flags"])
        spread = _fastgemm.relative_spread(r["device_times"])
        assert r["device_spread"] == pytest.approx(spread)
        assert ("noisy" in flags) == (spread > limit)
        assert ("baseline-noisy" in flags) == base_noisy
        after = float(np.median(r["baseline_check_times"]))
        assert r["block_ratio"] == pytest.approx(before / float(np.median(r["device_times"])))
        assert r["baseline_drift"] == pytest.approx(_change(before, after))
        assert r["kernel_drift"] == pytest.approx(_change(float(np.median(r["device_times"])),
                                                          float(np.median(r["kernel_check_times"]))))
        drift = r["baseline_drift"] > limit or r["kernel_drift"] > limit
        assert ("drift" in flags) == drift
        suspicious = bool(flags & {"noisy", "baseline-noisy", "drift"})
        assert ("remeasured" in flags) == suspicious == (r["interleaved"] is not None)
        if suspicious:
            il = r["interleaved"]
            pairs = [b / k for b, k in zip(il["baseline_s"], il["kernel_s"])]
            assert il["ratio"] == pytest.approx(float(np.median(pairs)))
            assert ("disagrees" in flags) == (_change(il["ratio"], r["block_ratio"]) > limit)
            assert ("unstable" in flags) == (il["spread"] > limit)
            assert r["ratio"] == pytest.approx(r["block_ratio"] if "unstable" in flags else il["ratio"])
        else:
            assert r["ratio"] == pytest.approx(r["block_ratio"])
        if r["others_runnable"] is not None and min(r["others_runnable"]) >= 0:
            # The spinners were runnable from before bench started until after it ended.
            assert "busy" in flags
        assert r["ratio_trusted"] == (not flags & {"unstable", "busy"})
        if not r["ratio_trusted"]:
            assert "?" in rows[r["kernel"]], rows[r["kernel"]]
        before = after


def _printed_rows_any(out, names):
    return {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in names}

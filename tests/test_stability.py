"""Run-to-run stability (`fastgemm bench --processes N`): the distribution helpers and
the fresh-process runner, with a cheap kernel."""

import json
import subprocess

import pytest

from fastgemm import cli, stability
from fastgemm.cli import child

# Seed 003's 30 per-process bests of Accelerate (ms), as printed there.
SEED_MS = ([0.151] * 4 + [0.153] * 2 + [0.155] + [0.156] * 3 + [0.157] * 2 + [0.159] * 2 + [0.161] * 4 +
           [0.163, 0.166, 0.167, 0.168, 0.169, 0.178, 0.179] + [0.188] * 2 + [0.189, 0.191, 0.206])


def test_counts_reproduce_the_seed_layout():
    text = stability.format_counts([ms * 1e-3 for ms in SEED_MS], width=200)
    assert text.strip().startswith("0.151(4) 0.153(2) 0.155 0.156(3) 0.157(2) 0.159(2) 0.161(4) 0.163")
    assert text.strip().endswith("0.188(2) 0.189 0.191 0.206")
    assert sum(n for _, n in stability.counted([ms * 1e-3 for ms in SEED_MS])) == 30


def test_seed_fast_mode_is_one_mode_and_a_slow_sample_makes_two():
    fast = [ms * 1e-3 for ms in SEED_MS]
    assert len(stability.find_modes(fast)) == 1
    modes = stability.find_modes(fast + [0.787e-3, 0.808e-3])
    assert [m["count"] for m in modes] == [30, 2]
    assert modes[1]["low"] == pytest.approx(0.787e-3)


def test_summary_statistics():
    recs = [{"best_s": b, "device_s": [b, b * 1.1], "iters": 2} for b in (1e-3, 2e-3, 3e-3)]
    s = stability.summarize(recs, flops=2e6)
    assert s["min_s"] == 1e-3 and s["median_s"] == 2e-3 and s["max_s"] == 3e-3
    assert s["gflops_at_min"] == pytest.approx(2.0)
    assert s["within_process_spread_max"] == pytest.approx(1.1)
    assert len(s["modes"]) == 3  # each step is a 1.5x or 2x jump


def test_run_once_in_process_verifies_and_times():
    rec = child.run_once("cpu", "ikj", (9, 7, 5), warmup=0, iters=3)
    assert rec["passed"] is True and len(rec["device_s"]) == 3 and all(t > 0 for t in rec["device_s"])


def test_run_once_child_prints_one_result_line():
    cmd = child.command("cpu", "kij", (8, 8, 8), warmup=0, iters=2)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rec = child.parse_output(proc.stdout)
    assert rec["kernel"] == "kij" and rec["M"] == 8 and len(rec["device_s"]) == 2


def test_bench_processes_writes_every_sample(tmp_path, capsys):
    out = tmp_path / "stab.json"
    rc = cli.main(["bench", "--backend", "cpu", "--processes", "3", "--kernels", "ikj", "--size", "24",
                   "--iters", "2", "--warmup", "0", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "best of 2 per process" in text and "modes:" in text
    doc = json.loads(out.read_text())
    procs = doc["kernels"]["ikj"]["processes"]
    assert len(procs) == 3 and all(len(p["device_s"]) == 2 for p in procs)
    assert len({p["pid"] for p in procs}) == 3, "each measurement must come from a fresh process"
    assert procs[0]["passed"] is True
    assert doc["kernels"]["ikj"]["summary"]["processes"] == 3


def test_bench_processes_rejects_unknown_kernels(capsys):
    assert cli.main(["bench", "--backend", "cpu", "--processes", "2", "--kernels", "nope"]) == 2
    assert "unknown kernel" in capsys.readouterr().err

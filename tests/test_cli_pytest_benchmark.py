"""The pytest-benchmark suites in benchmarks/ behave like pytest-benchmark: every suite
takes --fastgemm-sizes and --fastgemm-rounds, the defaults show in --help, and metal-emu
rows never reach a saved file or a comparison."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import fastgemm

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

pytest.importorskip("pytest_benchmark")


def pytest_run(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def collected(*args):
    out = pytest_run("--collect-only", "-q", *args)
    assert out.returncode == 0, out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_every_suite_takes_its_sizes_from_the_option():
    packed = collected(str(BENCHMARKS / "bench_cpu_packed.py"), "--fastgemm-sizes", "48,96")
    assert packed and all(any(s in t for s in ("48x48x48", "96x96x96", "96x64x96", "64x96x96", "96x96x64"))
                          for t in packed), packed
    assert not any("4096" in t or "128x128x128" in t for t in packed)
    ladder = collected(str(BENCHMARKS / "bench_ladder.py"), "--fastgemm-sizes", "24")
    assert ladder and all(t.endswith("-24]") for t in ladder), ladder


def test_a_bad_size_list_is_a_usage_error():
    out = pytest_run("--collect-only", "-q", str(BENCHMARKS / "bench_ladder.py"), "--fastgemm-sizes", "big")
    assert out.returncode != 0 and "--fastgemm-sizes" in (out.stdout + out.stderr)


def test_help_shows_the_defaults():
    out = pytest_run(str(BENCHMARKS), "--help")
    text = " ".join(out.stdout.split())
    assert "--fastgemm-sizes" in text and "256,512 for bench_ladder.py" in text
    assert "128,256,512,1024,2048,4096 for bench_cpu_packed.py" in text
    assert "timed rounds of every benchmark (default: 5)" in text


def _conftest():
    spec = importlib.util.spec_from_file_location("fastgemm_benchmarks_conftest", BENCHMARKS / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_emulator_rows_are_left_out_of_saved_files_and_comparisons():
    conf = _conftest()
    rows = [{"name": "test_ladder[cpu-ikj-64]", "group": "cpu 64x64x64", "extra_info": {"backend": "cpu"}},
            {"name": "test_ladder[metal-emu-naive-64]", "group": "metal-emu 64x64x64", "extra_info":
             {"backend": "metal-emu"}},
            {"name": "test_ladder[metal-emu-tiled-64]", "group": "metal-emu 64x64x64 (emulator)", "extra_info": {}}]
    saved = {"benchmarks": list(rows)}
    conf.pytest_benchmark_update_json(None, [], saved)
    assert [b["name"] for b in saved["benchmarks"]] == ["test_ladder[cpu-ikj-64]"]
    old = {"benchmarks": list(rows)}
    conf.pytest_benchmark_compare_machine_info(None, None, {}, old)
    assert [b["name"] for b in old["benchmarks"]] == ["test_ladder[cpu-ikj-64]"]


def test_a_real_run_saves_timings_only_with_the_rounds_asked_for(tmp_path):
    emu = "metal-emu" in {b.name for b in fastgemm.backends() if b.available}
    selection = "cpu-ikj-16 or cpu-kij-16" + (" or metal-emu" if emu else "")
    out_json = tmp_path / "bench.json"
    out = pytest_run(str(BENCHMARKS / "bench_ladder.py"), "--benchmark-only", "--fastgemm-sizes", "16",
                     "--fastgemm-rounds", "3", "-k", selection, f"--benchmark-json={out_json}", "-q")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    doc = json.loads(out_json.read_text())
    names = [b["name"] for b in doc["benchmarks"]]
    assert "test_ladder[cpu-ikj-16]" in names and "test_ladder[cpu-kij-16]" in names
    assert not any("metal-emu" in n for n in names)
    assert all(b["stats"]["rounds"] == 3 for b in doc["benchmarks"])
    if emu:
        assert "metal-emu" in out.stdout  # run and shown, only not saved

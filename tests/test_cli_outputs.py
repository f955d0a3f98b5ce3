"""Outputs that cannot be lost: every advertised file written (or the command refused up
front), JSON for info and kernels, provenance from the build itself, and compare as a CI
regression gate."""

import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

import fastgemm
from fastgemm import _fastgemm, report, roofline
from fastgemm.cli import ladder, main


def test_info_json(capsys):
    assert main(["info", "--json", "--no-probes"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fastgemm"] == fastgemm.__version__
    assert doc["build"]["commit"] == _fastgemm.build_info["commit"]
    assert {b["name"] for b in doc["backends"]} == {b.name for b in fastgemm.backends()}
    assert doc["auto"] == _fastgemm.best_backend()
    assert doc["tuning"]["cache_file"] == str(fastgemm.autotune.cache_file())
    assert doc["tuning"]["autotune"] == _fastgemm.autotune_enabled()


def test_info_counts_the_classes_loaded_and_those_awaiting_a_second_opinion(tmp_path):
    """A cache of two classes, one provisional: `fastgemm info` says so, in text and JSON."""
    name = fastgemm.autotune.cache_file().name
    (tmp_path / name).write_text(json.dumps({
        "cpu|fp32|nn|beta0|64x64x64": "direct", "cpu|fp32|nt|beta0|64x64x64": "direct_dot",
        "unconfirmed": {"cpu|fp32|nn|beta0|64x64x64": {"calls_left": 9, "rates": {"cpu/direct": 1e9}}}}))
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path), FASTGEMM_AUTOTUNE="1")
    cli = [sys.executable, "-m", "fastgemm", "info", "--no-probes"]
    out = subprocess.run(cli + ["--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    tuning = json.loads(out.stdout)["tuning"]
    assert tuning == {"autotune": True, "cache_file": str(tmp_path / name), "classes": 2, "provisional": 1}
    text = subprocess.run(cli, capture_output=True, text=True, env=env, timeout=120)
    assert text.returncode == 0 and "2 known, 1 not yet confirmed" in text.stdout, text.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX byte paths")
def test_info_prints_a_cache_path_that_is_not_utf8(tmp_path):
    """A FASTGEMM_CACHE_DIR with a byte no encoding decodes, on a strict UTF-8 stdout: the
    byte is shown escaped instead of the command failing."""
    folder = os.fsencode(str(tmp_path)) + b"/cache-\xff"
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    env = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    env[b"FASTGEMM_CACHE_DIR"] = folder
    out = subprocess.run([sys.executable, "-m", "fastgemm", "info", "--no-probes"], capture_output=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert b"cache-\\xff" in out.stdout, out.stdout


def _refuse(constant):
    raise ValueError(f"{constant} is not standard JSON")


def test_kernels_json_lists_every_kernel(tmp_path, capsys):
    assert main(["kernels", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=_refuse)  # strict parsers (jq) must read it
    assert [(k["backend"], k["name"]) for k in doc["kernels"]] == [(k.backend, k.name) for k in fastgemm.kernels()]
    one = next(k for k in doc["kernels"] if k["name"] == "ikj")
    assert one["precision"] == "fp32" and one["backend"] == "cpu"
    path = tmp_path / "k.json"
    assert main(["kernels", "--backend", "cpu", "--json", str(path)]) == 0
    assert {k["backend"] for k in json.loads(path.read_text())["kernels"]} == {"cpu"}


def test_build_info_records_the_source_of_the_build():
    info = _fastgemm.build_info
    for key in ("version", "commit", "describe", "dirty", "compiler", "cxx_flags", "build_type"):
        assert key in info, key
    assert info["dirty"] in ("true", "false", "unknown")
    assert info["commit"] == "unknown" or (len(info["commit"]) == 40 and int(info["commit"], 16) >= 0)


def test_result_files_carry_the_build_commit_not_the_working_directorys(tmp_path):
    """Run inside another git repository: the JSON still names the commit fastgemm was
    built from, as recorded at build time."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    other = tmp_path / "another-project"
    other.mkdir()
    git = ["git", "-C", str(other), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (other / "f.txt").write_text("x")
    subprocess.run(git + ["add", "f.txt"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "another project"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    out = subprocess.run([sys.executable, "-m", "fastgemm", "bench", "--backend", "cpu", "--size", "8", "--kernels",
                          "ikj", "--iters", "1", "--no-peak", "--json", "r.json"], cwd=other, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    machine = json.loads((other / "r.json").read_text())["machine"]
    assert machine["commit"] == _fastgemm.build_info["commit"] != head
    assert machine["build"]["dirty"] == _fastgemm.build_info["dirty"]
    for lib in ("python", "numpy", "tqdm"):
        assert machine["libraries"][lib]
    assert "blas" in machine["backend_properties"] or not any(k.baseline for k in fastgemm.kernels("cpu"))


class _FakeCeilings(SimpleNamespace):
    def to_dict(self):
        return dict(vars(self))


def test_roofline_json_is_written(tmp_path, capsys, monkeypatch):
    fake = _FakeCeilings(peak_gflops=1000.0, bandwidth_gbs=50.0, peak_probe="fake", bandwidth_probe="fake")
    monkeypatch.setattr(roofline, "cached_ceilings", lambda backend: fake)
    monkeypatch.setattr(ladder, "settle_seconds", 0.0)
    path = tmp_path / "rl.json"
    assert main(["roofline", "--backend", "cpu", "--size", "16", "--kernels", "ikj,tiled_ikj_8", "--iters", "1",
                 "--json", str(path)]) == 0
    assert f"results written to {path}" in capsys.readouterr().out
    doc = json.loads(path.read_text())
    assert doc["ceilings"]["peak_gflops"] == 1000.0
    points = {p["kernel"]: p for p in doc["points"]}
    assert {"ikj", "tiled_ikj_8"} <= set(points)
    assert points["ikj"]["flop_per_byte"] > 0 and points["ikj"]["roof"] > 0 and "bound" in points["ikj"]
    assert {r["kernel"] for r in doc["results"]} >= {"ikj", "tiled_ikj_8"}


def test_sweep_with_nothing_to_chart_refuses_the_plot_up_front(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(_fastgemm, "Bench", None)  # any work would fail
    rc = main(["sweep", "--backend", "cpu", "--family", "ikj_threads", "--size", "16",
               "--plot", str(tmp_path / "s.png")])
    assert rc == 2 and "nothing to chart" in capsys.readouterr().err
    assert not (tmp_path / "s.png").exists()


def test_written_files_leave_no_partial_file_behind(tmp_path):
    path = tmp_path / "out.json"
    report.write_json_document(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert os.listdir(tmp_path) == ["out.json"]


def _result_file(path, rows, backend_device="cpu"):
    path.write_text(json.dumps({"machine": {"date": "d", "device": backend_device, "commit": "c", "dirty": "false"},
                                "results": rows}))
    return str(path)


def _row(kernel, seconds, backend="cpu", n=64, flags=()):
    return {"backend": backend, "kernel": kernel, "M": n, "N": n, "K": n, "device_median": seconds,
            "gflops": 2.0 * n ** 3 / seconds * 1e-9, "flags": list(flags)}


def test_compare_fails_above_the_threshold_and_ignores_emulator_rows(tmp_path, capsys):
    a = _result_file(tmp_path / "a.json", [_row("ikj", 1.0e-3), _row("packed", 1.0e-3),
                                           _row("naive", 1.0e-3, backend="metal-emu")])
    b = _result_file(tmp_path / "b.json", [_row("ikj", 1.10e-3), _row("packed", 1.02e-3),
                                           _row("naive", 9.0e-3, backend="metal-emu")])
    assert main(["compare", a, b]) == 0  # without a threshold: a report
    assert main(["compare", a, b, "--fail-above", "5%"]) == 1
    out = capsys.readouterr().out
    regressed = [line for line in out.splitlines() if "REGRESSION" in line]
    assert len(regressed) == 1 and "ikj" in regressed[0]
    assert "emulator: not a timing" in out
    assert main(["compare", a, b, "--fail-above", "20"]) == 0
    report_path = tmp_path / "cmp.json"
    assert main(["compare", a, b, "--fail-above", "5%", "--json", str(report_path)]) == 1
    assert json.loads(report_path.read_text())["regressions"] == 1


def test_compare_reads_what_bench_writes(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ladder, "settle_seconds", 0.0)
    paths = []
    for name in ("a", "b"):
        paths.append(str(tmp_path / f"{name}.json"))
        assert main(["bench", "--backend", "cpu", "--size", "16", "--kernels", "ikj", "--iters", "2", "--no-peak",
                     "--json", paths[-1]]) == 0
    assert main(["compare", *paths]) == 0
    assert "ikj" in capsys.readouterr().out


def test_json_through_a_link_writes_the_target_and_keeps_the_link(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert main(["info", "--no-probes", "--json", str(link)]) == 0
    assert link.is_symlink() and json.loads(target.read_text())["fastgemm"] == fastgemm.__version__


def test_json_to_a_name_at_the_length_limit(tmp_path):
    """A file name of 255 bytes: its temporary file's name must not be longer."""
    path = tmp_path / ("r" * 250 + ".json")
    assert main(["info", "--no-probes", "--json", str(path)]) == 0
    assert json.loads(path.read_text())["fastgemm"] == fastgemm.__version__
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_json_to_a_stream_is_written_into_it(tmp_path):
    """A FIFO, and /dev/stdout sent to a file: the text goes into the stream, whose name
    stays what it was (a rename would have replaced /dev/stdout itself), after what was
    written there before."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    report.write_text(str(fifo), "streamed\n")
    assert reader.communicate(timeout=30)[0] == "streamed\n" and fifo.is_fifo()
    stdout_was_link = os.path.islink("/dev/stdout")
    captured = tmp_path / "stdout.txt"
    code = ("import sys; from fastgemm.cli import main; print('before', flush=True); "
            "sys.exit(main(['info', '--no-probes', '--json', '/dev/stdout']))")
    with open(captured, "w") as f:
        out = subprocess.run([sys.executable, "-c", code], stdout=f, stderr=subprocess.PIPE, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, rest = captured.read_text().split("\n", 1)
    assert first == "before" and json.loads(rest)["fastgemm"] == fastgemm.__version__
    assert os.path.islink("/dev/stdout") == stdout_was_link


def test_sweep_of_a_family_whose_kernels_carry_different_parameters(tmp_path, capsys):
    """ikj and ikj_threads have no parameters, ikj@O0 ... ikj@O3fm an -O level and
    -ffast-math: all in the table, the latter in the grid, and the JSON written."""
    path = tmp_path / "sweep.json"
    assert main(["sweep", "--family", "ikj", "--size", "16", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "fast_math (rows) x opt_level (columns)" in out
    kernels = {r["kernel"] for r in json.loads(path.read_text())["results"]}
    assert {"ikj", "ikj@O0", "ikj@O3fm"} <= kernels

"""The README's commands do what the README says, as a newcomer would run them (at small
sizes where the README's own would take long). The install commands themselves are what
CI runs (.ci/run), so they are not repeated here."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fastgemm

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def run(args, timeout=300):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_the_start_commands_are_the_ones_ci_runs():
    shell = "\n".join(blocks("sh"))
    assert "pip install . && fastgemm bench" in shell
    assert 'pip install ".[test]" && python -m pytest' in shell
    ci = (REPO / ".ci" / "run").read_text()
    assert 'pip install ".[test]"' in ci and "pytest" in ci


def test_use_it_example_runs_as_written():
    """The Python block of "Use it", unchanged: every call it shows works."""
    (code,) = blocks("python")
    out = run([sys.executable, "-c", code], timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert re.match(r"[\d.]+ GFLOP/s, [\d.]+x \w+, rel err [\d.e+-]+$", lines[0]), lines[0]
    names = {b.name for b in fastgemm.backends()}
    assert {line.split()[0] for line in lines[1:1 + len(names)]} == names


def test_fastgemm_bench_prints_the_table_it_describes():
    """`fastgemm bench`: every default rung of the best backend and its baseline, one row
    each with time, GFLOP/s, checksum, relative error, difference from the baseline and
    speed against it (at 96^3 instead of 512^3, to keep the test short)."""
    out = run(["fastgemm", "bench", "--size", "96"], timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    for column in ("time", "GFLOP/s", "checksum", "rel err", "baseline"):
        assert column in text, column
    best = fastgemm._fastgemm.best_backend()
    baseline = next((k.name for k in fastgemm.kernels(best) if k.baseline), None)
    if baseline:
        assert re.search(rf"^\s*{re.escape(baseline)}\s", text, flags=re.M), text


@pytest.mark.parametrize("command", [["fastgemm", "info"], ["fastgemm", "kernels"]])
def test_documented_inspection_commands(command):
    """`fastgemm info` says what the machine has and why a backend is unavailable;
    `fastgemm kernels` lists every kernel with its constraints."""
    out = run(command)
    assert out.returncode == 0, out.stderr[-2000:]
    if command[1] == "info":
        for b in fastgemm.backends():
            assert b.name in out.stdout
            if not b.available:
                assert b.reason.split(":")[0] in out.stdout
    else:
        for k in fastgemm.kernels("cpu"):
            assert k.name in out.stdout
        constrained = next(k for k in fastgemm.kernels("cpu") if k.constraints)
        assert constrained.constraints[0] in out.stdout


def test_skip_cuda_option_is_a_real_cmake_option():
    """The README's way to skip the CUDA build names an option the build defines."""
    assert "-C cmake.define.FASTGEMM_CUDA=OFF" in README
    assert re.search(r'set\(FASTGEMM_CUDA "AUTO" CACHE STRING', (REPO / "CMakeLists.txt").read_text())


def test_every_command_of_the_documentation_index_names_a_file_that_exists():
    for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if "://" not in link:
            assert (REPO / link).exists(), link

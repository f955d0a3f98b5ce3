"""The C++ face of the installed package: headers, libfastgemm and the CMake package
that `pip install` puts in site-packages, used the way a C++ pipeline would use them.

examples/cpp is configured with find_package(fastgemm) pointed at fastgemm.cmake_dir(),
built and run; the program checks its own sgemm results against a float64 loop, from
one thread and from several threads sharing one Context, and prints an error message
that must equal the one Python raises for the same mistake.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastgemm

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cpp"


def _cxx_compiler():
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


needs_toolchain = pytest.mark.skipif(
    shutil.which("cmake") is None or _cxx_compiler() is None,
    reason="building the C++ example needs cmake and a C++ compiler, and this machine lacks one",
)


def test_cmake_dir_holds_the_package():
    d = Path(fastgemm.cmake_dir())
    assert (d / "fastgemmConfig.cmake").is_file()
    assert (d / "fastgemmConfigVersion.cmake").is_file()
    assert list(d.glob("fastgemmTargets*.cmake"))
    include = Path(fastgemm._cmake.include_dir())
    # The public header includes "core/...", so both folders must be installed side by side.
    assert (include / "fastgemm" / "fastgemm.hpp").is_file()
    assert (include / "core" / "problem.hpp").is_file()
    # Only the public API: the registry, the interrupt machinery and the benchmark
    # orchestration are the library's own.
    for private in ("core/registry.hpp", "core/interrupt.hpp", "core/host_kernel.hpp",
                    "fastgemm/comparison.hpp", "fastgemm/contention.hpp"):
        assert not (include / private).exists(), private
    assert list(Path(fastgemm._cmake.library_dir()).glob("*fastgemm*"))


@pytest.mark.parametrize("flag, func", [("--cmake-dir", "cmake_dir"), ("--include-dir", "include_dir")])
def test_python_m_fastgemm_prints_paths(flag, func):
    out = subprocess.run([sys.executable, "-m", "fastgemm", flag], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == getattr(fastgemm._cmake, func)()


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """Builds examples/cpp against the installed package; returns the executable."""
    build = tmp_path_factory.mktemp("cpp-example")
    configure = subprocess.run(
        ["cmake", "-S", str(EXAMPLE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
         f"-Dfastgemm_DIR={fastgemm.cmake_dir()}", f"-DCMAKE_CXX_COMPILER={_cxx_compiler()}"],
        capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    assert f"fastgemm {fastgemm.__version__}" in configure.stdout  # the package we meant, not another
    built = subprocess.run(["cmake", "--build", str(build), "-j", "2"], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    exe = build / "fastgemm_example"
    assert exe.is_file()
    return exe


def _run(exe, *args):
    # No LD_LIBRARY_PATH help: the executable must find libfastgemm (and libfastgemm its
    # OpenBLAS) through the RPATHs the CMake package gave it.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120, env=env)


@needs_toolchain
def test_example_runs_and_checks_itself(example):
    out = _run(example)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "fastgemm example: OK" in out.stdout
    assert re.search(r"rel_err \S+ \(tolerance \S+\) ok", out.stdout), out.stdout
    assert "verified ok" in out.stdout


@needs_toolchain
def test_example_threads_share_one_context(example):
    out = _run(example, "--threads", "8")
    assert out.returncode == 0, out.stdout + out.stderr
    m = re.search(r"threads: (\d+)/(\d+) concurrent calls correct", out.stdout)
    assert m, out.stdout
    assert int(m.group(2)) == 24 and m.group(1) == m.group(2)


@needs_toolchain
def test_cpp_and_python_raise_the_same_message(example):
    out = _run(example, "--backend", "cpu")
    assert out.returncode == 0, out.stdout + out.stderr
    cpp_message = re.search(r"^NotFoundError: (.*)$", out.stdout, re.M).group(1)
    rng = np.random.default_rng(3)
    A = rng.uniform(-1, 1, (123, 45)).astype(np.float32)
    B = rng.uniform(-1, 1, (77, 45)).astype(np.float32)
    with pytest.raises(fastgemm.NotFoundError) as err:
        fastgemm.sgemm(A, B, trans_b=True, kernel="no_such_kernel", backend="cpu")
    assert str(err.value) == cpp_message

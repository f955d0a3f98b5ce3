"""Where this installation keeps fastgemm's C++ face: the CMake package, the headers
and libfastgemm (the same library this Python module runs on).

    cmake -S . -B build -Dfastgemm_DIR="$(python -m fastgemm --cmake-dir)"

then ``find_package(fastgemm CONFIG REQUIRED)`` and link ``fastgemm::fastgemm``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["cmake_dir", "include_dir", "library_dir"]

_PACKAGE = Path(__file__).resolve().parent


def _existing(path: Path, what: str) -> str:
    if not path.exists():
        raise FileNotFoundError(
            f"fastgemm's {what} is not installed at {path}; it comes with the wheel "
            f"(pip install --no-build-isolation .), not with a source checkout on sys.path"
        )
    return str(path)


def cmake_dir() -> str:
    """Directory of fastgemmConfig.cmake, for ``-Dfastgemm_DIR=`` (like pybind11's get_cmake_dir)."""
    return str(Path(_existing(_PACKAGE / "lib" / "cmake" / "fastgemm" / "fastgemmConfig.cmake",
                              "CMake package")).parent)


def include_dir() -> str:
    """Directory that holds ``fastgemm/fastgemm.hpp`` (and the ``core/`` headers it includes)."""
    return str(Path(_existing(_PACKAGE / "include" / "fastgemm" / "fastgemm.hpp", "C++ header")).parent.parent)


def library_dir() -> str:
    """Directory of libfastgemm."""
    return _existing(_PACKAGE / "lib", "C++ library")


# `python -m fastgemm --cmake-dir` and friends print one path and exit.
PATH_FLAGS = {"--cmake-dir": cmake_dir, "--include-dir": include_dir, "--library-dir": library_dir}

"""cmake/provenance.cmake, which records at build time what tree a library was built
from: a commit and dirty flag for a git checkout of its own, "unknown" for anything else
(a plain folder, or a copy inside another project's repository)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "cmake" / "provenance.cmake"

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("git") is None,
                                reason="needs cmake and git")


def record(source: Path, out: Path) -> dict:
    subprocess.run(["cmake", f"-DSOURCE_DIR={source}", f"-DOUTPUT={out}", "-P", str(SCRIPT)], check=True,
                   capture_output=True)
    return dict(re.findall(r'#define FASTGEMM_SOURCE_(\w+) "([^"]*)"', out.read_text()))


def git(repo: Path, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_a_plain_folder_is_unknown(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    assert record(src, tmp_path / "p.hpp") == {"COMMIT": "unknown", "DESCRIBE": "unknown", "DIRTY": "unknown"}


def test_a_git_checkout_records_its_commit_and_dirty_flag(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("1")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    head = git(repo, "rev-parse", "HEAD")
    out = tmp_path / "p.hpp"
    assert record(repo, out) == {"COMMIT": head, "DESCRIBE": head[:7], "DIRTY": "false"}
    before = out.stat().st_mtime_ns
    record(repo, out)
    assert out.stat().st_mtime_ns == before, "an unchanged tree must not rewrite the header"
    (repo / "a.txt").write_text("2")
    got = record(repo, out)
    assert got["COMMIT"] == head and got["DIRTY"] == "true" and got["DESCRIBE"].endswith("-dirty")


def test_a_copy_inside_another_repository_is_unknown(tmp_path):
    outer = tmp_path / "outer"
    (outer / "vendored").mkdir(parents=True)
    git(outer, "init", "-q")
    (outer / "vendored" / "x.txt").write_text("x")
    git(outer, "add", ".")
    git(outer, "commit", "-q", "-m", "outer")
    assert record(outer / "vendored", tmp_path / "p.hpp")["COMMIT"] == "unknown"

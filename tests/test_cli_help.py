"""The command's help: every public command listed, the internal one hidden, every option
explained, and progress bars that say which kernel and size they are on."""

import argparse
import io
import subprocess
import sys

import pytest

from fastgemm import cli
from fastgemm.cli import common

PUBLIC = ["bench", "sweep", "roofline", "compare", "kernels", "info", "emu", "explain-diff", "profile"]


def _subparsers(parser):
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_top_level_help_names_every_public_command_and_hides_the_internal_one(capsys):
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    for name in PUBLIC:
        assert f"    {name}" in text, name
    assert "_run-once" not in text
    assert "--cmake-dir" in text and "--include-dir" in text


def test_every_registered_command_is_accounted_for():
    assert set(_subparsers(cli.build_parser())) == set(PUBLIC) | {"_run-once"}


@pytest.mark.parametrize("name", PUBLIC + ["_run-once"])
def test_every_option_has_help(name):
    parser = _subparsers(cli.build_parser())[name]
    missing = [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
               if a.help in (None, "") and not isinstance(a, argparse._HelpAction)]
    assert not missing, f"{name}: options without help: {missing}"


def test_defaults_are_shown_in_the_help(capsys):
    assert cli.main(["bench", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for shown in ("(default: auto)", "(default: 512)", "(default: 1)", "(default: 5)", "(default: 0x5eed)"):
        assert shown in text, shown


def test_cmake_dir_through_the_command():
    out = subprocess.run([sys.executable, "-c", "import sys; from fastgemm.cli import main; "
                          "sys.exit(main(['--cmake-dir']))"], capture_output=True, text=True, timeout=60)
    from fastgemm import _cmake

    assert out.returncode == 0 and out.stdout.strip() == _cmake.cmake_dir()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bars_name_the_kernel_and_size():
    stream = _Terminal()
    seen = list(common.progress(["ikj", "packed"], "cpu 64x64x64", label=lambda k: f"{k} 64x64x64", stream=stream))
    assert seen == ["ikj", "packed"]
    shown = stream.getvalue()
    assert "ikj 64x64x64" in shown and "packed 64x64x64" in shown and "cpu 64x64x64" in shown


def test_no_progress_bar_off_a_terminal():
    stream = io.StringIO()
    assert list(common.progress([1, 2], "x", label=str, stream=stream)) == [1, 2]
    assert stream.getvalue() == ""

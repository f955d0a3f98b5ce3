"""The `fastgemm` command works end to end (small sizes: this is a smoke test)."""

import json
import subprocess
import sys

import fastgemm


def run(*args):
    return subprocess.run([sys.executable, "-m", "fastgemm", *args], capture_output=True, text=True,
                          timeout=300)


def test_version():
    out = run("--version")
    assert out.returncode == 0 and fastgemm.__version__ in out.stdout


def test_bench_prints_ladder_table_and_json(tmp_path):
    path = tmp_path / "r.json"
    out = run("bench", "--backend", "cpu", "--size", "48", "--iters", "1", "--warmup", "0", "--json", str(path),
              "--csv", str(tmp_path / "r.csv"))
    assert out.returncode == 0, out.stderr
    for name in ("ijk", "ikj", "jki", "tiled_ikj_8", "ikj_threads", "GFLOP/s", "checksum"):
        assert name in out.stdout
    doc = json.loads(path.read_text())
    assert doc["machine"]["backend"] == "cpu" and doc["results"]
    assert all(r["passed"] for r in doc["results"])
    header = (tmp_path / "r.csv").read_text().splitlines()[0]
    assert header.startswith("kernel,backend,M,N,K")


def test_bench_shape_and_kernel_selection():
    out = run("bench", "--backend", "cpu", "--shape", "33x17x9", "--kernels", "ikj,kij", "--iters", "1")
    assert out.returncode == 0, out.stderr
    assert "33x17x9" in out.stdout and "kij" in out.stdout and "jki" not in out.stdout


def test_bench_rejects_unknown_kernel_and_backend():
    out = run("bench", "--backend", "cpu", "--kernels", "nope", "--size", "8")
    assert out.returncode == 2 and "unknown kernel" in out.stderr
    out = run("bench", "--backend", "tpu", "--size", "8")
    assert out.returncode == 2 and "unknown backend" in out.stderr
    out = run("bench", "--shape", "8x8")
    assert out.returncode == 2 and "MxNxK" in out.stderr


def test_kernels_and_info():
    out = run("kernels", "--backend", "cpu")
    assert out.returncode == 0 and "tiled_ikj_64" in out.stdout
    out = run("info")
    assert out.returncode == 0 and "cpu" in out.stdout and "compiler" in out.stdout


class _Terminal:
    """A stderr that says it is a terminal and records what was written."""

    def __init__(self, tty=True):
        self.text, self.tty = "", tty

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_large_operands_get_a_preparing_line_on_a_terminal_only():
    from fastgemm.cli.common import preparing

    term = _Terminal()
    with preparing(1, 1, 2**28, stream=term):  # 2 GiB of operands
        assert term.text.startswith("preparing 2.0 GiB of operands") and "1x1x268435456" in term.text
    assert term.text.endswith("\r") and term.text.split("\r")[-2].strip() == "", "the line is erased after"
    for stream, shape in [(_Terminal(), (64, 64, 64)), (_Terminal(tty=False), (1, 1, 2**28))]:
        with preparing(*shape, stream=stream):
            pass
        assert stream.text == "", (shape, stream.text)

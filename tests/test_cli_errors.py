"""Every subcommand fed malformed input: exit code 2, one line on stderr, no traceback,
and no work done first (the measurement entry points are replaced by ones that fail)."""

import json
import subprocess
import sys

import pytest

import fastgemm
from fastgemm import _fastgemm, cli, roofline

MISSING = "/nonexistent-folder-for-fastgemm-tests"


@pytest.fixture
def no_work(monkeypatch):
    """Makes any benchmark or probe fail loudly: an error must come before the work."""
    def work(*args, **kwargs):
        raise AssertionError("the command started working before it checked its arguments")

    monkeypatch.setattr(_fastgemm, "Bench", work)
    monkeypatch.setattr(_fastgemm, "BaselineComparison", work)
    monkeypatch.setattr(roofline, "cached_ceilings", work)


def assert_user_error(argv, capsys, expect=""):
    rc = cli.main(argv)
    cap = capsys.readouterr()
    lines = [line for line in cap.err.splitlines() if line.strip()]
    assert rc == 2, (argv, rc, cap.err)
    assert len(lines) == 1, (argv, cap.err)
    assert "Traceback" not in cap.err, cap.err
    assert expect.lower() in lines[0].lower(), (argv, lines[0])
    return lines[0]


@pytest.fixture
def files(tmp_path):
    """Input files of every broken kind."""
    f = {}
    f["dir"] = tmp_path / "a-folder"
    f["dir"].mkdir()
    f["not_json"] = tmp_path / "not.json"
    f["not_json"].write_text("{not json")
    f["list"] = tmp_path / "list.json"
    f["list"].write_text("[1, 2, 3]")
    f["partial"] = tmp_path / "partial.json"
    f["partial"].write_text(json.dumps({"results": [{"kernel": "ikj", "backend": "cpu"}]}))
    f["zero"] = tmp_path / "zero.json"
    f["zero"].write_text(json.dumps({"results": [{"kernel": "ikj", "backend": "cpu", "M": 8, "N": 8, "K": 8,
                                                  "gflops": 0.0}]}))
    f["ok"] = tmp_path / "ok.json"
    f["ok"].write_text(json.dumps({"results": [{"kernel": "ikj", "backend": "cpu", "M": 8, "N": 8, "K": 8,
                                                "device_median": 1e-3}]}))
    f["other"] = tmp_path / "other.json"
    f["other"].write_text(json.dumps({"results": [{"kernel": "kij", "backend": "cpu", "M": 8, "N": 8, "K": 8,
                                                   "device_median": 1e-3}]}))
    f["binary"] = tmp_path / "binary.csv"
    f["binary"].write_bytes(bytes(range(256)) * 4)
    f["metal"] = tmp_path / "k.metal"
    f["metal"].write_text("kernel void k() {}\n")
    f["file"] = tmp_path / "plain-file"
    f["file"].write_text("x")
    row = {"kernel": "ikj", "backend": "cpu", "M": 8, "N": 8, "K": 8, "device_median": 1e-3}
    f["huge_dims"] = tmp_path / "huge.json"
    f["huge_dims"].write_text(json.dumps({"results": [dict(row, M=10 ** 400)]}))
    f["flags_int"] = tmp_path / "flags.json"
    f["flags_int"].write_text(json.dumps({"results": [dict(row, flags=3)]}))
    f["deep"] = tmp_path / "deep.json"
    f["deep"].write_text("[" * 100000 + "]" * 100000)
    f["bad_measured"] = tmp_path / "measured.json"
    f["bad_measured"].write_text(json.dumps({"measurements": [{"kernel": "x", "flop_per_byte": "a", "gflops": 1}]}))
    f["infinite_measured"] = tmp_path / "infinite.json"
    f["infinite_measured"].write_text('{"measurements": [{"kernel": "x", "flop_per_byte": Infinity, "gflops": 1e400}]}')
    return {k: str(v) for k, v in f.items()}


BENCH = ["bench", "--backend", "cpu", "--size", "16"]


@pytest.mark.parametrize("extra, expect", [
    (["--seed", "-1"], "seed"),
    (["--seed", "abc"], "seed"),
    (["--warmup", "-1"], "warmup"),
    (["--iters", "0"], "iters"),
    (["--iters", "99999999999"], "iters"),
    (["--size", "0"], "size"),
    (["--size", "abc"], "size"),
    (["--size", "100000"], "memory"),
    (["--shape", "8x8"], "MxNxK"),
    (["--shape", "99999999999x2x2"], "shape"),
    (["--threads", "0"], "threads"),
    (["--threads", "100000"], "threads"),
    (["--max-seconds", "-1"], "max-seconds"),
    (["--max-seconds", "nan"], "max-seconds"),
    (["--spread-limit", "0"], "spread-limit"),
    (["--sizes", "0:4"], "sizes"),
    (["--sizes", "a,b"], "sizes"),
    (["--sizes", "1:200000000:1"], "more than 64 sizes"),  # refused before it lists 2e8 sizes
    (["--kernels", "nope"], "unknown kernel"),
    (["--kernels", ","], "no kernel"),
    (["--baseline", "nope"], "unknown baseline"),
    (["--json", MISSING + "/r.json"], "does not exist"),
    (["--csv", MISSING + "/r.csv"], "does not exist"),
    (["--plot", MISSING + "/r.png"], "does not exist"),
    (["--plot", "/tmp/fastgemm-chart.xyz"], ".xyz"),
    (["--processes", "2", "--csv", "/tmp/fastgemm-p.csv"], "--processes"),
    (["--processes", "2", "--kernels", "nope"], "unknown kernel"),
    (["--nonsense"], "unrecognized"),
])
def test_bench_refuses_bad_arguments(extra, expect, capsys, no_work):
    assert_user_error(BENCH + extra, capsys, expect)


def test_bench_refuses_outputs_that_are_folders_or_under_files(files, capsys, no_work):
    assert_user_error(BENCH + ["--json", files["dir"]], capsys, "folder")
    assert_user_error(BENCH + ["--csv", files["file"] + "/r.csv"], capsys, "not a folder")


def test_bench_refuses_an_unknown_or_unavailable_backend(capsys, no_work):
    assert_user_error(["bench", "--backend", "tpu"], capsys, "unknown backend")
    unavailable = [b.name for b in fastgemm.backends() if not b.available]
    if unavailable:
        assert_user_error(["bench", "--backend", unavailable[0]], capsys, "unavailable")


def test_bench_refuses_a_shape_no_named_kernel_accepts(capsys, no_work):
    constrained = [k for k in fastgemm.kernels("metal-emu") if k.constraints and not k.baseline] \
        if "metal-emu" in {b.name for b in fastgemm.backends() if b.available} else []
    if not constrained:
        pytest.skip("no available backend has a kernel with shape constraints")
    assert_user_error(["bench", "--backend", "metal-emu", "--kernels", constrained[0].name, "--shape", "7x7x7"],
                      capsys, "no kernel runs")


def test_bench_without_matplotlib_fails_before_running(monkeypatch, capsys, no_work):
    import builtins

    real_import = builtins.__import__

    def no_mpl(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    assert_user_error(BENCH + ["--plot", "/tmp/fastgemm-ladder.png"], capsys, "matplotlib")


@pytest.mark.parametrize("argv, expect", [
    (["sweep", "--backend", "cpu", "--family", "no_such_family"], "no kernels"),
    (["sweep", "--backend", "cpu", "--family", "", "--size", "32"], "--family must name"),
    (["sweep", "--backend", "cpu"], "--family"),
    (["sweep", "--backend", "cpu", "--family", "tiled_ikj", "--json", MISSING + "/s.json"], "does not exist"),
    (["sweep", "--backend", "cpu", "--family", "tiled_ikj", "--iters", "-3"], "iters"),
])
def test_sweep_refuses_bad_arguments(argv, expect, capsys, no_work):
    assert_user_error(argv, capsys, expect)


def test_sweep_never_prints_an_empty_table(capsys, no_work):
    if "metal-emu" not in {b.name for b in fastgemm.backends() if b.available}:
        pytest.skip("metal-emu is not built")
    families = {k.name.split("_k")[0] for k in fastgemm.kernels("metal-emu") if k.constraints}
    if not families:
        pytest.skip("metal-emu has no constrained kernel family")
    line = assert_user_error(["sweep", "--backend", "metal-emu", "--family", "tensorops_sync", "--size", "128"],
                             capsys, "")
    assert "accepts" in line or "no kernels" in line


@pytest.mark.parametrize("which, expect", [
    ("missing", "no such file"), ("dir", "folder"), ("not_json", "not JSON"), ("list", "lacks"),
    ("bad_measured", "positive"), ("binary", "not a text file"), ("infinite_measured", "finite"),
    ("deep", "nested too deeply"),
])
def test_roofline_refuses_bad_measured_files(which, expect, files, capsys, no_work):
    path = files.get(which, MISSING + "/m.json")
    assert_user_error(["roofline", "--backend", "cpu", "--size", "16", "--measured", path], capsys, expect)


def test_roofline_checks_outputs_first(capsys, no_work):
    assert_user_error(["roofline", "--backend", "cpu", "--json", MISSING + "/r.json"], capsys, "does not exist")


@pytest.mark.parametrize("first, second, expect", [
    ("missing", "ok", "no such file"), ("dir", "ok", "folder"), ("not_json", "ok", "not JSON"),
    ("list", "ok", "results"), ("partial", "ok", "lacks"), ("zero", "ok", "not a timing"),
    ("ok", "other", "no row in common"), ("binary", "ok", "not a text file"),
    ("huge_dims", "ok", "not a number"), ("flags_int", "ok", "not a list"), ("deep", "ok", "nested"),
])
def test_compare_refuses_bad_files(first, second, expect, files, capsys):
    assert_user_error(["compare", files.get(first, MISSING + "/a.json"), files[second]], capsys, expect)


def test_compare_refuses_a_bad_threshold(files, capsys):
    assert_user_error(["compare", files["ok"], files["ok"], "--fail-above", "lots"], capsys, "percentage")


@pytest.mark.parametrize("argv, expect", [
    (["kernels", "--backend", "tpu"], "unknown backend"),
    (["kernels", "--json", MISSING + "/k.json"], "does not exist"),
    (["info", "--json", MISSING + "/i.json"], "does not exist"),
])
def test_kernels_and_info_refuse_bad_arguments(argv, expect, capsys, no_work):
    assert_user_error(argv, capsys, expect)


def test_kernels_of_a_backend_without_kernels_says_why(capsys):
    empty = [b.name for b in fastgemm.backends() if not fastgemm.kernels(b.name)]
    if not empty:
        pytest.skip("every backend has kernels in this build")
    assert_user_error(["kernels", "--backend", empty[0]], capsys, "no kernels")


@pytest.mark.parametrize("extra, expect", [
    (["--buffer", "x"], "--buffer"),
    (["--buffer", "0:float99:4"], "dtype"),
    (["--buffer", "0:float32:-1"], "COUNT"),
    (["--buffer", "0:float32:4:bogus"], "INIT"),
    (["--buffer", "a:float32:4"], "index"),
    (["--buffer", "0:u32=abc"], "u32"),
    (["--buffer", "0:u32=-1"], "fit"),
    (["--buffer", "0:float32"], "INDEX:DTYPE:COUNT"),
    (["--threads", "0"], "--threads"),
    (["--threads", "a,b"], "--threads"),
    (["--threads", "1,2,3,4"], "--threads"),
    (["--threadgroups", ""], "--threadgroups"),
    (["--threadgroup-memory", "0"], "INDEX:BYTES"),
    (["--threadgroup-memory", "0:x"], "BYTES"),
])
def test_emu_refuses_malformed_arguments(extra, expect, files, capsys, no_work):
    assert_user_error(["emu", files["metal"], "--kernel", "k"] + extra, capsys, expect)


def test_emu_refuses_missing_source_and_bad_save_folder(files, capsys, no_work):
    assert_user_error(["emu", MISSING + "/k.metal", "--kernel", "k"], capsys, "no such file")
    assert_user_error(["emu", files["metal"], "--kernel", "k", "--save", files["file"]], capsys, "not a folder")


@pytest.mark.parametrize("extra, expect", [
    (["--size", "0"], "size"),
    (["--kernels", "nope"], "unknown kernel"),
    (["--json", MISSING + "/e.json"], "does not exist"),
    (["--seed", "-5"], "seed"),
])
def test_explain_diff_refuses_bad_arguments(extra, expect, capsys, no_work):
    assert_user_error(["explain-diff", "--backend", "cpu", "--size", "8"] + extra, capsys, expect)


@pytest.mark.parametrize("which, expect", [
    ("missing", "no such file"), ("dir", "folder"), ("not_json", "header"), ("binary", "not a text file"),
])
def test_profile_refuses_bad_saved_profiles(which, expect, files, capsys, no_work):
    path = files.get(which, MISSING + "/p.csv")
    assert_user_error(["profile", "--from-csv", path, "--size", "64"], capsys, expect)


def test_profile_refuses_bad_arguments(capsys, no_work):
    assert_user_error(["profile"], capsys, "name a kernel")
    assert_user_error(["profile", "ikj", "--kernel-regex", "("], capsys, "regular expression")
    assert_user_error(["profile", "ikj", "--json", MISSING + "/p.json"], capsys, "does not exist")


def test_the_hidden_child_refuses_bad_arguments_too(capsys, no_work):
    assert_user_error(["_run-once", "--backend", "cpu", "--kernel", "ikj", "--iters", "0"], capsys, "iters")


def test_top_level_errors_are_one_line(capsys):
    assert_user_error([], capsys, "name a command")
    line = assert_user_error(["no-such-command"], capsys, "invalid choice")
    assert "_run-once" not in line  # the hidden child protocol is not offered to people


def test_the_installed_command_reports_user_errors_the_same_way(tmp_path):
    """Through the real entry point (a fresh process): one line, exit code 2, no traceback."""
    for argv in (["bench", "--seed", "-1"], ["compare", str(tmp_path), str(tmp_path)],
                 ["bench", "--backend", "cpu", "--json", str(tmp_path / "missing" / "r.json")]):
        out = subprocess.run([sys.executable, "-m", "fastgemm", *argv], capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, (argv, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr


def test_output_that_cannot_be_written_is_one_line_and_a_failure(tmp_path):
    """stdout on a full device: the listing is lost, so one line on stderr and exit 1."""
    if not __import__("os").path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        code = "import sys; from fastgemm.cli import main; sys.exit(main([\"kernels\", \"--backend\", \"cpu\"]))"
        proc = subprocess.run([sys.executable, "-c", code],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "could not write the output" in proc.stderr, proc.stderr


@pytest.mark.skipif("metal-emu" not in {b.name for b in fastgemm.backends() if b.available},
                    reason="metal-emu is not built")
@pytest.mark.parametrize("which, kernel, expect", [
    ("binary", "k", "not UTF-8"), ("metal", "nope", "no kernel named"),
])
def test_emu_refuses_sources_and_kernel_names_it_cannot_run(which, kernel, expect, files, capsys):
    assert_user_error(["emu", files[which], "--kernel", kernel, "--threadgroups", "1", "--threads", "1"],
                      capsys, expect)


@pytest.mark.skipif("metal-emu" not in {b.name for b in fastgemm.backends() if b.available},
                    reason="metal-emu is not built")
def test_emu_refuses_a_dispatch_that_leaves_an_argument_unbound(tmp_path, capsys):
    """Every [[buffer(n)]] a kernel declares is checked against --buffer before the kernel
    runs: a missing one is the command line's error (exit 2), not the shader's."""
    src = tmp_path / "scale.metal"
    src.write_text("#include <metal_stdlib>\nusing namespace metal;\n"
                   "kernel void scale(device float* x [[buffer(0)]], constant float& s [[buffer(2)]],\n"
                   "                  uint i [[thread_position_in_grid]]) { x[i] *= s; }\n"
                   "kernel void fill(texture2d<float, access::write> t [[texture(1)]],\n"
                   "                 uint2 i [[thread_position_in_grid]]) { t.write(float4(1.0), i); }\n")
    base = ["emu", str(src), "--threadgroups", "1", "--threads", "4"]
    line = assert_user_error(base + ["--kernel", "scale", "--buffer", "0:float32:4:ones"], capsys, "buffer(2)")
    assert "--buffer" in line
    assert_user_error(base + ["--kernel", "fill"], capsys, "texture(1)")
    assert cli.main(base + ["--kernel", "scale", "--buffer", "0:float32:4:ones", "--buffer", "2:f32=3"]) == 0
    assert "buffer(0) float32[4]: [3. 3. 3. 3.]" in capsys.readouterr().out

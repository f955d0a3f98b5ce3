"""`fastgemm profile`: parsing saved Nsight Compute CSV, the measured intensity it gives,
the records `fastgemm roofline --measured` reads, and the message when no profiler is here."""

import json
import os
from pathlib import Path

import pytest

import fastgemm
from fastgemm import cli, profile
from fastgemm.errors import FastgemmError

DATA = Path(__file__).parent / "data"


def test_parses_real_ncu_output_with_prof_lines_and_thousands_separators():
    launches = profile.parse_ncu_csv((DATA / "ncu_h200_saxpy_probe.csv").read_text())
    assert [l.launch_id for l in launches] == [0, 1]
    first = launches[0]
    assert first.short_name == "saxpy_probe"
    assert first.metrics["dram__bytes_read.sum"] == 134_222_848
    assert first.metrics["dram__bytes_write.sum"] == 48_791_040
    assert first.metrics["gpu__time_duration.sum"] == pytest.approx(62_752e-9)


def test_prefixed_units_are_converted_and_launches_averaged():
    launches = profile.parse_ncu_csv((DATA / "ncu_sgemm_sample.csv").read_text())
    assert len(launches) == 2
    second = launches[1].metrics
    assert second["dram__bytes_read.sum"] == pytest.approx(12.8e6)
    assert second["dram__bytes_write.sum"] == pytest.approx(4.2e6)
    assert second["gpu__time_duration.sum"] == pytest.approx(8.6e-3)
    m = profile.measurement_from_launches(launches, "naive", "cuda", (1024, 1024, 1024))
    assert m.gemms == 2  # two launches of one function: one per GEMM call
    assert m.dram_read_bytes == pytest.approx((12_582_912 + 12.8e6) / 2)
    assert m.gpu_time_s == pytest.approx((8.4e-3 + 8.6e-3) / 2)
    assert m.flop_per_byte == pytest.approx(2 * 1024 ** 3 / (m.dram_read_bytes + m.dram_write_bytes))
    assert m.bandwidth_gbs == pytest.approx(m.bytes / m.gpu_time_s / 1e9)


def test_short_names_drop_return_type_namespace_and_template():
    launch = profile.NcuLaunch(0, "1", "void ns::wgmma_gemm_kernel<Cfg<128, 1>>(CUtensorMap_st, GemmArgs)")
    assert launch.short_name == "wgmma_gemm_kernel"


@pytest.mark.parametrize("path", sorted((Path(__file__).parent.parent / "benchmarks" / "ncu").glob("*.csv")),
                         ids=lambda p: p.name)
def test_saved_h200_profiles_parse(path):
    launches = profile.parse_ncu_csv(path.read_text())
    assert launches, path
    for launch in launches:
        assert launch.metrics["dram__bytes_read.sum"] > 0 and launch.metrics["gpu__time_duration.sum"] > 0
        assert " " not in launch.short_name


def test_bad_input_is_an_error():
    with pytest.raises(FastgemmError, match="header"):
        profile.parse_ncu_csv("==PROF== nothing here\n")
    with pytest.raises(FastgemmError, match="unit"):
        profile.to_base_unit(1.0, "furlong")
    with pytest.raises(FastgemmError, match="no kernel launches"):
        profile.measurement_from_launches([], "x", "cuda", (8, 8, 8))


def test_from_csv_json_feeds_roofline_measured(tmp_path, capsys):
    out = tmp_path / "measured.json"
    rc = cli.main(["profile", "--from-csv", str(DATA / "ncu_sgemm_sample.csv"), "--size", "1024", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "sgemm_naive" in text and "FLOP/byte" in text
    recs = profile.load_measurements(out)
    assert len(recs) == 1
    r = recs[0]
    assert r["kernel"] == "sgemm_naive"
    assert r["flop_per_byte"] == pytest.approx(2 * 1024 ** 3 / r["bytes"])
    assert r["gflops"] == pytest.approx(2 * 1024 ** 3 / r["gpu_time_s"] / 1e9)


def test_load_measurements_rejects_records_without_the_keys(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"measurements": [{"kernel": "x"}]}))
    with pytest.raises(FastgemmError):
        profile.load_measurements(p)


def test_missing_tools_are_named(monkeypatch, capsys):
    monkeypatch.setattr(profile, "find_ncu", lambda explicit=None: None)
    monkeypatch.setattr(profile, "find_xctrace", lambda: None)
    assert cli.main(["profile", "ikj", "--size", "64"]) == 2
    cap = capsys.readouterr()
    assert "no-cache model" in cap.out and "FLOP/byte" in cap.out
    assert "Nsight Compute (ncu): not found" in cap.err and "xctrace" in cap.err
    assert cli.main(["profile", "no_such_kernel"]) == 2
    assert "not registered" in capsys.readouterr().err


def test_cuda_kernel_without_ncu_says_so(monkeypatch, capsys):
    status = {b.name: b for b in fastgemm.backends()}
    if "cuda" not in status or not status["cuda"].available:
        pytest.skip("the cuda backend is not built or has no GPU here")
    kernel = next(k.name for k in fastgemm.kernels("cuda") if not k.baseline)
    monkeypatch.setattr(profile, "find_ncu", lambda explicit=None: None)
    assert cli.main(["profile", kernel, "--backend", "cuda", "--size", "256"]) == 2
    assert "Nsight Compute (ncu): not found" in capsys.readouterr().err


def test_profile_cuda_kernel_under_ncu(tmp_path):
    status = {b.name: b for b in fastgemm.backends()}
    if "cuda" not in status or not status["cuda"].available:
        pytest.skip("the cuda backend is not built or has no GPU here")
    if profile.find_ncu() is None:
        pytest.skip("Nsight Compute (ncu) is not installed")
    kernel = next(k.name for k in fastgemm.kernels("cuda") if not k.baseline)
    out = tmp_path / "m.json"
    assert cli.main(["profile", kernel, "--backend", "cuda", "--size", "512", "--json", str(out),
                     "--iters", "2"]) == 0
    r = profile.load_measurements(out)[0]
    assert r["dram_read_bytes"] > 0 and r["gpu_time_s"] > 0 and r["flop_per_byte"] > 0

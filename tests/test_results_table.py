"""benchmarks/results_table.py: RESULTS.md is what the committed result files give, and a
malformed result file is refused with an error that names the file and the field."""

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import results_table as rt  # noqa: E402

PROVENANCE = dict(title="A table", hardware="a test machine", date="2026-12-01", commit="abc1234",
                  command="fastgemm bench --json {out}", source="measured")


def bench_doc():
    """The shape of `fastgemm bench --json` output: a baseline and one kernel."""
    def result(kernel, seconds, baseline=None, ratio=None):
        return dict(kernel=kernel, backend="cpu", M=64, N=64, K=32, threads=2, precision="fp32", verified=True,
                    passed=True, rel_err=2.0e-7, baseline=baseline, ratio=ratio, device_median=seconds,
                    device_min=seconds * 0.9, device_times=[seconds * 0.9, seconds, seconds * 1.2], truncated=False,
                    prep_times=[0.0, 0.0, 0.0])

    return dict(machine=dict(backend="cpu", device="a CPU (2 cores)", date="2026-12-01T00:00:00+00:00",
                             commit="abc1234", fastgemm="0.1.0", python="3.11", numpy="2.4", threads=2),
                results=[result("openblas", 1e-3), result("packed", 5e-4, "openblas", 2.0)],
                shapes=[[64, 64, 32]], provenance=dict(PROVENANCE))


def ladder_doc():
    """The shape of benchmarks/cuda_ladder.py --json output at one size."""
    rows = [dict(kernel="cublas", step=0, precision="fp32", size=4096, device_ms=2.7, rel_err=1.2e-6, passed=True,
                 x_cublas=1.0, x_cublas_tf32=0.13, sm_mhz=1980.0),
            dict(kernel="tf32_wgmma", step=11, precision="tf32", size=4096, device_ms=0.34, rel_err=2.6e-4,
                 passed=True, x_cublas=7.9, x_cublas_tf32=1.05),
            dict(kernel="naive", size=4096, error="out of memory")]
    targets = [dict(target="best tf32 kernel >= 0.95x cublas_tf32", size=4096, met=True, detail="tf32_wgmma 1.050x")]
    return dict(device="a GPU", properties={}, results=rows, wall_s=30.0, targets=targets,
                provenance=dict(PROVENANCE, command="python benchmarks/cuda_ladder.py --json {out}"))


def suite_doc():
    """A shape suite: fastgemm 2x, then 0.5x the baseline's speed, on two shapes."""
    def lib(ms, rel_err=None):
        return dict(ms=ms, rel_err=rel_err)

    return dict(suite="cpu_shapes", backend="cpu", baseline="openblas", provenance=dict(PROVENANCE),
                rows=[dict(shape="square", M=100, N=100, K=100, trans="NN",
                           libraries=dict(openblas=lib(1.0), fastgemm=lib(0.5, 3e-7))),
                      dict(shape="skinny", M=1000, N=10, K=100, trans="TN",
                           libraries=dict(openblas=lib(1.0), fastgemm=lib(2.0, 4e-7)))])


def write(tmp_path, name, doc):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def rendered(tmp_path, doc, name="x"):
    write(tmp_path, name, doc)
    return rt.generate(tmp_path)


# --- the committed file ---------------------------------------------------------------------


def test_committed_results_md_is_what_the_result_files_give():
    assert rt.RESULTS_MD.read_text() == rt.generate(), \
        "benchmarks/RESULTS.md is out of date or edited by hand: run python benchmarks/results_table.py"


def test_committed_results_md_is_a_results_file_not_a_notebook():
    text = rt.RESULTS_MD.read_text()
    assert len(text.splitlines()) < 300
    assert "### " in text and "Measure again:" in text


def test_every_committed_result_file_renders_with_its_provenance():
    files = rt.result_files()
    assert files, "benchmarks/results/ holds no result files"
    backends = set()
    for path in files:
        section = rt.load(path)
        backends.add(section.backend)
        if section.provenance.source == "transcribed":
            assert section.provenance.transcribed_from
        assert "{out}" in section.provenance.command
    assert {"cpu", "cuda"} <= backends


def test_the_check_option_tells_a_stale_file(tmp_path, monkeypatch):
    assert rt.main(["--check"]) == 0
    stale = tmp_path / "RESULTS.md"
    stale.write_text(rt.RESULTS_MD.read_text() + "an edit by hand\n")
    monkeypatch.setattr(rt, "RESULTS_MD", stale)
    assert rt.main(["--check"]) == 1
    assert stale.read_text().endswith("an edit by hand\n"), "--check must not rewrite the file"


# --- the three formats ------------------------------------------------------------------------


def test_a_bench_run_renders_its_rows_min_spread_and_ratio(tmp_path):
    text = rendered(tmp_path, bench_doc())
    row = next(line for line in text.splitlines() if line.startswith("| `packed`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # kernel, precision, median ms, min ms, spread, GFLOP/s, x openblas, rel err, verified
    assert cells[2:7] == ["0.5", "0.45", "30.0%", f"{2 * 64 * 64 * 32 / 5e-4 * 1e-9:.2f}", "2.000"]
    assert cells[8] == "yes"
    assert "| `openblas` | fp32 | 1.000 | 0.9 | 30.0% |" in text and "baseline" in text
    assert "Hardware: a test machine" in text and "Commit: abc1234" in text
    assert "Produced by: `fastgemm bench --json benchmarks/results/x.json`" in text


def test_a_ladder_run_renders_sizes_ratios_failures_and_targets(tmp_path):
    text = rendered(tmp_path, ladder_doc())
    assert "| `tf32_wgmma` | 11 | tf32 | 0.34 | " in text
    assert "7.900 (1.050x cublas_tf32)" in text
    assert "did not run: out of memory" in text
    assert "| best tf32 kernel >= 0.95x cublas_tf32 | met: tf32_wgmma 1.050x |" in text
    assert "## CUDA" in text


def test_a_suite_renders_one_table_with_geomean_and_worst_rows(tmp_path):
    text = rendered(tmp_path, suite_doc())
    lines = text.splitlines()
    geo = next(line for line in lines if line.startswith("| **geomean**"))
    worst = next(line for line in lines if line.startswith("| **worst**"))
    # ratios 2.0 and 0.5: geometric mean 1.0; the worst is 0.5, on the skinny shape
    assert "| 1.000 |" in geo
    assert "0.500 (skinny)" in worst
    square = next(line for line in lines if line.startswith("| square"))
    assert "| 2.000 | 3.00e-07 |" in square and "| NN |" in square
    assert sum(line.startswith("| ") and "---" not in line for line in lines) == 1 + 2 + 2  # head, shapes, summary


def test_a_suite_may_give_libraries_as_row_fields_and_times_in_seconds(tmp_path):
    nested = rendered(tmp_path, suite_doc())
    flat = suite_doc()
    for row in flat["rows"]:
        for name, m in row.pop("libraries").items():
            row[name] = dict(time_s=m["ms"] / 1e3, rel_err=m["rel_err"])
    assert rendered(tmp_path, flat) == nested


def test_fields_the_generator_does_not_read_change_nothing(tmp_path):
    for make in (bench_doc, ladder_doc, suite_doc):
        plain = rendered(tmp_path, make())
        doc = make()
        doc["a_new_top_level_field"] = {"anything": [1, 2]}
        doc["provenance"]["reviewer"] = "someone"
        for row in doc.get("results") or doc["rows"]:
            row["p99_ms"] = 123.0
        assert rendered(tmp_path, doc) == plain


def test_tables_follow_backend_order_then_file_names(tmp_path):
    write(tmp_path, "b-cpu", bench_doc())
    write(tmp_path, "a-cuda", ladder_doc())
    suite = suite_doc()
    suite["provenance"]["title"] = "Shapes"
    write(tmp_path, "c-cpu-shapes", suite)
    text = rt.generate(tmp_path)
    assert text.index("## CPU") < text.index("## Metal") < text.index("## CUDA")
    assert text.index("### A table") < text.index("### Shapes")


# --- malformed files are refused ----------------------------------------------------------------


def drop(*path):
    def edit(doc):
        obj = doc
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]
    return edit


def put(value, *path):
    def edit(doc):
        obj = doc
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
    return edit


MALFORMED = [
    (bench_doc, drop("provenance"), "missing field 'provenance'"),
    (bench_doc, drop("provenance", "command"), "provenance: missing field 'command'"),
    (bench_doc, put("guessed", "provenance", "source"), "provenance.source: expected one of measured, transcribed"),
    (bench_doc, put("transcribed", "provenance", "source"), "provenance: missing field 'transcribed_from'"),
    (bench_doc, put([1], "provenance", "notes"), "provenance.notes[0]: expected str"),
    (bench_doc, drop("results", 1, "device_median"), "results[1]: missing field 'device_median'"),
    (bench_doc, put("fast", "results", 0, "device_median"), "results[0].device_median: expected a finite number"),
    (bench_doc, put(64.0, "results", 0, "M"), "results[0].M: expected an integer"),
    (bench_doc, put([], "results"), "'results' is empty"),
    (bench_doc, put("metal-emu", "machine", "backend"), "metal-emu"),
    (ladder_doc, drop("results", 0, "device_ms"), "results[0]: missing field 'device_ms'"),
    (ladder_doc, put("4096", "results", 1, "size"), "results[1].size: expected an integer"),
    (ladder_doc, put("yes", "targets", 0, "met"), "targets[0].met: expected true, false or null"),
    (suite_doc, put("NX", "rows", 0, "trans"), "rows[0].trans: expected one of NN, NT, TN, TT"),
    (suite_doc, put(0.0, "rows", 1, "libraries", "fastgemm", "ms"), "libraries.fastgemm.ms: expected a positive time"),
    (suite_doc, drop("baseline"), "missing field 'baseline'"),
    (suite_doc, put({"unexpected": True}, "rows"), "rows: expected list"),
    (suite_doc, drop("rows", 0, "libraries"), "rows[0]: missing field 'libraries'"),
    (suite_doc, put({"ms": "slow"}, "rows", 0, "libraries", "fastgemm"), "fastgemm.ms: expected a finite number"),
]


@pytest.mark.parametrize("make, edit, message", MALFORMED,
                         ids=[f"{m.__name__}-{msg[:40]}" for m, _, msg in MALFORMED])
def test_a_malformed_result_file_is_refused_naming_the_file_and_field(tmp_path, make, edit, message):
    doc = copy.deepcopy(make())
    edit(doc)
    write(tmp_path, "broken", doc)
    with pytest.raises(rt.ResultsError) as e:
        rt.generate(tmp_path)
    assert str(e.value).startswith("broken.json: ")
    assert message in str(e.value)


def test_text_that_is_not_json_is_refused_with_its_position(tmp_path):
    write(tmp_path, "broken", '{"provenance": {"title": "x",\n  "hardware": }')
    with pytest.raises(rt.ResultsError, match=r"broken\.json: not valid JSON: .* line 2, column"):
        rt.generate(tmp_path)


def test_a_file_of_no_known_format_is_refused(tmp_path):
    write(tmp_path, "other", {"provenance": PROVENANCE, "numbers": [1, 2, 3]})
    with pytest.raises(rt.ResultsError, match="other.json: not a known result format"):
        rt.generate(tmp_path)


def test_an_empty_results_folder_is_refused(tmp_path):
    with pytest.raises(rt.ResultsError, match="no result files"):
        rt.generate(tmp_path)


def test_the_command_line_reports_a_malformed_file_in_one_line_and_exits_2(tmp_path, monkeypatch, capsys):
    doc = bench_doc()
    del doc["provenance"]["date"]
    write(tmp_path, "broken", doc)
    monkeypatch.setattr(rt, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(rt, "RESULTS_MD", tmp_path / "RESULTS.md")
    assert rt.main([]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "results_table: broken.json: provenance: missing field 'date'"
    assert not (tmp_path / "RESULTS.md").exists()


# --- recording a run ------------------------------------------------------------------------------


def test_record_takes_date_commit_and_versions_from_a_bench_run(tmp_path):
    run = bench_doc()
    del run["provenance"]
    raw = write(tmp_path, "raw", run)
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    rt.record(raw, out_dir / "cpu.json", title="CPU ladder", command="fastgemm bench --json {out}",
              notes=("quiet machine",))
    prov = json.loads((out_dir / "cpu.json").read_text())["provenance"]
    assert prov["date"] == "2026-12-01T00:00:00+00:00" and prov["commit"] == "abc1234"
    assert prov["versions"]["numpy"] == "2.4" and prov["source"] == "measured"
    assert "a CPU (2 cores)" in prov["hardware"]
    text = rt.generate(out_dir)
    assert "### CPU ladder" in text and "- quiet machine" in text


def test_record_refuses_a_command_without_its_output_path(tmp_path):
    run = bench_doc()
    del run["provenance"]
    raw = write(tmp_path, "raw", run)
    with pytest.raises(rt.ResultsError, match=r"\{out\}"):
        rt.record(raw, tmp_path / "cpu.json", title="t", command="fastgemm bench")
    assert not (tmp_path / "cpu.json").exists()


def test_record_of_a_ladder_run_takes_the_gpu_and_the_named_commit(tmp_path, monkeypatch):
    run = ladder_doc()
    del run["provenance"]
    run["properties"] = {"multiprocessors": "132", "cublas": "loaded from libcublas.so.13"}
    raw = write(tmp_path, "raw", run)
    monkeypatch.setenv("FASTGEMM_COMMIT", "feed123")
    doc = rt.record(raw, tmp_path / "cuda.json", title="H200", command="python benchmarks/cuda_ladder.py --json {out}")
    prov = doc["provenance"]
    assert prov["hardware"] == "a GPU, multiprocessors 132" and prov["commit"] == "feed123"
    assert prov["versions"] == {"cublas": "loaded from libcublas.so.13"}


def test_record_of_a_cuda_suite_names_the_host_blas_its_numpy_rows_used(tmp_path):
    run = suite_doc()
    del run["provenance"]
    run.update(device="a GPU", properties={"cublas": "loaded from libcublas.so.13"},
               host_blas="system CBLAS")
    doc = rt.record(write(tmp_path, "raw", run), tmp_path / "cuda.json", title="shapes",
                    command="python benchmarks/cuda_shapes.py --json {out}")
    assert doc["provenance"]["versions"] == {"cublas": "loaded from libcublas.so.13", "host blas": "system CBLAS"}


def test_rerun_runs_the_recorded_command_and_keeps_the_title(tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    fresh = bench_doc()
    del fresh["provenance"]
    fresh["machine"]["commit"] = "new5678"
    write(tmp_path, "fresh-run", fresh)
    old = bench_doc()
    old["provenance"].update(title="CPU ladder", about="what the table shows", notes=["about the old run"],
                             command=f"{sys.executable} -c \"import shutil, sys; "
                                     f"shutil.copy('fresh-run.json', sys.argv[1])\" {{out}}")
    write(results, "cpu", old)
    monkeypatch.setattr(rt, "REPO", tmp_path)
    monkeypatch.setattr(rt, "RESULTS_DIR", results)
    monkeypatch.setattr(rt, "RESULTS_MD", tmp_path / "RESULTS.md")
    rt.rerun(results / "cpu.json")
    prov = json.loads((results / "cpu.json").read_text())["provenance"]
    assert prov["commit"] == "new5678" and prov["title"] == "CPU ladder" and prov["about"] == "what the table shows"
    assert "notes" not in prov, "notes describe one run and are not carried over"
    assert "Commit: new5678" in (tmp_path / "RESULTS.md").read_text()


def test_rerun_reports_a_command_that_writes_nothing(tmp_path, monkeypatch):
    doc = bench_doc()
    doc["provenance"]["command"] = f"{sys.executable} -c pass {{out}}"
    path = write(tmp_path, "cpu", doc)
    monkeypatch.setattr(rt, "REPO", tmp_path)
    with pytest.raises(rt.ResultsError, match="wrote no"):
        rt.rerun(path)
    assert json.loads(path.read_text()) == doc

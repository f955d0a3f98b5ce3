"""The tuning cache is untrusted input (python/fastgemm/autotune.py): whatever is in its
place, `import fastgemm` neither fails nor hangs, and no entry can make kernel="auto"
run a kernel the policy would not choose itself. Every case runs in its own process
with its own cache directory."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import fastgemm
from fastgemm import autotune

HERE = os.path.dirname(os.path.abspath(__file__))


def cache_path(tmp_path):
    """Where a process with FASTGEMM_CACHE_DIR=tmp_path keeps its table."""
    return tmp_path / autotune.cache_file().name


def run(tmp_path, code, timeout=60, env=None):
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path), PYTHONWARNINGS="default", **(env or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=HERE)


# The kernel auto runs for a class, read back from the table after one call.
PROBE = """
    import numpy as np, fastgemm
    A = np.ones((64, 64), np.float32)
    C = fastgemm.sgemm(A, A, backend="cpu")
    assert np.all(C == 64), "wrong result"
    print(fastgemm.autotune.table().get("cpu|fp32|nn|beta0|64x64x64"))
"""


@pytest.mark.parametrize("content", ["[" * 200000, "{not json", "[1, 2, 3]", "\xff\xfe garbage"],
                         ids=["deep-nesting", "malformed", "a-list", "not-utf8"])
def test_malformed_cache_is_discarded_with_one_warning(tmp_path, content):
    cache_path(tmp_path).write_bytes(content.encode("latin-1"))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("RuntimeWarning") == 1 and "ignored the tuning cache" in out.stderr, out.stderr
    assert out.stdout.split()[-1] in {k.name for k in fastgemm.kernels("cpu") if k.auto_candidate}


def test_oversized_cache_is_not_read(tmp_path):
    cache_path(tmp_path).write_text(json.dumps({f"cpu|fp32|nn|beta0|{2**i}x1x1": "direct" for i in range(20)})
                                    + " " * (autotune.MAX_BYTES + 1))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0 and "larger than" in out.stderr, out.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_fifo_in_place_of_the_cache_does_not_hang_import(tmp_path):
    os.mkfifo(cache_path(tmp_path))
    out = run(tmp_path, PROBE, timeout=60)  # a blocking open would never return
    assert out.returncode == 0 and "not a regular file" in out.stderr, out.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_link_to_an_endless_device_is_refused(tmp_path):
    os.symlink("/dev/zero", cache_path(tmp_path))
    out = run(tmp_path, PROBE, timeout=60)
    assert out.returncode == 0 and "not a regular file" in out.stderr, out.stderr


def test_directory_in_place_of_the_cache(tmp_path):
    cache_path(tmp_path).mkdir()
    out = run(tmp_path, PROBE)
    assert out.returncode == 0 and "not a regular file" in out.stderr, out.stderr


@pytest.mark.parametrize("kernel", ["ikj@O3fm", "kji", "no_such_kernel", "direct_dot", "gemv", 7])
def test_entries_the_policy_would_never_choose_are_refused(tmp_path, kernel):
    """A -ffast-math rung, a teaching loop, an unknown name, kernels whose constraints
    refuse the class, a non-string: discarded, and auto measures the class itself."""
    cache_path(tmp_path).write_text(json.dumps({"cpu|fp32|nn|beta0|64x64x64": kernel}))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0, out.stderr
    assert "ignored 1 invalid entry" in out.stderr, out.stderr
    chosen = out.stdout.split()[-1]
    assert chosen != str(kernel) and fastgemm._fastgemm.kernel_info("cpu", chosen).auto_candidate


def test_valid_entries_are_kept_and_used(tmp_path):
    cache_path(tmp_path).write_text(json.dumps({"cpu|fp32|nn|beta0|64x64x64": "openblas",
                                                "cpu|fp32|nn|beta0|3x64x64": "direct"}))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0, out.stderr
    expected = "openblas" if "openblas" in {k.name for k in fastgemm.kernels("cpu")} else None
    if expected is None:  # a build without BLAS: the entry names an unknown kernel
        assert "ignored 2 invalid entries" in out.stderr
    else:
        assert out.stdout.split()[-1] == "openblas" and "ignored 1 invalid entry" in out.stderr, out.stderr


def test_each_tuning_is_recorded_with_its_candidates_times(tmp_path):
    code = """
        import json, numpy as np, fastgemm
        A = np.ones((64, 64), np.float32)
        fastgemm.sgemm(A, A, backend="cpu")
        fastgemm.sgemm(A, A, backend="cpu")  # recalled: no second tuning
        print(json.dumps(dict(records=fastgemm.autotune.records(), table=fastgemm.autotune.table())))
    """
    out = run(tmp_path, code)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    records = [r for r in got["records"] if r["shape_class"] == "cpu|fp32|nn|beta0|64x64x64"]
    assert len(records) == 1, got["records"]
    r = records[0]
    assert r["winner"] == "cpu/" + got["table"]["cpu|fp32|nn|beta0|64x64x64"]
    assert r["winner"] in r["seconds"] and len(r["seconds"]) >= 2
    assert all(s > 0 for s in r["seconds"].values())
    # The winner is the fastest, or within the tournament's 3% margin of it as an incumbent.
    assert r["seconds"][r["winner"]] <= min(r["seconds"].values()) * 1.03 + 1e-12


def test_table_is_saved_at_exit_and_reloaded(tmp_path):
    out = run(tmp_path, PROBE)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    saved = json.loads(cache_path(tmp_path).read_text())
    assert saved["cpu|fp32|nn|beta0|64x64x64"] == out.stdout.split()[-1]
    again = run(tmp_path, PROBE)
    assert again.returncode == 0 and again.stderr == "" and again.stdout == out.stdout


def test_invalid_environment_values_warn_and_are_ignored(tmp_path):
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path), FASTGEMM_AUTOTUNE="maybe",
               FASTGEMM_NUM_THREADS="lots", FASTGEMM_CUDA_GRAPHS="sometimes", PYTHONWARNINGS="default")
    out = subprocess.run([sys.executable, "-c", "import fastgemm; print(fastgemm.get_num_threads())"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "FASTGEMM_AUTOTUNE='maybe'" in out.stderr and "FASTGEMM_NUM_THREADS='lots'" in out.stderr
    assert "FASTGEMM_CUDA_GRAPHS='sometimes'" in out.stderr
    assert int(out.stdout) == fastgemm._fastgemm.available_cores()


@pytest.mark.parametrize("value", ["0", "off", "OFF", "false", "No"])
def test_autotune_off_spellings(tmp_path, value):
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path), FASTGEMM_AUTOTUNE=value)
    out = subprocess.run([sys.executable, "-c", "import fastgemm; print(fastgemm._fastgemm.autotune_enabled())"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", (value, out.stdout, out.stderr)


CLASS64 = "cpu|fp32|nn|beta0|64x64x64"


def test_provisional_choices_are_saved_and_count_on_in_the_next_process(tmp_path):
    """A first choice is saved as provisional, with the calls left before its second
    opinion and the first tournament's rates; the next process goes on counting."""
    out = run(tmp_path, PROBE)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    saved = json.loads(cache_path(tmp_path).read_text())
    pending = saved[autotune.UNCONFIRMED][CLASS64]
    assert type(pending["calls_left"]) is int and pending["calls_left"] >= 1
    assert "cpu/" + saved[CLASS64] in pending["rates"] and len(pending["rates"]) >= 2
    assert all(r > 0 for r in pending["rates"].values())
    again = run(tmp_path, PROBE)  # one recalled call
    assert again.returncode == 0 and again.stderr == "", again.stderr
    after = json.loads(cache_path(tmp_path).read_text())
    if pending["calls_left"] > 1:
        assert after[autotune.UNCONFIRMED][CLASS64]["calls_left"] == pending["calls_left"] - 1
        assert after[autotune.UNCONFIRMED][CLASS64]["rates"] == pending["rates"]


def test_second_opinion_confirms_a_class_and_the_file_says_so(tmp_path):
    """A loaded provisional choice two calls from its second opinion: the second call
    runs a tournament recorded as the second opinion, and the class is saved confirmed."""
    cache_path(tmp_path).write_text(json.dumps({
        CLASS64: "direct",
        autotune.UNCONFIRMED: {CLASS64: {"calls_left": 2, "rates": {"cpu/direct": 1e9, "cpu/packed": 1e9}}}}))
    code = """
        import json, numpy as np, fastgemm
        A = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
        ref = A.astype(np.float64) @ A.astype(np.float64)
        for _ in range(2):
            C = fastgemm.sgemm(A, A, backend="cpu")
            assert np.abs(C - ref).max() < 1e-4, "wrong result"
        print(json.dumps(dict(records=fastgemm.autotune.records(), table=fastgemm.autotune.table())))
    """
    out = run(tmp_path, code)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    got = json.loads(out.stdout)
    records = [r for r in got["records"] if r["shape_class"] == CLASS64]
    assert len(records) == 1 and records[0]["second_opinion"], got["records"]
    assert records[0]["winner"] == "cpu/" + got["table"][CLASS64]
    saved = json.loads(cache_path(tmp_path).read_text())
    assert saved[CLASS64] == got["table"][CLASS64] and CLASS64 not in saved[autotune.UNCONFIRMED]


@pytest.mark.parametrize("record, discarded", [
    ({"calls_left": 0, "rates": {}}, 1),                          # no calls left
    ({"calls_left": True, "rates": {}}, 1),                       # a bool is not a count
    ({"calls_left": 3, "rates": {"cpu/direct": "fast"}}, 1),      # not a rate
    ({"calls_left": 3, "rates": {"cpu/direct": -1.0}}, 1),        # a rate must be positive
    ({"calls_left": 3, "rates": {"cpu/direct": 10 ** 400}}, 1),   # no float holds it
    ({"calls_left": 3}, 1),                                       # no rates
    ("soon", 1),                                                  # not a record
], ids=["zero-calls", "bool-calls", "text-rate", "negative-rate", "huge-rate", "no-rates", "not-a-record"])
def test_malformed_provisional_records_discard_their_class(tmp_path, record, discarded):
    cache_path(tmp_path).write_text(json.dumps({CLASS64: "direct", autotune.UNCONFIRMED: {CLASS64: record}}))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0, out.stderr
    assert f"ignored {discarded} invalid entr" in out.stderr, out.stderr
    assert out.stdout.split()[-1] in {k.name for k in fastgemm.kernels("cpu") if k.auto_candidate}


@pytest.mark.parametrize("key, record", [
    ("\ud800", {"calls_left": 3, "rates": {"cpu/direct": 1e9}}),      # no class is named so
    ("cpu|fp32|nn|beta0|128x128x128", {"calls_left": "x", "rates": {}}),  # malformed, and no entry
], ids=["lone-surrogate", "no-entry"])
def test_provisional_records_without_a_usable_class_are_reported(tmp_path, key, record):
    """A record under a key no class can have (JSON allows lone surrogates, UTF-8 does
    not) or a malformed one of a class without an entry: import works, one warning counts
    it, and the valid entry stays."""
    cache_path(tmp_path).write_text(json.dumps({CLASS64: "direct", autotune.UNCONFIRMED: {key: record}}))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("RuntimeWarning") == 1 and "ignored 1 invalid entry" in out.stderr, out.stderr
    assert out.stdout.split()[-1] == "direct"


def test_a_malformed_unconfirmed_section_is_reported(tmp_path):
    cache_path(tmp_path).write_text(json.dumps({CLASS64: "direct", autotune.UNCONFIRMED: ["x"]}))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0 and "ignored 1 invalid entry" in out.stderr, out.stderr
    assert out.stdout.split()[-1] == "direct"  # its classes load as confirmed choices


def test_the_disturbed_tournament_script_reaches_a_second_opinion(tmp_path):
    """benchmarks/second_opinion.py (docs/cpu-notes.md) on a small class: it gets through
    both tournaments and says what each chose."""
    script = os.path.join(HERE, os.pardir, "benchmarks", "second_opinion.py")
    env = dict(os.environ, FASTGEMM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, script, "--size", "96", "--length", "0.05", "--start", "0"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "first tournament" in out.stdout and "second tournament: winner cpu/" in out.stdout, out.stdout


def test_picks_made_with_timing_off_are_timed_by_a_later_process(tmp_path):
    """FASTGEMM_AUTOTUNE=0 picks by rule; the pick is saved unconfirmed with nothing
    measured, so the next process that times runs a first tournament at its first call
    instead of trusting the rule's pick for good."""
    env_off = {"FASTGEMM_AUTOTUNE": "0"}
    out = run(tmp_path, PROBE, env=env_off)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    saved = json.loads(cache_path(tmp_path).read_text())
    assert saved[autotune.UNCONFIRMED][CLASS64] == {"calls_left": 1, "rates": {}}
    code = """
        import json, numpy as np, fastgemm
        A = np.ones((64, 64), np.float32)
        assert np.all(fastgemm.sgemm(A, A, backend="cpu") == 64)
        print(json.dumps(fastgemm.autotune.records()))
    """
    timed = run(tmp_path, code)
    assert timed.returncode == 0 and timed.stderr == "", timed.stderr
    records = [r for r in json.loads(timed.stdout) if r["shape_class"] == CLASS64]
    assert len(records) == 1 and not records[0]["second_opinion"], records
    after = json.loads(cache_path(tmp_path).read_text())[autotune.UNCONFIRMED][CLASS64]
    assert after["rates"] and after["calls_left"] >= 1  # now a first opinion, counting


def test_a_failed_save_leaves_no_file_behind(tmp_path):
    cache_path(tmp_path).mkdir()  # the file's place is taken: os.replace fails at exit
    for _ in range(2):
        out = run(tmp_path, PROBE)
        assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache_path(tmp_path).name]


@pytest.mark.parametrize("entry", [5, "cpu/no_such_kernel"], ids=["not-text", "unknown-kernel"])
def test_a_bad_entry_and_its_provisional_record_count_once(tmp_path, entry):
    cache_path(tmp_path).write_text(json.dumps({
        CLASS64: entry, autotune.UNCONFIRMED: {CLASS64: {"calls_left": 3, "rates": {"cpu/direct": 1e9}}}}))
    out = run(tmp_path, PROBE)
    assert out.returncode == 0 and "ignored 1 invalid entry" in out.stderr, out.stderr

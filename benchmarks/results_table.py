"""Writes benchmarks/RESULTS.md from the result files in benchmarks/results/.

RESULTS.md is generated: it holds the current table of every machine, backend and suite,
each with where and how it was measured and the command that measures it again. What was
learned on the way belongs in the topic notes under docs/, not here.

    python benchmarks/results_table.py            # rewrite benchmarks/RESULTS.md
    python benchmarks/results_table.py --check    # exit 1 if RESULTS.md is out of date
    python benchmarks/results_table.py record RUN.json benchmarks/results/NAME.json \\
        --title "CPU ladder, 512^3" --command "fastgemm bench --backend cpu --json {out}"
    python benchmarks/results_table.py rerun benchmarks/results/NAME.json

`record` wraps what a benchmark wrote (RUN.json) with a provenance block taken from the
run itself where it says enough (date, commit, device, versions) and from the options;
`rerun` runs a file's recorded command again, records the new output under the same title
and rewrites RESULTS.md: one command per table.

Result files
------------
One JSON object per file, named NAME.json; tables appear per backend (cpu, metal, cuda,
then any other) in file-name order. A file is what a benchmark script wrote plus a
"provenance" object. The generator reads only the fields listed here and ignores every
other one, so the scripts may add fields without breaking it. A file that lacks a field
it needs, or has one of the wrong type, is rejected with an error naming the file and the
field.

provenance (every file):
    title             str   the table's heading
    hardware          str   the machine, as precisely as the run recorded it
    date              str   when it ran (ISO 8601)
    commit            str   the commit measured
    command           str   the command that wrote the file; "{out}" stands for its path
    source            str   "measured" (a run's own output) or "transcribed" (numbers
                            copied from an earlier record)
    transcribed_from  str   where they were copied from (required when transcribed)
    versions          object of str, optional: library and toolchain versions
    about             str, optional: what the table shows (kept by rerun)
    notes             list of str, optional: facts about this run (dropped by rerun)

The three formats, told apart by their fields:

1. `fastgemm bench --json` (top-level "machine" and "results"):
       machine.backend        str
       results[].kernel       str
       results[].M, N, K      int
       results[].device_median  number, seconds
     optional per result: precision, device_min and device_times (seconds; give min and
     spread), gflops (else 2MNK / device_median), baseline and ratio (baseline time / this
     time), rel_err, verified, passed, truncated (fewer iterations: time cap), prep_times.
   One table; a shape column when the run covered several shapes.

2. `benchmarks/cuda_ladder.py --json` (top-level "results" whose rows have "size"):
       results[].kernel       str
       results[].size         int (square problems)
       results[].device_ms    number, milliseconds; or results[].error (str): did not run
     optional per row: step, precision, tflops (else from device_ms), x_cublas,
     x_cublas_tf32, rel_err, passed, sm_mhz. Top level, optional: targets[] with target
     (str), size (int), met (true, false or null: not measured) and detail (str), as
     benchmarks/cuda_targets.py writes them. Backend: cuda.
   One table, a column group per size, then the targets.

3. Shape suites, e.g. benchmarks/cpu_shapes.py and benchmarks/cuda_shapes.py (top-level
   "suite" and "rows"):
       suite                  str   the suite's name
       backend                str
       baseline               str   the library every ratio is against
       rows[].shape           str   a name for the shape ("square", "skinny", ...)
       rows[].M, N, K         int
       rows[].trans           str   "NN", "NT", "TN" or "TT" (op(A), op(B))
       rows[].libraries       object: library name -> {ms (number, milliseconds; or
                              time_s, seconds), gflops, ratio, rel_err (optional)}.
                              Without "libraries", every object-valued field of the row
                              is taken as a library's entry.
     ratio is the baseline's time / the library's (> 1: faster than the baseline); when
     absent it is computed from the times. gflops, when absent, is 2MNK / time.
   One table with a row per shape and two summary rows per library: "geomean", the
   geometric mean of GFLOP/s and of the ratio over the shapes the library ran, and
   "worst", its lowest ratio and the shape it came from.

metal-emu files are refused: the emulator's times are CPU times of a correctness tool,
never performance numbers.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
RESULTS_DIR = BENCHMARKS / "results"
RESULTS_MD = BENCHMARKS / "RESULTS.md"
GENERATOR = "benchmarks/results_table.py"

BACKEND_ORDER = ("cpu", "metal", "cuda")
BACKEND_TITLES = {"cpu": "CPU", "metal": "Metal (Apple GPUs)", "cuda": "CUDA (NVIDIA GPUs)"}
SOURCES = ("measured", "transcribed")
TRANSPOSES = ("NN", "NT", "TN", "TT")
WIDTH = 100  # prose is wrapped here; table rows are not

METAL_STATEMENT = (
    "No Metal number has been measured by this project: none of its machines is Apple hardware. "
    "The `metal` backend is written to Apple's documented API and checked as far as that is possible "
    "without a Mac (docs/apple-silicon.md); the `metal-emu` backend runs the same shaders on a CPU to "
    "verify them, and its times are never performance numbers, so no table here shows them.")


class ResultsError(ValueError):
    """A result file that cannot be rendered; the message names the file and the field."""


# --- reading -------------------------------------------------------------------------------


def _need(obj, key, kind, where: str):
    """obj[key], checked to be of `kind` (a type or tuple of types)."""
    if not isinstance(obj, dict):
        raise ResultsError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj or obj[key] is None:
        raise ResultsError(f"{where}: missing field '{key}'")
    return _typed(obj[key], kind, _at(where, key))


def _maybe(obj, key, kind, where: str):
    """obj[key] when present and not null, checked to be of `kind`; else None."""
    if obj.get(key) is None:
        return None
    return _typed(obj[key], kind, _at(where, key))


def _at(where: str, key: str) -> str:
    """The path of a field: "run.json: results[0].M"; a top-level field is "run.json: results"."""
    return f"{where}.{key}" if ": " in where else f"{where}: {key}"


def _typed(value, kind, where: str):
    numeric = kind in (float, (float,))
    if numeric:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ResultsError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ResultsError(f"{where}: expected an integer, got {value!r}")
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ResultsError(f"{where}: expected {names}, got {type(value).__name__} {value!r}")
    return value


@dataclass
class Provenance:
    title: str
    hardware: str
    date: str
    commit: str
    command: str
    source: str
    transcribed_from: str | None = None
    versions: dict = field(default_factory=dict)
    about: str | None = None
    notes: list = field(default_factory=list)

    @staticmethod
    def parse(doc: dict, where: str) -> "Provenance":
        p = _need(doc, "provenance", dict, where)
        w = f"{where}: provenance"
        prov = Provenance(**{k: _need(p, k, str, w) for k in ("title", "hardware", "date", "commit", "command",
                                                                  "source")})
        if prov.source not in SOURCES:
            raise ResultsError(f"{w}.source: expected one of {', '.join(SOURCES)}, got {prov.source!r}")
        prov.transcribed_from = (_need(p, "transcribed_from", str, w) if prov.source == "transcribed"
                                 else _maybe(p, "transcribed_from", str, w))
        prov.versions = _maybe(p, "versions", dict, w) or {}
        for k, v in prov.versions.items():
            _typed(v, str, f"{w}.versions.{k}")
        prov.about = _maybe(p, "about", str, w)
        prov.notes = _maybe(p, "notes", list, w) or []
        for i, n in enumerate(prov.notes):
            _typed(n, str, f"{w}.notes[{i}]")
        return prov


@dataclass
class Section:
    """One result file, ready to render: its backend, provenance and table lines."""

    name: str
    backend: str
    provenance: Provenance
    lines: list


def load(path: Path) -> Section:
    where = f"{path.name}"
    try:
        doc = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ResultsError(f"{where}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    if not isinstance(doc, dict):
        raise ResultsError(f"{where}: expected a JSON object at the top level, got {type(doc).__name__}")
    kind = detect_format(doc, where)
    prov = Provenance.parse(doc, where)
    backend, lines = RENDERERS[kind](doc, where)
    if backend == "metal-emu":
        raise ResultsError(f"{where}: backend metal-emu: the emulator's times are never performance numbers, "
                           "so they have no place in RESULTS.md")
    return Section(path.stem, backend, prov, lines)


def detect_format(doc: dict, where: str) -> str:
    if "suite" in doc and "rows" in doc:
        return "suite"
    results = doc.get("results")
    if isinstance(results, list):
        if "machine" in doc:
            return "bench"
        if results and all(isinstance(r, dict) and "size" in r for r in results):
            return "ladder"
    raise ResultsError(f"{where}: not a known result format (fastgemm bench --json has 'machine' and "
                       "'results'; cuda_ladder.py --json has 'results' rows with 'size'; a shape suite has "
                       "'suite' and 'rows')")


# --- formatting ----------------------------------------------------------------------------


def fmt_ms(ms: float) -> str:
    return f"{ms:.3f}" if ms >= 1 else f"{ms:.4g}"


def fmt_ratio(x) -> str:
    """A speed ratio: three decimals, or two significant digits below 0.1 (0.0073)."""
    if x is None:
        return "-"
    return f"{x:.3f}" if x >= 0.1 else f"{x:.2g}"


def fmt_pct(fraction) -> str:
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


def prose(text: str) -> list:
    """A paragraph, wrapped for reading the file as text (never inside a `code span`)."""
    return _wrap(text, "", "")


def bullet(text: str) -> list:
    return _wrap(text, "- ", "  ")


def _wrap(text: str, first: str, rest: str) -> list:
    glued = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", "\0"), text)
    lines = textwrap.wrap(glued, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False,
                          break_long_words=False)
    return [line.replace("\0", " ") for line in lines]


def fmt_err(e) -> str:
    return "-" if e is None else f"{e:.2e}"


def fmt_opt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def table(head: list, rows: list) -> list:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def verified_cell(verified, passed) -> str:
    if verified is False:
        return "not verified"
    if passed is None:
        return "-"
    return "yes" if passed else "**FAILED**"


# --- fastgemm bench --json -----------------------------------------------------------------


def render_bench(doc: dict, where: str):
    machine = _need(doc, "machine", dict, where)
    backend = _need(machine, "backend", str, f"{where}: machine")
    results = _need(doc, "results", list, where)
    if not results:
        raise ResultsError(f"{where}: 'results' is empty")
    rows, shapes = [], []
    for i, r in enumerate(results):
        w = f"{where}: results[{i}]"
        kernel = _need(r, "kernel", str, w)
        M, N, K = (_need(r, d, int, w) for d in "MNK")
        median_s = _need(r, "device_median", float, w)
        samples = [_typed(t, float, f"{w}.device_times[{j}]") for j, t in enumerate(r.get("device_times") or [])]
        min_s = _maybe(r, "device_min", float, w)
        if min_s is None and samples:
            min_s = min(samples)
        spread = (max(samples) - min(samples)) / median_s if len(samples) > 1 and median_s > 0 else None
        gflops = _maybe(r, "gflops", float, w)
        if gflops is None:
            gflops = 2.0 * M * N * K / median_s * 1e-9 if median_s > 0 else 0.0
        baseline, ratio = _maybe(r, "baseline", str, w), _maybe(r, "ratio", float, w)
        notes = []
        if r.get("truncated"):
            notes.append(f"{len(samples)} iterations: time cap" if samples else "time cap")
        prep = [_typed(t, float, f"{w}.prep_times[{j}]") for j, t in enumerate(r.get("prep_times") or [])]
        if prep and max(prep) > 0:
            notes.append(f"incl. {sorted(prep)[len(prep) // 2] * 1e3:.3f} ms operand prep")
        shape = f"{M}x{N}x{K}"
        if shape not in shapes:
            shapes.append(shape)
        rows.append(dict(shape=shape, kernel=kernel, precision=_maybe(r, "precision", str, w) or "-",
                         median=fmt_ms(median_s * 1e3), min="-" if min_s is None else fmt_ms(min_s * 1e3),
                         spread=fmt_pct(spread),
                         gflops=f"{gflops:.2f}",
                         ratio=("baseline" if baseline is None and ratio is None and _is_baseline(kernel, results)
                                else fmt_ratio(ratio)),
                         rel_err=fmt_err(_maybe(r, "rel_err", float, w)),
                         verified=verified_cell(r.get("verified"), r.get("passed")), note="; ".join(notes)))
    baselines = sorted({r.get("baseline") for r in results if r.get("baseline")})
    x_head = f"x {baselines[0]}" if len(baselines) == 1 else "x baseline"
    head = (["shape"] if len(shapes) > 1 else []) + [
        "kernel", "precision", "median ms", "min ms", "spread", "GFLOP/s", x_head, "rel err", "verified"]
    any_note = any(r["note"] for r in rows)
    if any_note:
        head.append("note")
    cells = []
    for r in rows:
        c = ([r["shape"]] if len(shapes) > 1 else []) + [
            f"`{r['kernel']}`", r["precision"], r["median"], r["min"], r["spread"], r["gflops"], r["ratio"],
            r["rel_err"], r["verified"]]
        cells.append(c + ([r["note"]] if any_note else []))
    threads = machine.get("threads")
    lines = prose(f"Problem{'s' if len(shapes) > 1 else ''} {', '.join(shapes)} (M x N x K)"
                  + (f", {threads} thread{'s' if threads != 1 else ''}" if isinstance(threads, int) else "")
                  + ". Time: device time per call in milliseconds, median and minimum of the timed "
                  "iterations; spread: (slowest - fastest) / median; x: the baseline's median time / this "
                  "kernel's, same inputs, same process.")
    return backend, lines + [""] + table(head, cells)


def _is_baseline(kernel: str, results: list) -> bool:
    return any(r.get("baseline") == kernel for r in results)


# --- benchmarks/cuda_ladder.py --json ------------------------------------------------------


def render_ladder(doc: dict, where: str):
    results = _need(doc, "results", list, where)
    kernels, by, index = [], {}, {}
    for i, r in enumerate(results):
        w = f"{where}: results[{i}]"
        kernel = _need(r, "kernel", str, w)
        size = _need(r, "size", int, w)
        if "error" in r and r["error"] is not None:
            _typed(r["error"], str, f"{w}.error")
        else:
            _need(r, "device_ms", float, w)
        if kernel not in kernels:
            kernels.append(kernel)
        by[(kernel, size)] = r
        index[(kernel, size)] = i
    sizes = sorted({s for _, s in by})
    head = ["kernel", "step", "precision"]
    for s in sizes:
        head += [f"{s}^3 ms", "TFLOP/s", "x cublas", "rel err"]
    head.append(f"SM MHz ({sizes[-1]}^3)")
    cells = []
    for kernel in kernels:
        any_row = next(by[(kernel, s)] for s in sizes if (kernel, s) in by)
        step = any_row.get("step")
        precision = any_row.get("precision") or "-"
        c = [f"`{kernel}`", "-" if step is None else str(step), precision]
        for s in sizes:
            r = by.get((kernel, s))
            w = f"{where}: results[{index.get((kernel, s))}]"
            if r is None:
                c += ["", "", "", ""]
            elif r.get("error") is not None:
                c += [f"did not run: {r['error'][:60]}", "", "", ""]
            else:
                ms = _need(r, "device_ms", float, w)
                tflops = _maybe(r, "tflops", float, w)
                if tflops is None:
                    tflops = 2.0 * s ** 3 / ms * 1e-9
                x = _maybe(r, "x_cublas", float, w)
                x_tf32 = _maybe(r, "x_cublas_tf32", float, w)
                ratio = fmt_ratio(x)
                if precision == "tf32" and x_tf32 is not None and kernel != "cublas_tf32":
                    ratio += f" ({fmt_ratio(x_tf32)}x cublas_tf32)"
                failed = r.get("passed") is False
                c += [fmt_ms(ms) + (" (FAILED verification)" if failed else ""), f"{tflops:.2f}", ratio,
                      fmt_err(_maybe(r, "rel_err", float, w))]
        last = by.get((kernel, sizes[-1]))
        mhz = _maybe(last, "sm_mhz", float, f"{where}: results[{index.get((kernel, sizes[-1]))}]") if last else None
        c.append(fmt_opt(mhz, ".0f"))
        cells.append(c)
    lines = prose("Time: device time per call in milliseconds, the median over interleaved rounds of each "
                  "round's median; x cublas: cuBLAS SGEMM's time / this kernel's in the same run (tf32 rungs "
                  "also against cuBLAS TF32); rel err: ||C - ref|| / ||ref|| against float64. A blank size: "
                  "not run there (over the kernel's FLOP cap).")
    lines += [""] + table(head, cells)
    targets = doc.get("targets")
    if targets:
        lines += ["", "Targets of the cuda backend (benchmarks/cuda_targets.py), judged on this run's rows:", ""]
        lines += render_targets(_typed(targets, list, _at(where, "targets")), where)
    return "cuda", lines


def render_targets(targets: list, where: str) -> list:
    word = {True: "met", False: "**not met**", None: "not measured"}
    sizes, order, cells = [], [], {}
    for i, t in enumerate(targets):
        w = f"{where}: targets[{i}]"
        name, size, detail = _need(t, "target", str, w), _need(t, "size", int, w), _need(t, "detail", str, w)
        met = t.get("met")
        if met not in (True, False, None):
            raise ResultsError(f"{w}.met: expected true, false or null, got {met!r}")
        if size not in sizes:
            sizes.append(size)
        if name not in order:
            order.append(name)
        cells[(name, size)] = f"{word[met]}: {detail}"
    sizes.sort()
    rows = [[name] + [cells.get((name, s), "") for s in sizes] for name in order]
    return table(["target"] + [f"{s}^3" for s in sizes], rows)


# --- shape suites --------------------------------------------------------------------------


def render_suite(doc: dict, where: str):
    _need(doc, "suite", str, where)
    backend = _need(doc, "backend", str, where)
    baseline = _need(doc, "baseline", str, where)
    rows = _need(doc, "rows", list, where)
    if not rows:
        raise ResultsError(f"{where}: 'rows' is empty")
    libraries = [baseline]
    parsed = []
    for i, r in enumerate(rows):
        w = f"{where}: rows[{i}]"
        shape = _need(r, "shape", str, w)
        M, N, K = (_need(r, d, int, w) for d in "MNK")
        trans = _need(r, "trans", str, w)
        if trans not in TRANSPOSES:
            raise ResultsError(f"{w}.trans: expected one of {', '.join(TRANSPOSES)}, got {trans!r}")
        if "libraries" in r:
            libs = _need(r, "libraries", dict, w)
            prefix = f"{w}.libraries"
        else:
            libs = {k: v for k, v in r.items() if isinstance(v, dict)}
            prefix = w
            if not libs:
                raise ResultsError(f"{w}: missing field 'libraries' (or per-library objects)")
        measured = {}
        for name, m in libs.items():
            wl = f"{prefix}.{name}"
            if isinstance(m, dict) and m.get("ms") is None and m.get("time_s") is not None:
                ms = _need(m, "time_s", float, wl) * 1e3
            else:
                ms = _need(m, "ms", float, wl)
            if ms <= 0:
                raise ResultsError(f"{wl}.ms: expected a positive time, got {ms!r}")
            gflops = _maybe(m, "gflops", float, wl)
            measured[name] = dict(ms=ms, gflops=gflops if gflops is not None else 2.0 * M * N * K / ms * 1e-6,
                                  ratio=_maybe(m, "ratio", float, wl), rel_err=_maybe(m, "rel_err", float, wl))
            if name not in libraries:
                libraries.append(name)
        if baseline in measured:
            for name, m in measured.items():
                if m["ratio"] is None:
                    m["ratio"] = measured[baseline]["ms"] / m["ms"]
        parsed.append((shape, f"{M}x{N}x{K}", trans, measured))
    others = libraries[1:]
    head = ["shape", "M x N x K", "op", f"{baseline} GFLOP/s"]
    for name in others:
        head += [f"{name} GFLOP/s", f"x {baseline}", "rel err"]
    cells = []
    for shape, dims, trans, measured in parsed:
        c = [shape, dims, trans, fmt_opt(measured.get(baseline, {}).get("gflops"), ".1f")]
        for name in others:
            m = measured.get(name)
            c += (["-", "-", "-"] if m is None else
                  [f"{m['gflops']:.1f}", fmt_ratio(m["ratio"]), fmt_err(m["rel_err"])])
        cells.append(c)
    geo = ["**geomean**", "", "", fmt_opt(_geomean([m[baseline]["gflops"] for *_, m in parsed if baseline in m]),
                                          ".1f")]
    worst = ["**worst**", "", "", ""]
    for name in others:
        ran = [(m[name]["ratio"], shape) for shape, _, _, m in parsed if name in m and m[name]["ratio"] is not None]
        geo += [fmt_opt(_geomean([m[name]["gflops"] for *_, m in parsed if name in m]), ".1f"),
                fmt_ratio(_geomean([x for x, _ in ran])), ""]
        low = min(ran) if ran else None
        worst += ["", "-" if low is None else f"{fmt_ratio(low[0])} ({low[1]})", ""]
    lines = prose(f"Suite `{doc['suite']}`; GFLOP/s = 2MNK / time; x {baseline}: its time / the library's; "
                  "geomean and worst (lowest ratio) per library.")
    return backend, lines + [""] + table(head, cells + [geo, worst])


def _geomean(values: list):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


RENDERERS = {"bench": render_bench, "ladder": render_ladder, "suite": render_suite}


# --- the results file ----------------------------------------------------------------------


def details(section: Section) -> list:
    p = section.provenance
    rel = f"benchmarks/results/{section.name}.json"
    items = [f"Hardware: {p.hardware}", f"Date: {p.date}; Commit: {p.commit}"]
    if p.versions:
        items.append("Versions: " + ", ".join(f"{k} {v}" for k, v in p.versions.items()))
    if p.source == "transcribed":
        items.append(f"Source: transcribed from {p.transcribed_from}; the numbers are in `{rel}`")
        items.append(f"Measured with: `{p.command.replace('{out}', 'run.json')}`")
    else:
        items.append(f"Produced by: `{p.command.replace('{out}', rel)}`")
    items.append(f"Measure again: `python {GENERATOR} rerun {rel}`")
    return [line for item in items for line in bullet(item)]


def render(sections: list) -> str:
    by_backend: dict = {}
    for s in sorted(sections, key=lambda s: s.name):
        by_backend.setdefault(s.backend, []).append(s)
    order = list(BACKEND_ORDER) + sorted(b for b in by_backend if b not in BACKEND_ORDER)
    out = ["# Measured results", "",
           f"<!-- Generated by {GENERATOR} from benchmarks/results/*.json. Do not edit: change a result file "
           "and regenerate. -->", ""]
    out += prose("The current table of each machine, backend and suite: every kernel verified against a "
                 "float64 reference before it is timed, every ratio against a baseline timed in the same run "
                 "on the same inputs. What the numbers taught is in docs/cpu-notes.md, docs/cuda-notes.md and "
                 f"docs/experiments.md. Regenerate with `python {GENERATOR}` (file formats: its docstring).")
    for backend in order:
        group = by_backend.get(backend, [])
        if not group and backend != "metal":
            continue
        out += ["", f"## {BACKEND_TITLES.get(backend, backend)}"]
        if backend == "metal":
            out += [""] + prose(METAL_STATEMENT)
        for s in group:
            out += ["", f"### {s.provenance.title}", ""]
            if s.provenance.about:
                out += prose(s.provenance.about) + [""]
            out += details(s) + [""] + s.lines
            if s.provenance.notes:
                out += ["", "Notes:", ""] + [line for n in s.provenance.notes for line in bullet(n)]
    return "\n".join(out) + "\n"


def result_files(directory: Path | None = None) -> list:
    return sorted(Path(directory or RESULTS_DIR).glob("*.json"))


def generate(directory: Path | None = None) -> str:
    directory = Path(directory or RESULTS_DIR)
    files = result_files(directory)
    if not files:
        raise ResultsError(f"{directory}: no result files (*.json)")
    return render([load(f) for f in files])


# --- recording a run -----------------------------------------------------------------------


def repo_commit() -> str:
    """The short commit of this repository's HEAD, '+dirty' when tracked files differ."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def derived_provenance(doc: dict) -> dict:
    """What a run's own output says about where and when it ran."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    machine = doc.get("machine")
    if isinstance(machine, dict):  # fastgemm bench (and suites that carry its machine record)
        props = machine.get("backend_properties") or {}
        hardware = ", ".join(str(x) for x in (machine.get("device"), props.get("isa") and f"ISA {props['isa']}",
                                              machine.get("platform")) if x)
        versions = {k: str(v) for k, v in (("fastgemm", machine.get("fastgemm")), ("python", machine.get("python")),
                                           ("numpy", machine.get("numpy")), ("compiler", props.get("compiler")),
                                           ("blas", props.get("blas"))) if v}
        return dict(hardware=hardware or "unknown", date=machine.get("date") or now,
                    commit=machine.get("commit") or repo_commit(), versions=versions)
    props = doc.get("properties") or {}  # cuda_ladder.py
    keys = ("multiprocessors", "compute capability", "memory", "l2", "max sm clock")
    hardware = ", ".join([str(doc.get("device") or "unknown")] + [f"{k} {props[k]}" for k in keys if k in props])
    versions = {k: str(props[k]) for k in ("cuda runtime", "driver api", "cublas") if k in props}
    if doc.get("host_blas"):  # cuda_shapes.py: what numpy arrays' CPU candidates call
        versions["host blas"] = str(doc["host_blas"])
    return dict(hardware=hardware, date=now, commit=os.environ.get("FASTGEMM_COMMIT") or repo_commit(),
                versions=versions)


def record(run_path: Path, out_path: Path, *, title: str, command: str, about: str | None = None,
           notes: tuple = (), hardware: str | None = None, date: str | None = None,
           commit: str | None = None) -> dict:
    """Writes out_path: the run's output with a provenance block; returns the document."""
    try:
        doc = json.loads(Path(run_path).read_text())
    except json.JSONDecodeError as e:
        raise ResultsError(f"{run_path}: not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    if not isinstance(doc, dict):
        raise ResultsError(f"{run_path}: expected a JSON object at the top level")
    detect_format(doc, str(run_path))
    if "{out}" not in command:
        raise ResultsError("--command: write '{out}' where the command takes its output path")
    prov = derived_provenance(doc)
    prov.update({k: v for k, v in (("hardware", hardware), ("date", date), ("commit", commit)) if v})
    prov = dict(title=title, **prov, command=command, source="measured")
    if about:
        prov["about"] = about
    if notes:
        prov["notes"] = list(notes)
    doc["provenance"] = prov
    out_path = Path(out_path)
    Provenance.parse(doc, out_path.name)  # refuse to write what generate() would reject
    out_path.write_text(json.dumps(doc, indent=1) + "\n")
    load(out_path)
    return doc


def rerun(result_path: Path) -> None:
    """Runs a result file's command again, records the new output in its place, and
    rewrites RESULTS.md."""
    old = json.loads(Path(result_path).read_text())
    prov = Provenance.parse(old, Path(result_path).name)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        command = prov.command.replace("{out}", shlex.quote(str(out)))
        print(f"$ {command}", flush=True)
        done = subprocess.run(command, shell=True, cwd=REPO)
        if not out.exists():
            raise ResultsError(f"{prov.command!r} exited {done.returncode} and wrote no {out.name}")
        record(out, result_path, title=prov.title, command=prov.command, about=prov.about)
    RESULTS_MD.write_text(generate())
    print(f"{result_path} and {RESULTS_MD} rewritten")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if RESULTS.md differs from what the files give")
    sub = ap.add_subparsers(dest="cmd")
    rec = sub.add_parser("record", help="wrap a benchmark's JSON output with its provenance")
    rec.add_argument("run", type=Path, help="what the benchmark wrote")
    rec.add_argument("out", type=Path, help="the result file to write (benchmarks/results/NAME.json)")
    rec.add_argument("--title", required=True, help="the table's heading")
    rec.add_argument("--command", required=True, help="the command that wrote RUN, with {out} for its output path")
    rec.add_argument("--about", help="what the table shows")
    rec.add_argument("--note", action="append", default=[], help="a fact about this run (repeatable)")
    rec.add_argument("--hardware", help="the machine (default: from the run's output)")
    rec.add_argument("--date", help="when it ran (default: from the run's output, else now)")
    rec.add_argument("--commit", help="the commit measured (default: from the run, else this repository's HEAD)")
    again = sub.add_parser("rerun", help="run a result file's command again and record the new output")
    again.add_argument("result", type=Path)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "record":
            record(args.run, args.out, title=args.title, command=args.command, about=args.about,
                   notes=tuple(args.note), hardware=args.hardware, date=args.date, commit=args.commit)
            print(f"{args.out} written; run `python {GENERATOR}` to rewrite RESULTS.md")
            return 0
        if args.cmd == "rerun":
            rerun(args.result)
            return 0
        text = generate()
    except ResultsError as e:
        print(f"results_table: {e}", file=sys.stderr)
        return 2
    if args.check:
        if RESULTS_MD.exists() and RESULTS_MD.read_text() == text:
            return 0
        print(f"{RESULTS_MD} is out of date: run `python {GENERATOR}`", file=sys.stderr)
        return 1
    RESULTS_MD.write_text(text)
    print(f"{RESULTS_MD} written from {len(result_files())} result files")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The repository explains itself: every link and file reference in its Markdown resolves
inside it, nothing it tracks cites material outside it, and no file carries work-log
labels (which attempt, session, call or lent machine found something). Findings belong
in the topic notes under docs/, numbers in the generated benchmarks/RESULTS.md."""

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ORDINALS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
            "fourteenth|fifteenth")
# A work-log label names an attempt rather than a finding: "the ninth session", "call 7",
# "machine E", a scratch folder of one attempt.
WORK_LOG_LABELS = [
    re.compile(rf"\b(?:{ORDINALS}|[0-9]+(?:st|nd|rd|th)) session", re.IGNORECASE),
    re.compile(r"\bsession [0-9]+", re.IGNORECASE),
    re.compile(r"\bcall [0-9]+", re.IGNORECASE),
    re.compile(r"\bmachine [A-J]\b"),
    re.compile(r"scratch/s[0-9]"),
]
# Material that lives outside the repository: the design notes and Apple facts the project
# started from (restated in docs/architecture.md), the machines' shared folders.
OUTSIDE = [re.compile(p) for p in (r"metal-api-facts", r"\bDESIGN\.md\b", r"/work/", r"shared/reference")]
# Markdown may not point at a scratch folder either.
OUTSIDE_MD = OUTSIDE + [re.compile(r"(?<![\w.])scratch/")]
# Verbatim tool output kept as data: the profiler's log lines name the process it ran.
RECORDED_OUTPUT = ("benchmarks/ncu/", "tests/data/")


def tracked_files() -> list:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"needs git to list the repository's files: {e}")
    if out.returncode != 0:
        pytest.skip("needs a git checkout to list the repository's files (not one here)")
    return [p for p in out.stdout.split("\0") if p and (ROOT / p).is_file()]


def text_of(rel: str):
    data = (ROOT / rel).read_bytes()
    if b"\0" in data[:8192]:
        return None  # binary (images)
    return data.decode("utf-8", errors="replace")


def hits(files, patterns) -> list:
    found = []
    for rel in files:
        text = text_of(rel)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in patterns):
                found.append(f"{rel}:{n}: {line.strip()[:120]}")
    return found


# --- Markdown links and file references ---------------------------------------------------------


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(md_text: str) -> set:
    seen, out = {}, set()
    for line in strip_code(md_text).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return out


def strip_code(md_text: str) -> str:
    """The text without fenced code blocks (links inside them are not links)."""
    return re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", md_text, flags=re.M | re.S)


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+|mailto:\S+")
PATH = re.compile(r"(?<![\w./<>*-])((?:\.{1,2}/)*[\w.*<>-]+(?:/[\w.*<>-]+)+/?)")
MD_NAME = re.compile(r"(?<![\w./-])([\w-]+\.md)\b")
# Names that stand for any file in a path: benchmarks/results/NAME.json, benchmarks/ncu/X.csv.
PLACEHOLDERS = {"NAME", "FILE", "X", "KERNEL", "RUN", "OUT"}


class Tree:
    """The tracked files, and the folders that hold them, relative to the root."""

    def __init__(self, files):
        self.files = set(files)
        self.dirs = {str(Path(f).parents[i]) for f in files for i in range(len(Path(f).parents) - 1)}
        self.top = {f.split("/")[0] for f in files}
        self.names = {Path(f).name for f in files}

    def has(self, rel: str) -> bool:
        rel = rel.rstrip("/")
        if rel in self.files or rel in self.dirs or rel == "":
            return True
        # A pattern (shaders/*.metal) or a placeholder (benchmarks/results/NAME.json,
        # src/cpu/packed/micro_kernel_<isa>.cpp) stands for the files it matches.
        pattern = "/".join(placeholder_glob(part) for part in rel.split("/"))
        if not any(c in pattern for c in "*?["):
            return False
        return any(fnmatch.fnmatchcase(f, pattern) for f in self.files | self.dirs)


def placeholder_glob(part: str) -> str:
    stem, dot, ext = part.partition(".")
    if stem in PLACEHOLDERS:
        return "*" + dot + ext
    return re.sub(r"<[^>]*>", "*", part)


def resolve(md_rel: str, target: str):
    """target relative to the Markdown file, as a path relative to the root (None: outside)."""
    joined = ((ROOT / md_rel).parent / target).resolve()
    try:
        rel = joined.relative_to(ROOT)
    except ValueError:
        return None
    return "" if str(rel) == "." else rel.as_posix()


def markdown_problems(md_rel: str, text: str, tree: Tree, heading_anchors) -> list:
    problems = []
    prose = strip_code(text)
    for target in LINK.findall(prose) + REF_LINK.findall(prose):
        if URL.match(target):
            continue
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in heading_anchors(md_rel):
                problems.append(f"{md_rel}: link to #{anchor}: no such heading here")
            continue
        rel = resolve(md_rel, path)
        if rel is None:
            problems.append(f"{md_rel}: link to {target}: outside the repository")
        elif not tree.has(rel):
            problems.append(f"{md_rel}: link to {target}: {rel} is not in the repository")
        elif anchor and rel.endswith(".md") and anchor not in heading_anchors(rel):
            problems.append(f"{md_rel}: link to {target}: {rel} has no heading #{anchor}")
    no_urls = URL.sub(" ", text)
    for token in PATH.findall(no_urls):
        token = token.rstrip(".,;:")
        if token.startswith("..."):
            continue  # an elided path in sample output
        if token.startswith(("./", "../")):
            rel = resolve(md_rel, token)
        elif token.split("/")[0] in tree.top:
            rel = token
        else:
            continue  # not a path into this repository (an include path, a system path)
        if rel is None or not tree.has(rel):
            problems.append(f"{md_rel}: names {token}, which is not in the repository")
    for name in MD_NAME.findall(no_urls):
        if name not in tree.names:
            problems.append(f"{md_rel}: names {name}, which is not in the repository")
    return problems


def test_markdown_links_and_file_references_resolve_inside_the_repository():
    files = tracked_files()
    tree = Tree(files)
    cache = {}

    def heading_anchors(rel):
        if rel not in cache:
            cache[rel] = anchors((ROOT / rel).read_text()) if (ROOT / rel).is_file() else set()
        return cache[rel]

    problems = []
    for rel in sorted(f for f in files if f.endswith(".md")):
        problems += markdown_problems(rel, (ROOT / rel).read_text(), tree, heading_anchors)
    problems += [f"{h}  (outside the repository)" for h in hits([f for f in files if f.endswith(".md")],
                                                                    OUTSIDE_MD)]
    assert not problems, "Markdown that points nowhere or outside the repository:\n" + "\n".join(problems)


def test_no_tracked_file_cites_material_outside_the_repository():
    files = [f for f in tracked_files() if not f.endswith(".md") and not f.startswith(RECORDED_OUTPUT)
             and f != Path(__file__).relative_to(ROOT).as_posix()]
    found = hits(files, OUTSIDE)
    assert not found, ("cite docs/architecture.md (or another file in the repository) instead:\n"
                       + "\n".join(found))


def test_no_tracked_file_carries_work_log_labels():
    files = [f for f in tracked_files() if f != Path(__file__).relative_to(ROOT).as_posix()]
    found = hits(files, WORK_LOG_LABELS)
    assert not found, ("state the finding, not which attempt found it (numbers: benchmarks/RESULTS.md; "
                       "findings: docs/):\n" + "\n".join(found))


# --- the checker itself ------------------------------------------------------------------------


@pytest.mark.parametrize("text, bad", [
    ("see [the notes](docs/nope.md)", "docs/nope.md is not in the repository"),
    ("see [the notes](../../elsewhere.md)", "outside the repository"),
    ("see [x](#no-such-heading)", "no such heading"),
    ("the kernel in `src/cuda/99_missing.cu`", "src/cuda/99_missing.cu, which is not"),
    ("as metal-facts.md says", "metal-facts.md, which is not"),
    ("see `../docs/a.md`", "../docs/a.md, which is not"),
])
def test_the_checker_catches_what_it_is_for(text, bad):
    tree = Tree(["README.md", "docs/a.md", "src/cuda/01_naive.cu", "shaders/01_naive.metal"])
    problems = markdown_problems("README.md", "# Title\n\n" + text + "\n", tree, lambda rel: {"title"})
    assert any(bad in p for p in problems), problems


@pytest.mark.parametrize("text", [
    "see [a](docs/a.md#title), [top](#title), <https://example.com/x/y.md> and [u](https://e.org/a/b)",
    "kernels in `src/cuda/`, `shaders/*.metal`, `src/cuda/NAME.cu`, `src/cuda/<step>_naive.cu`.",
    "include `<fastgemm/fastgemm.hpp>`; build with `/usr/bin/g++`; the A/B driver; 1/8 of L2",
    "see `./docs/a.md`, .../site-packages/fastgemm/x.so and [the docs](./docs/)",
])
def test_the_checker_accepts_what_resolves(text):
    tree = Tree(["README.md", "docs/a.md", "src/cuda/01_naive.cu", "shaders/01_naive.metal"])
    assert markdown_problems("README.md", "# Title\n\n" + text + "\n", tree, lambda rel: {"title"}) == []


def test_label_patterns_match_work_log_labels_and_not_prose():
    labelled = ["the ninth session found", "in the 3rd session", "Session 12", "call 7 showed",
                "on machine E", "scratch/s15/promote.diff"]
    prose = ["the first k-tile", "a call to sgemm", "the machine a run lands on", "session cookies",
             "called 7 times", "machine-independent"]
    assert all(any(p.search(t) for p in WORK_LOG_LABELS) for t in labelled)
    assert not [t for t in prose if any(p.search(t) for p in WORK_LOG_LABELS)]

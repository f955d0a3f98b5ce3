#!/usr/bin/env python3
"""msl_scan: turn one Metal Shading Language source into C++ for the metal-emu emulator.

C++ cannot read MSL attributes ([[buffer(0)]], [[thread_position_in_grid]], [[host_name]]),
so this scanner reads them and writes a glue file. It works in three steps:

1. Preprocess. The source runs through the C preprocessor with *stub* Metal headers (empty
   files named like Apple's, so the MSL keywords survive) and the emulator's predefined
   macros, so kernels instantiated by macros, `host_name` strings built from concatenated
   literals and conditional code all look to the scanner as they look to Apple's compiler.
   Line markers of the preprocessed text keep compiler errors, gdb and ASan pointing at the
   shader's own file and line. Includes are checked first (see `check_includes`).
2. Scan. Kernels (`kernel void f(...)`, `[[kernel, ...]] void f(...)`, templates of either
   kind and their `[[host_name]]` explicit instantiations) with their parameters' roles:
   buffer n, threadgroup memory n, a position attribute, or an unsupported resource.
3. Rewrite, keeping line structure: attributes become spaces; a `threadgroup` variable
   declaration becomes `_FG_TG_VAR_` (one copy per emulated threadgroup) followed by a
   poisoning call; a program-scope `constant` becomes `_FG_CST_` (static const), or
   `_FG_FCD_` plus a re-evaluation function when its value depends on a function constant;
   `1.5h` half literals become `half(1.5)`; overloads that differ only in address space
   (identical once address spaces are erased, as here) keep their first definition.

The same module is used by CMake at build time and by fastgemm.emu at run time.

Usage: msl_scan.py SOURCE.metal -o GLUE.cpp [--name ID] [--display PATH] [-I DIR] [--cxx CXX]
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
SHIM_DIR = HERE / "include"

POSITION_ATTRS = {
    "thread_position_in_grid", "threads_per_grid", "thread_position_in_threadgroup",
    "threads_per_threadgroup", "threadgroup_position_in_grid", "threadgroups_per_grid",
    "dispatch_threads_per_threadgroup", "thread_index_in_threadgroup",
    "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup", "threads_per_simdgroup",
    "simdgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
    "thread_execution_width", "thread_index_in_quadgroup", "quadgroup_index_in_threadgroup",
    "quadgroups_per_threadgroup", "grid_origin", "grid_size",
}
# Kernel argument attributes of resources the emulator does not model.
UNSUPPORTED_ATTRS = {
    "stage_in": "[[stage_in]] argument",
    "visible_function_table": "visible function table",
    "intersection_function_table": "intersection function table",
    "instance_acceleration_structure": "acceleration structure",
    "primitive_acceleration_structure": "acceleration structure",
    "payload": "[[payload]] argument",
    "mesh": "mesh argument",
    "imageblock_data": "imageblock",
    "id": "argument buffer ([[id(n)]])",
}
ADDRESS_SPACES = ("device", "constant", "thread", "threadgroup", "threadgroup_imageblock",
                  "ray_data", "object_data")


class ScanError(Exception):
    """The source uses something the scanner cannot translate or the policy refuses."""


class Refused(ScanError):
    """The safe policy refuses the source (a host include, a computed include...)."""


@dataclass
class ArgStruct:
    """A struct with [[id(n)]] members: the layout of an argument buffer."""
    qualified: str       # C++ name
    members: list        # [(member name, first id)]; an array member takes consecutive ids
    where: str           # "file:line"
    problem: str = ""    # why kernels cannot bind it, if they cannot


@dataclass
class Param:
    text: str
    attrs: list
    role: tuple = ("buffer", -1)  # (kind, index-or-attr)
    argbuf: Optional[ArgStruct] = None  # the struct of an argument buffer bound here


@dataclass
class Kernel:
    name: str            # registry/lookup name
    callable: str        # C++ expression naming the function
    params: list
    where: str           # "file:line"
    unsupported: str = ""
    signature: str = ""  # parameter list picking a template's specialisation, if no <args>


@dataclass
class FunctionConstant:
    index: int
    name: str            # qualified C++ name


@dataclass
class Scan:
    kernels: list = field(default_factory=list)
    function_constants: list = field(default_factory=list)
    derived_constants: list = field(default_factory=list)  # qualified function names
    arg_structs: list = field(default_factory=list)
    rewritten: str = ""


# ---- text helpers -----------------------------------------------------------------------------

def mask(text: str, keep_strings: bool = False) -> str:
    """Comments (and string/char literal contents) replaced by spaces (newlines kept)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum()):
                i += 1  # digit separator (1'000) or an identifier's quote
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if not keep_strings:
                for k in range(i + 1, min(j, n)):
                    if out[k] != "\n":
                        out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def blank_directives(m: str) -> str:
    """Blank preprocessor lines (line markers, pragmas), continuations included."""
    lines = m.split("\n")
    cont = False
    for i, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[i] = " " * len(line)
    return "\n".join(lines)


def blank(s: str) -> str:
    return "".join("\n" if c == "\n" else " " for c in s)


def match_close(s: str, i: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing s[i] (== open_c)."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == open_c:
            depth += 1
        elif s[j] == close_c:
            depth -= 1
            if depth == 0:
                return j
    raise ScanError(f"unbalanced '{open_c}'")


def match_open_back(s: str, i: int, open_c: str, close_c: str) -> int:
    """Index of the bracket opening s[i] (== close_c), scanning backwards; parens skipped."""
    depth = 0
    j = i
    while j >= 0:
        c = s[j]
        if c == ")":
            j = match_open_back(s, j, "(", ")") - 1 if open_c != "(" else j
            if open_c != "(":
                continue
        if c == close_c:
            depth += 1
        elif c == open_c:
            depth -= 1
            if depth == 0:
                return j
        elif c in ";{}" and open_c == "<":
            return -1
        j -= 1
    return -1


def split_top(s: str, sep: str = ","):
    parts, depth, start = [], 0, 0
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return [p for p in parts if p.strip()]


def split_template_args(s: str):
    """Top-level commas of a template argument list (angle brackets counted)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(s):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return [p for p in parts if p.strip()]


def prev_nonspace(s: str, i: int) -> int:
    j = i - 1
    while j >= 0 and s[j].isspace():
        j -= 1
    return j


def next_nonspace(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def c_string_value(lits: str) -> str:
    """The value of adjacent C string literals ("a" "b" -> ab)."""
    out = []
    for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', lits):
        out.append(bytes(lit, "utf-8").decode("unicode_escape"))
    return "".join(out)


# ---- includes and the preprocessor ----------------------------------------------------------

def shim_headers() -> set:
    return {p.relative_to(SHIM_DIR).as_posix() for p in SHIM_DIR.rglob("*")
            if p.is_file() and not p.relative_to(SHIM_DIR).as_posix().startswith("fgemu/")}


# `#include`, and the spellings that include a file too: the `%:` digraph for `#`,
# `#include_next`, `#import` and `#embed`. A directive split by a backslash-newline is left
# to the check of what the preprocessor actually read (`preprocess`).
_INCLUDE = re.compile(r'^[ \t]*(?:#|%:)[ \t]*(?:include_next|include|import|embed)\b[ \t]*'
                      r'(?:<([^>\n]*)>|"([^"\n]*)"|(.*))', re.M)


def _inside(p: Path, roots: Sequence[Path]) -> bool:
    rp = os.path.realpath(p)
    return any(rp == str(r) or rp.startswith(str(r) + os.sep) for r in roots)


def check_includes(src: str, display: str, base: Path, include_dirs: Sequence[Path],
                   trusted: bool) -> List[str]:
    """Resolves the source's #include directives (and those of the files they include).

    Untrusted (default): an angle include must name a Metal header the emulator ships or a
    file in an include directory the caller gave; a quoted include must resolve inside the
    source's folder or those directories; a computed include (#include MACRO) is refused.
    Refusals never show the contents of the file they name. Trusted: angle includes that
    are not Metal headers are returned (they are included before the shims, host side).
    """
    shims = shim_headers()
    roots = [Path(os.path.realpath(base))] + [Path(os.path.realpath(d)) for d in include_dirs]
    host = []
    seen = set()
    todo = [(src, display, base)]
    while todo:
        text, where, folder = todo.pop()
        masked = mask(text, keep_strings=True)
        for m in _INCLUDE.finditer(masked):
            line = text.count("\n", 0, m.start()) + 1
            angle, quoted, other = m.group(1), m.group(2), m.group(3)
            if other is not None:
                if trusted:
                    continue
                raise Refused(f"{where}:{line}: unsupported: computed #include (the safe "
                              "policy resolves includes before preprocessing)")
            name = (angle if angle is not None else quoted).strip()
            if angle is not None and name in shims:
                continue
            cands = []
            if quoted is not None:
                cands.append(Path(name) if os.path.isabs(name) else folder / name)
            if not os.path.isabs(name):
                cands += [d / name for d in include_dirs]
            found = next((c for c in cands if c.is_file()), None)
            if found is None:
                if angle is not None:
                    # Not a Metal header: the preprocessor decides whether it is really
                    # included (it may sit in an #if branch for host builds).
                    host.append(name)
                    continue
                raise ScanError(f"{where}:{line}: #include \"{name}\" not found")
            if not trusted and not _inside(found, roots):
                raise Refused(f"{where}:{line}: refused: #include \"{name}\" lies outside the "
                              "source's folder and the given include directories")
            key = os.path.realpath(found)
            if key in seen:
                continue
            seen.add(key)
            try:
                inc = found.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                raise Refused(f"{where}:{line}: refused: #include \"{name}\" is not a text "
                              "source file") from None
            todo.append((inc, str(found), found.parent))
    return sorted(set(host))


def strip_host_includes(src: str, host: Sequence[str]) -> str:
    if not host:
        return src
    pat = re.compile(r'^[ \t]*#[ \t]*include[ \t]*<(' + "|".join(map(re.escape, host)) +
                     r')>[^\n]*', re.M)
    return pat.sub(lambda m: " " * len(m.group(0)), src)


def _dependencies(text: str) -> List[str]:
    """The prerequisites of a make rule written by the preprocessor's -MD -MF."""
    text = text.replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    out, cur, i = [], "", 0
    while i < len(deps):
        c = deps[i]
        if c == "\\" and i + 1 < len(deps) and deps[i + 1] in " #\\":
            cur += deps[i + 1]
            i += 2
            continue
        if c == "$" and deps.startswith("$$", i):
            cur, i = cur + "$", i + 2
            continue
        if c.isspace():
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    return out + ([cur] if cur else [])


_ENTER_MARKER = re.compile(r'^#\s*\d+\s+"((?:[^"\\]|\\.)*)"((?:\s+\d)*)\s*$', re.M)


def check_preprocessed_files(out: str, dep_text: Optional[str], display: str,
                             roots: Sequence[str], cwd: str) -> None:
    """Refuses a file the preprocessor read outside `roots` (real paths of folders): the
    files its line markers enter and those its dependency list names. This catches an
    include the textual check cannot resolve (an angle include that climbs out of the stub
    folder, a directive split over lines); the message names the file, never its text."""
    def real(path: str) -> str:  # relative names are relative to the preprocessor's folder
        return os.path.realpath(os.path.join(cwd, path))

    def inside(path: str) -> bool:
        rp = real(path)
        return any(rp == r or rp.startswith(r + os.sep) for r in roots)
    where = None
    for m in _ENTER_MARKER.finditer(out):
        if "1" not in m.group(2).split():
            continue
        name = re.sub(r"\\(.)", r"\1", m.group(1))
        if name.startswith("<") or inside(name):
            continue
        where = (real(name), LineMap(out).where(m.start()).replace("<stdin>", display))
        break
    if where is None and dep_text:
        bad = [d for d in _dependencies(dep_text) if d != "-" and not inside(d)]
        if bad:
            where = (real(bad[0]), display)
    if where is not None:
        raise Refused(f"{where[1]}: refused: an #include reads {where[0]}, which lies outside "
                      "the source's folder and the given include directories")


# No shader takes this long to preprocess; macros that double at every level would go on
# for ever. fastgemm.emu lowers it with its compile limit.
PREPROCESS_TIME_LIMIT_S = 600.0


def run_bounded(cmd: List[str], limit_s: float, *, input: Optional[str] = None, cwd=None, env=None,
                merge_stderr: bool = False) -> subprocess.CompletedProcess:
    """Runs a compiler command in a process group of its own, so that past `limit_s`
    seconds, or on Ctrl-C, every process it started is killed (cc1plus, not only the
    driver); subprocess.TimeoutExpired (or KeyboardInterrupt) then propagates."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else None,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                            text=True, cwd=cwd, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(input, timeout=limit_s)
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _run_preprocessor(cmd: List[str], src: str, base: Path) -> subprocess.CompletedProcess:
    try:
        return run_bounded(cmd, PREPROCESS_TIME_LIMIT_S, input=src, cwd=str(base))
    except subprocess.TimeoutExpired:
        raise ScanError(f"preprocessing took longer than {PREPROCESS_TIME_LIMIT_S:g} s and was "
                        "stopped (macros that expand without end?)") from None


def preprocess(src: str, display: str, base: Path, include_dirs: Sequence[Path] = (),
               cxx: Optional[List[str]] = None, defines: Sequence[str] = (),
               confine: bool = False) -> str:
    """The source after the C preprocessor, with stub Metal headers (keywords survive).
    confine: refuse any file the preprocessor read outside the source's folder, the include
    directories and the emulator's headers (check_preprocessed_files)."""
    cxx = cxx or shlex.split(os.environ.get("CXX", "c++"))
    with tempfile.TemporaryDirectory(prefix="fgemu-scan-") as stub_dir:
        for name in shim_headers():
            p = Path(stub_dir) / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("#pragma once\n")
        dep = Path(stub_dir) / "deps.d"
        cmd = cxx + ["-E", "-x", "c++", "-std=c++20", "-nostdinc", "-w",
                     "-include", str(SHIM_DIR / "fgemu" / "predefined.hpp"),
                     "-iquote", str(base), "-I", stub_dir]
        for d in include_dirs:
            cmd += ["-I", str(d)]
        if confine:
            cmd += ["-MD", "-MF", str(dep)]
        cmd += [f"-D{d}" for d in defines] + ["-"]
        proc = _run_preprocessor(cmd, src, base)
        if confine:
            # Before anything else, errors included: a message could quote the file.
            roots = [os.path.realpath(p) for p in [base, stub_dir, SHIM_DIR, *include_dirs]]
            dep_text = dep.read_text(errors="replace") if dep.is_file() else None
            check_preprocessed_files(proc.stdout, dep_text, display, roots, str(base))
    if proc.returncode != 0:
        missing = re.search(r"^(.*?):(\d+):\d+: fatal error: ([^:]+): No such file or directory",
                            proc.stderr, re.M)
        if missing:
            name = missing.group(3).strip()
            where = missing.group(1).replace("<stdin>", display)
            if name.startswith("metal_") or ("/" in name and name.split("/")[0][:1].isupper()):
                why = "a Metal header metal-emu does not provide"
            else:
                why = "not a Metal header; shaders are compiled without host headers unless trusted"
            raise Refused(f"{where}:{missing.group(2)}: unsupported: #include <{name}> ({why})")
        errs = [l for l in proc.stderr.splitlines() if "error" in l][:3]
        msg = "\n".join(e.replace("<stdin>", display) for e in errs) or proc.stderr.strip()
        raise ScanError(f"preprocessing failed:\n{msg}")
    # Line markers name files as string literals. The stubs' temporary folder is renamed to
    # the shim folder, whose headers the compile pass includes under the same names: the
    # text then depends only on the inputs (the module cache is keyed by it) and its line
    # markers name files that exist.
    out = proc.stdout.replace('"' + _marker_path(stub_dir) + "/", '"' + _marker_path(str(SHIM_DIR)) + "/")
    return out.replace('"<stdin>"', '"' + _marker_path(display) + '"')


_LINE_MARKER = re.compile(r'# \d+ "(?:[^"\\]|\\.)*"(?: \d)*$')
_SPLICE = re.compile(r"\\[ \t]*\n")


def check_directives(text: str, display: str) -> None:
    """Refuses a directive in preprocessed text other than the preprocessor's own line
    markers and pragmas. The text is compiled, and so preprocessed, once more: a line that
    macro expansion made look like a directive (`#define H #` then `H define ...` gives
    ` # define ...`) would become one there, out of sight of every earlier check. A line
    counts as a directive once backslash-newlines are spliced, when it starts with `#`,
    the `%:` digraph, `??=` or a comment."""
    for m in re.finditer(r"^[^\n]*(?:\\[ \t]*\n[^\n]*)*", text, re.M):
        logical = _SPLICE.sub("", m.group(0))
        head = logical.lstrip(" \t\f\v")
        if not head.startswith(("#", "%:", "??=", "/*", "//")):
            continue
        if logical.startswith("#pragma ") or _LINE_MARKER.match(logical):
            continue
        where = LineMap(text).where(m.start()).replace("<stdin>", display)
        d = re.match(r"(#|%:|\?\?=)[ \t]*(\w*)", head)
        what = f"`#{d.group(2)}`" if d else "a comment"
        raise Refused(f"{where}: refused: a preprocessing directive ({what}) made by macro "
                      "expansion; the emulator compiles the expanded source once more, where "
                      "it would take effect")


def _marker_path(path: str) -> str:
    """A file name as the preprocessor writes it inside a line marker's quotes."""
    return path.replace("\\", "\\\\").replace('"', '\\"')


class LineMap:
    """Maps offsets in preprocessed text back to the original file and line."""

    def __init__(self, pp: str):
        self.starts = []  # (offset, file, line) at each line marker
        off = 0
        for line in pp.split("\n"):
            m = re.match(r'#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"', line)
            if m:
                self.starts.append((off + len(line) + 1, m.group(2), int(m.group(1))))
            off += len(line) + 1
        self.pp = pp

    def where(self, pos: int) -> str:
        best = None
        for s in self.starts:
            if s[0] <= pos:
                best = s
            else:
                break
        if best is None:
            return f"?:{self.pp.count(chr(10), 0, pos) + 1}"
        return f"{best[1]}:{best[2] + self.pp.count(chr(10), best[0], pos)}"


# ---- scope tracking ---------------------------------------------------------------------------

@dataclass
class Brace:
    open: int
    close: int
    kind: str        # namespace | class | function | other
    name: str = ""


def brace_tree(m: str) -> List[Brace]:
    """Every {...} of the masked text with a guess at what it opens."""
    out, stack = [], []
    for i, c in enumerate(m):
        if c == "{":
            j = prev_nonspace(m, i)
            head = m[max(0, j - 300):j + 1]
            kind, name = "other", ""
            nm = re.search(r"\bnamespace\s*([A-Za-z_][\w:]*)?\s*$", head)
            cm = re.search(r"\b(struct|class|union)\s+(?:alignas\s*\([^)]*\)\s*)?([A-Za-z_]\w*)?"
                           r"[^;{}()]*$", head)
            if nm:
                kind, name = "namespace", nm.group(1) or ""
            elif re.search(r"\benum\b[^;{}]*$", head):
                kind = "other"
            elif cm and not re.search(r"[=(]\s*$", head):
                kind, name = "class", cm.group(2) or ""
            elif re.search(r"\)\s*(?:const|volatile|noexcept|override|final|mutable|&|&&|"
                           r"device|constant|thread|threadgroup|\s)*(?:->[^{;]*)?$", head) and \
                    not re.search(r"\b(if|for|while|switch|catch)\s*\([^;{}]*\)\s*$", head):
                kind = "function"
            b = Brace(i, -1, kind, name)
            stack.append(b)
            out.append(b)
        elif c == "}" and stack:
            stack.pop().close = i
    return out


def enclosing(braces: List[Brace], pos: int) -> List[Brace]:
    return [b for b in braces if b.open < pos and (b.close < 0 or pos < b.close)]


def namespace_path(braces: List[Brace], pos: int) -> Optional[str]:
    """'a::b' for a position inside namespaces a, b; None inside a class or function."""
    names = []
    for b in enclosing(braces, pos):
        if b.kind != "namespace":
            return None
        if b.name:
            names.append(b.name)
    return "::".join(names)


# ---- kernels ---------------------------------------------------------------------------------

def find_attributes(m: str):
    """(start, end, inner text) of every [[...]] in the masked source."""
    out = []
    i = 0
    while True:
        i = m.find("[[", i)
        if i < 0:
            return out
        j = i + 2
        depth = 0
        while j < len(m) - 1:
            if m[j] == "[":
                depth += 1
            elif m[j] == "]":
                if depth == 0 and m[j + 1] == "]":
                    break
                depth -= 1
            j += 1
        else:
            raise ScanError("unterminated [[ attribute")
        out.append((i, j + 2, m[i + 2:j].strip()))
        i = j + 2


def attr_items(inner: str):
    """[[a, b(1), c]] -> [('a', None), ('b', '1'), ('c', None)]."""
    items = []
    for part in split_top(inner):
        m = re.match(r"\s*([A-Za-z_][\w:]*)\s*(?:\((.*)\))?\s*$", part, re.S)
        if m:
            items.append((m.group(1), m.group(2)))
    return items


def classify(attrs, text):
    for inner in attrs:
        for name, arg in attr_items(inner):
            if name == "buffer":
                return ("buffer", int(arg.strip(), 0))
            if name == "threadgroup":
                return ("threadgroup_mem", int(arg.strip(), 0))
            if name == "texture":
                return ("texture", int_constant(arg))
            if name == "sampler":
                return ("sampler", int_constant(arg))
            if name in POSITION_ATTRS:
                return ("attribute", "threads_per_grid" if name == "grid_size" else name)
            if name in UNSUPPORTED_ATTRS:
                return ("unsupported", f"{UNSUPPORTED_ATTRS[name]} ({' '.join(text.split())})")
    return None


_RESOURCE_TYPE = re.compile(r"\b(imageblock|acceleration_structure|raytracing::\w+|"
                            r"intersection_function_table|visible_function_table|"
                            r"indirect_command_buffer|render_pipeline_state)\b")
_TEXTURE_TYPE = re.compile(r"\b(texture(1d|2d|3d|cube|_buffer)\w*|depth(2d|cube)\w*)\s*<")


def parse_params(m: str, open_paren: int):
    close = match_close(m, open_paren, "(", ")")
    body = m[open_paren + 1:close]
    params = []
    for part in split_template_args(body):  # texture2d<float, access::read> is one parameter
        attrs = [a for (_, _, a) in find_attributes(part)]
        plain = re.sub(r"\[\[.*?\]\]", " ", part, flags=re.S)
        params.append(Param(text=" ".join(plain.split()), attrs=attrs))
    # Explicit indices first; unannotated buffer-like arguments take the lowest free index
    # in declaration order (MSL's "first available location").
    used = {"buffer": set(), "texture": set(), "sampler": set()}
    for p in params:
        r = classify(p.attrs, p.text)
        if r is not None:
            p.role = r
            if r[0] in used:
                used[r[0]].add(r[1])
    def first_free(kind):
        n = 0
        while n in used[kind]:
            n += 1
        used[kind].add(n)
        return n
    nxt = 0
    for p in params:
        if p.role != ("buffer", -1):
            continue
        if _TEXTURE_TYPE.search(p.text) and "*" not in p.text:
            p.role = ("texture", first_free("texture"))
            continue
        if re.search(r"\bsampler\b", p.text) and "*" not in p.text:
            p.role = ("sampler", first_free("sampler"))
            continue
        rm = _RESOURCE_TYPE.search(p.text)
        if rm:
            p.role = ("unsupported", f"{rm.group(1)} argument ({p.text})")
            continue
        if re.match(r"(const\s+)?threadgroup\b", p.text):
            p.role = ("threadgroup_auto", len(params))
            continue
        p.role = ("buffer", first_free("buffer"))
    return params, close


def template_head_before(m: str, pos: int) -> Optional[int]:
    """Start of `template <...>` that ends right before pos (whitespace between), or None."""
    j = prev_nonspace(m, pos)
    if j < 0 or m[j] != ">":
        return None
    depth = 0
    k = j
    while k >= 0:
        c = m[k]
        if c == ")":
            depth_p = 0
            while k >= 0:
                if m[k] == ")":
                    depth_p += 1
                elif m[k] == "(":
                    depth_p -= 1
                    if depth_p == 0:
                        break
                k -= 1
        elif c == ">":
            depth += 1
        elif c == "<":
            depth -= 1
            if depth == 0:
                t = prev_nonspace(m, k)
                if t >= 7 and m[t - 7:t + 1] == "template":
                    return t - 7
                return None
        elif c in ";{}":
            return None
        k -= 1
    return None


def scan(pp: str, lines: LineMap) -> Scan:
    m = blank_directives(mask(pp))
    attrs = find_attributes(m)
    m_noattr = list(m)
    for (a, b, _) in attrs:
        for k in range(a, b):
            if m_noattr[k] != "\n":
                m_noattr[k] = " "
    m_noattr = "".join(m_noattr)
    braces = brace_tree(m_noattr)
    res = Scan()

    def qualify(pos: int, name: str) -> str:
        ns = namespace_path(braces, pos)
        if ns is None:
            raise ScanError(f"{lines.where(pos)}: kernel {name} is not at namespace scope")
        return f"{ns}::{name}" if ns else name

    # --- kernel definitions: `kernel void f(` or `[[kernel, ...]] void f(` -----------------
    starts = []
    for km in re.finditer(r"\bkernel\b", m_noattr):
        starts.append((km.start(), km.end()))
    for (a, b, inner) in attrs:
        if any(n == "kernel" for n, _ in attr_items(inner)):
            starts.append((a, b))
    template_kernels = {}  # short name -> (params, where)
    seen = set()
    for (s0, s1) in sorted(starts):
        fm = re.compile(r"\s*(?:\[\[.*?\]\]\s*)*void\s+([A-Za-z_]\w*)\s*\(", re.S).match(m, s1)
        if not fm:
            fm2 = re.compile(r"\s*void\s+([A-Za-z_]\w*)\s*\(").match(m_noattr, s1)
            if not fm2:
                continue
            fm = fm2
        name = fm.group(1)
        open_paren = fm.end() - 1
        if open_paren in seen:
            continue
        seen.add(open_paren)
        # an explicit instantiation `template [[host_name]] [[kernel]] void f<T>(...)`
        before = prev_nonspace(m_noattr, s0)
        if before >= 7 and m_noattr[before - 7:before + 1] == "template":
            continue
        params, close = parse_params(m, open_paren)
        after = next_nonspace(m_noattr, close + 1)
        if after >= len(m_noattr) or m_noattr[after] != "{":
            continue  # a declaration, not the definition
        if template_head_before(m_noattr, s0) is not None:
            template_kernels[name] = (params, lines.where(s0))
            continue
        host = name
        # [[host_name("x")]] on a plain kernel: attributes adjacent to its declaration
        for (a, b, inner) in attrs:
            if b <= open_paren and not m_noattr[b:s0].strip() if b <= s0 else \
                    (s0 <= a and not m_noattr[s0:a].replace("kernel", "").replace("void", "").strip()):
                for n, arg in attr_items(inner):
                    if n == "host_name" and arg:
                        host = c_string_value(pp[a:b])
        res.kernels.append(Kernel(host, qualify(s0, name), params, lines.where(s0)))

    # --- [[host_name("x")]] explicit instantiations of template kernels --------------------
    for tm in re.finditer(r"\btemplate\b", m_noattr):
        j = next_nonspace(m, tm.end())
        if not m.startswith("[[", j):
            continue
        end = m.find(";", j)
        if end < 0:
            continue
        host = None
        for (a, b, inner) in attrs:
            if j <= a < end:
                for n, arg in attr_items(inner):
                    if n == "host_name" and arg is not None:
                        host = c_string_value(pp[a:b])
        if host is None:
            continue
        span = m_noattr[j:end]
        best = None
        for nm in re.finditer(r"\b([A-Za-z_]\w*)\s*<", span):
            if nm.group(1) in template_kernels:
                best = nm
        dm = re.search(r"\bvoid\s+([A-Za-z_]\w*)\s*\(", span)
        if best is None and dm and dm.group(1) in template_kernels:
            # `template [[host_name("x")]] [[kernel]] void f(const device float* a, ...);`:
            # the specialisation is the one whose signature this is.
            lp = j + dm.end() - 1
            rp = match_close(m, lp, "(", ")")
            sig = re.sub(r"\[\[.*?\]\]", " ", pp[lp + 1:rp], flags=re.S)
            name = dm.group(1)
            params, where = template_kernels[name]
            k = Kernel(host, f"{qualify(tm.start(), name)}", params, lines.where(tm.start()))
            k.signature = " ".join(sig.split())
            res.kernels.append(k)
            continue
        if best is None:
            raise ScanError(f"{lines.where(tm.start())}: host_name(\"{host}\") does not "
                            "instantiate a template kernel defined in this source")
        lt = j + best.end() - 1
        gt = match_close_angle(m_noattr, lt)
        targs = " ".join(pp[lt + 1:gt].split())
        name = best.group(1)
        params, where = template_kernels[name]
        res.kernels.append(Kernel(host, f"{qualify(tm.start(), name)}<{targs}>", params,
                                  lines.where(tm.start())))

    # Argument buffers: structs with [[id(n)]] members. The host encodes them member by
    # member (fastgemm.emu.ArgumentBuffer); the glue exports one encoder per struct.
    members = {}  # struct brace -> [(member, id)]
    for (a, _, inner) in attrs:
        ids = [arg for n, arg in attr_items(inner) if n == "id" and arg is not None]
        if not ids:
            continue
        owners = [b for b in enclosing(braces, a) if b.kind == "class"]
        if owners and owners[-1].name:
            # the member is the last name declared before the attribute (`float* p[4] [[id(0)]]`
            # or `float* p [[id(0)]] [4]`)
            decl = re.sub(r"(\s*\[[^\[\]]*\])+\s*$", "", m_noattr[statement_start(m_noattr, a):a])
            name = re.findall(r"[A-Za-z_]\w*", decl)
            if name:
                members.setdefault(id(owners[-1]), (owners[-1], []))[1].append(
                    (name[-1], int_constant(ids[0])))
    arg_structs = {}
    for b, mem in members.values():
        problem = ""
        ns = namespace_path(braces, b.open - 1)
        head = m_noattr[statement_start(m_noattr, b.open):b.open]
        if re.match(r"\s*template\b", head):
            problem = "template struct"
        elif ns is None:
            problem = "struct not at namespace scope"
        qual = f"{ns}::{b.name}" if ns else b.name
        arg_structs[b.name] = ArgStruct(qual, mem, lines.where(b.open), problem)
    res.arg_structs = sorted(arg_structs.values(), key=lambda a: a.qualified)
    for k in res.kernels:
        for p in k.params:
            if p.role[0] == "unsupported":
                k.unsupported = p.role[1]
                break
            hit = [a for n, a in arg_structs.items() if re.search(r"\b" + re.escape(n) + r"\b", p.text)]
            if not hit:
                continue
            a = hit[0]
            if a.problem or p.role[0] != "buffer" or not re.search(r"[*&]", p.text):
                why = a.problem or "not bound as a device or constant buffer"
                k.unsupported = f"argument buffer of a {why} ({p.text})"
                break
            p.argbuf = a

    res.rewritten = rewrite(pp, m, m_noattr, attrs, braces, lines, res)
    return res


def statement_start(m: str, pos: int) -> int:
    """Where the declaration or statement that reaches pos begins (after the last ; { or })."""
    return max(m.rfind(c, 0, pos) for c in ";{}") + 1


def match_close_angle(s: str, i: int) -> int:
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c == "(":
            j = match_close(s, j, "(", ")")
        elif c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ScanError("unbalanced '<'")


# ---- rewriting -------------------------------------------------------------------------------

def declarators(decl: str):
    """Names declared by 'T a[4], b[2]' (pointer/reference declarators give None)."""
    names = []
    before_init = decl.split("=")[0]
    parts = split_template_args(before_init) if "<" in before_init else split_top(decl)
    for part in parts:
        head = re.split(r"[\[=({]", part, maxsplit=1)[0]
        if "*" in head or "&" in head:
            names.append(None)
            continue
        ids = re.findall(r"[A-Za-z_]\w*", head)
        names.append(ids[-1] if ids else None)
    return names


def paren_depths(s: str):
    depth = [0] * (len(s) + 1)
    p = 0
    for i, c in enumerate(s):
        depth[i] = p
        if c in "([":
            p += 1
        elif c in ")]":
            p -= 1
    depth[len(s)] = p
    return depth


def signature_key(head: str) -> str:
    """A declaration as the emulator compiles it: `constant` is const, the other address
    spaces are nothing, a repeated const counts once."""
    aspace = "|".join(ADDRESS_SPACES)
    # address spaces qualifying a member function are erased as the rewrite erases them
    t = re.sub(r"\)((?:\s*\b(?:const|volatile|" + aspace + r")\b)+)(?=\s*(?:\{|;|=|:|->|noexcept|$))",
               lambda q: ")" + re.sub(r"\b(" + aspace + r")\b", " ", q.group(1)), head)
    t = re.sub(r"\bconstant\b", "const", t)
    t = re.sub(r"\b(" + "|".join(a for a in ADDRESS_SPACES if a != "constant") + r")\b", " ", t)
    t = re.sub(r"\bconst(\s+const\b)+", "const", t)
    return " ".join(re.sub(r"\s*([(),*&<>:=])\s*", r"\1", t).split())


def defaulted_duplicates(m: str, braces: List[Brace]) -> List[Tuple[int, int]]:
    """`S() thread = default; S() device = default;`: the same declaration once address
    spaces are erased; the later ones are dropped."""
    spans, seen = [], set()
    pat = re.compile(r"[^;{}]*\)[^;{}()]*=\s*(?:default|delete)\s*;")
    for b in braces:
        if b.kind != "class" or b.close < 0:
            continue
        body = m[b.open + 1:b.close]
        ctor = re.compile(r"(?<![\w~])" + re.escape(b.name) + r"\s*(?:<[^;{}()]*>)?\s*\(") if b.name else None
        only_defaulted = ctor is not None and all(
            re.match(r"\s*\)[^;{}()]*=\s*default\s*;", body[c.end():]) for c in ctor.finditer(body))
        for dm in pat.finditer(m, b.open + 1, b.close):
            inner = [x for x in braces if b.open < x.open < dm.start() and x.close > dm.start()]
            if inner:
                continue
            # C++20 makes a class with a user-declared constructor a non-aggregate; Metal (C++17)
            # does not: `S() = default;` is dropped where it is the only constructor.
            if only_defaulted and ctor.search(dm.group(0)) and "default" in dm.group(0):
                spans.append((dm.start(), dm.end()))
                continue
            key = (b.open, signature_key(dm.group(0)))
            if key in seen:
                spans.append((dm.start(), dm.end()))
            else:
                seen.add(key)
    return spans


def class_duplicates(m: str, braces: List[Brace]) -> List[Tuple[int, int]]:
    """`template <class T> struct P<device T*> {...}; ... struct P<thread T*> {...};`: the
    same partial specialisation once address spaces are erased; the later ones are dropped."""
    spans, seen = [], set()
    aspace = re.compile(r"\b(" + "|".join(ADDRESS_SPACES) + r")\b")
    for b in braces:
        if b.kind != "class" or b.close < 0:
            continue
        parent = [p for p in enclosing(braces, b.open) if p is not b]
        if parent and parent[-1].kind != "namespace":
            continue
        hm = re.search(r"template\s*<[^{};]*>\s*(?:struct|class|union)\s+\w+\s*<[^{};]*>\s*$",
                       m[max(0, b.open - 400):b.open])
        if not hm or not aspace.search(hm.group(0)):
            continue
        start = max(0, b.open - 400) + hm.start()
        key = (parent[-1].open if parent else -1,
               " ".join(re.sub(r"\s*([(),*&<>:])\s*", r"\1", aspace.sub(" ", hm.group(0))).split()))
        end = b.close + 1
        semi = re.match(r"\s*;", m[end:])
        if semi:
            end += semi.end()
        if key in seen:
            spans.append((start, end))
        else:
            seen.add(key)
    return spans


def overload_duplicates(m: str, braces: List[Brace]) -> List[Tuple[int, int]]:
    """Spans of function definitions that repeat an earlier one of the same scope once
    address spaces are erased (MSL overloads on address space; the emulator has one)."""
    spans = []
    seen = set()
    by_open = {b.open: b for b in braces}
    for b in braces:
        if b.kind != "function" or b.close < 0:
            continue
        parent = [p for p in enclosing(braces, b.open) if p is not b]
        if parent and parent[-1].kind not in ("namespace", "class"):
            continue
        scope = parent[-1].open if parent else -1
        # the declaration starts after the previous ; { } at this level (or an access label)
        k = b.open - 1
        while k >= 0 and m[k] not in ";{}":
            if m[k] == ")":
                depth = 0
                while k >= 0:
                    if m[k] == ")":
                        depth += 1
                    elif m[k] == "(":
                        depth -= 1
                        if depth == 0:
                            break
                    k -= 1
            k -= 1
        start = k + 1
        head = m[start:b.open]
        head = re.sub(r"^\s*(public|private|protected)\s*:", "", head)
        key = (scope, signature_key(head))
        if "(" not in head:
            continue
        if key in seen:
            spans.append((start, b.close + 1))
        else:
            seen.add(key)
    return spans


_SWIZZLE = re.compile(r"(\.|->)(\s*)([xyzw]{2,4}|[rgba]{2,4})\b(?!\s*\()")
_SWIZZLE_INDEX = {"x": 0, "y": 1, "z": 2, "w": 3, "r": 0, "g": 1, "b": 2, "a": 3}
# A floating literal without suffix is a float in MSL (there is no double).
_FLOAT_LITERAL = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w.])")
# Half literals: MSL's `1.5h`, and the `F16` suffix of _Float16 (Metal's half), which the
# compiler's own limit macros (__FLT16_MAX__, __FLT16_EPSILON__, ...) expand to and which g++
# rejects in C++. Both become half(<float literal>): exact, since a half value is a float.
_HALF_LITERAL = re.compile(
    r"(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+)(?:[hH]|[fF]16)\b")


def half_literal(hm: "re.Match") -> str:
    """The half(...) expression for a half literal matched by _HALF_LITERAL."""
    num = hm.group(1)
    if not re.search(r"[.eEpP]", num):
        num += ".0"  # `2h`: 2f would not be a C++ literal
    return f"half({num}f)"


_DECL_ATTRIBUTE = re.compile(r"\b(?:__attribute__\s*\(\(|alignas\s*\()")


def blank_decl_attributes(decl: str) -> str:
    """`__attribute__((...))` and `alignas(...)` in a declaration replaced by spaces (the
    length kept), so that the names it declares can be read: in
    `threadgroup __attribute__((aligned(16))) float buf[16];` the name is buf."""
    out = decl
    for am in _DECL_ATTRIBUTE.finditer(decl):
        open_paren = decl.index("(", am.start())
        try:
            close = match_close(decl, open_paren, "(", ")")
        except ScanError:
            continue
        out = out[:am.start()] + blank(decl[am.start():close + 1]) + out[close + 1:]
    return out


def rewrite(pp, m, m_noattr, attrs, braces, lines, res: Scan) -> str:
    edits = []  # (start, end, replacement)
    fc_at = {}
    for (a, b, inner) in attrs:
        edits.append((a, b, blank(pp[a:b])))
        for n, arg in attr_items(inner):
            if n == "function_constant" and arg is not None:
                fc_at[a] = arg.strip()
    depth = paren_depths(m_noattr)
    fc_names = {}
    derived = 0
    cst_at = set()  # program-scope `constant` keywords already rewritten
    # Function constants whose declaration has more specifiers than `constant`
    # (`static constant constexpr const bool x [[function_constant(0)]];`): mutable statics.
    fc_done = set()
    for a, arg in fc_at.items():
        st = a
        while st > 0 and m_noattr[st - 1] not in ";{}":
            st -= 1
        head = m_noattr[st:a]
        if depth[a] != 0 or not re.search(r"\bconstant\b", head) or \
                not re.search(r"\b(static|constexpr|const)\b", head):
            continue
        names = declarators(head[re.search(r"\bconstant\b", head).end():])
        ns = namespace_path(braces, a)
        if not names or not names[-1] or ns is None:
            continue
        for wm in re.finditer(r"\b(static|constexpr|const|constant)\b", head):
            edits.append((st + wm.start(), st + wm.end(), " " * len(wm.group(1))))
        edits.append((st, st, "_FG_FC__ "))
        res.function_constants.append(FunctionConstant(int_constant(arg), f"{ns}::{names[-1]}" if ns else names[-1]))
        fc_names[names[-1]] = True
        fc_done.add(st + re.search(r"\bconstant\b", head).start())
    def storage_edit(s0: int, s1: int, rep: str):
        """The address-space keyword at s0..s1 replaced by storage specifiers `rep`. An
        `alignas(n)` right after the keyword (`threadgroup alignas(16) float t[4];`) moves
        before them: C++ accepts it only at the start of the declaration."""
        am = re.match(r"\s*alignas\s*\(", m_noattr[s1:])
        if not am:
            return (s0, s1, rep)
        close = match_close(m_noattr, s1 + am.end() - 1, "(", ")")
        moved = pp[s1:close + 1]
        return (s0, close + 1, " ".join(moved.split()) + " " + rep + "\n" * moved.count("\n"))

    for km in re.finditer(r"\b(threadgroup|constant)\b", m_noattr):
        word, s0 = km.group(1), km.start()
        if s0 in fc_done:
            cst_at.add(s0)
            continue
        pj = prev_nonspace(m_noattr, s0)
        if depth[s0] != 0 or (pj >= 0 and m_noattr[pj] not in "{};:"):
            continue
        end = m_noattr.find(";", s0)
        if end < 0:
            continue
        decl = blank_decl_attributes(m_noattr[km.end():end])
        if "(" in decl.split("=")[0] and word == "constant" and "[" not in decl.split("=")[0]:
            continue  # a function returning a constant-space value
        names = declarators(decl)
        if not names or all(n is None for n in names):
            continue  # pointers/references to that address space: ordinary variables
        inside = enclosing(braces, s0)
        if word == "threadgroup":
            if not inside or inside[-1].kind in ("namespace", "class"):
                continue
            edits.append(storage_edit(s0, km.end(), "_FG_TG_VAR_"))
            poison = "".join(f" ::fgemu::tg_var(&{n}, sizeof({n}));" for n in names if n)
            edits.append((end + 1, end + 1, poison))
            continue
        if inside and inside[-1].kind == "class":
            continue
        fcs = [arg for (a, arg) in fc_at.items() if s0 < a < end]
        ns = namespace_path(braces, s0)
        qual = (lambda n: f"{ns}::{n}" if ns else n)
        if fcs:
            try:
                index = int_constant(fcs[0])
            except ValueError:
                raise ScanError(f"{lines.where(s0)}: unsupported: function_constant index "
                                f"'{fcs[0]}' (only integer literals)") from None
            edits.append((s0, km.end(), "_FG_FC__"))
            if ns is None:
                raise ScanError(f"{lines.where(s0)}: function constant outside namespace scope")
            res.function_constants.append(FunctionConstant(index, qual(names[0])))
            fc_names[names[0]] = True
            continue
        if re.search(r"[A-Za-z_>]\s*::\s*[A-Za-z_]\w*\s*(\[|=|$)", decl.split("=")[0].strip()):
            # `constant constexpr const float C<6>::table[8];`: a static member's definition
            edits.append((s0, km.end(), " " * len("constant")))
            cst_at.add(s0)
            continue
        if re.search(r"\bconst(expr)?\b", decl.split("=")[0]) or \
                (pj >= 0 and re.search(r"\bconstexpr\s*$", m_noattr[:s0])):
            # `constant constexpr const int x = 0;`: static, and const as written
            edits.append(storage_edit(s0, km.end(), "static  "))
            cst_at.add(s0)
            continue
        eq = decl.find("=")
        init_ids = set(re.findall(r"[A-Za-z_]\w*", decl[eq + 1:])) if eq >= 0 else set()
        if ns is not None and eq >= 0 and init_ids & set(fc_names) and len(names) == 1 \
                and "[" not in decl[:eq]:
            # Depends on a function constant: re-evaluated at every dispatch.
            fn = f"_fg_fcd_{derived}"
            derived += 1
            expr = pp[km.end() + eq + 1:end]
            edits.append(storage_edit(s0, km.end(), "_FG_FCD_"))
            edits.append((km.end() + eq, end, blank(pp[km.end() + eq:end])))
            edits.append((end + 1, end + 1,
                          f" inline void {fn}() {{ {names[0]} = decltype({names[0]})({' '.join(expr.split())}); }}"))
            res.derived_constants.append(qual(fn))
            fc_names[names[0]] = True  # constants computed from this one are derived too
        else:
            edits.append(storage_edit(s0, km.end(), "_FG_CST_"))
        cst_at.add(s0)
    # `const constant T&` would read `const const`; member functions qualified by an address
    # space (`T& operator[](size_t) const constant`) keep only const.
    spec = r"(?:\s+(?:static|constexpr|inline|volatile|thread_local|device|thread|threadgroup))*"
    for cm in re.finditer(r"\bconst" + spec + r"\s+(constant)\b|\b(constant)" + spec + r"\s+const\b",
                          m_noattr):
        g = 1 if cm.group(1) else 2
        if cm.start(g) not in cst_at:
            edits.append((cm.start(g), cm.end(g), " " * len("constant")))
    aspace = "|".join(ADDRESS_SPACES)
    for qm in re.finditer(r"\)((?:\s*\b(?:const|volatile|" + aspace + r")\b)+)(?=\s*(?:\{|;|=|:|->|noexcept))",
                          m_noattr):
        for wm in re.finditer(r"\b(" + aspace + r")\b", qm.group(1)):
            a = qm.start(1) + wm.start(1)
            edits.append((a, a + len(wm.group(1)), " " * len(wm.group(1))))
    # GNU range designators covering a whole array, `float s[Q] = { [0 ... Q-1] = v };`
    # (a Clang extension Metal accepts, not in g++'s C++): the array is filled after it is
    # declared.
    for gm in re.finditer(r"([A-Za-z_]\w*)((?:\s*\[[^\]\[]*\])+)\s*=\s*\{\s*\[\s*0\s*\.\.\.[^\]]*\]\s*=\s*"
                          r"([^{};]+?)\s*\}\s*;", m_noattr):
        value = _HALF_LITERAL.sub(half_literal, pp[gm.start(3):gm.end(3)])
        eq = m_noattr.index("=", gm.end(2))
        edits.append((eq, gm.end(), f"; ::fgemu::fill_all({gm.group(1)}, {value});" +
                      "\n" * pp.count("\n", eq, gm.end())))
    for (a, b) in (overload_duplicates(m_noattr, braces) + defaulted_duplicates(m_noattr, braces) +
                   class_duplicates(m_noattr, braces)):
        edits.append((a, b, blank(pp[a:b])))
    for hm in _HALF_LITERAL.finditer(m_noattr):
        edits.append((hm.start(), hm.end(), half_literal(hm)))
    for fm in _FLOAT_LITERAL.finditer(m_noattr):
        edits.append((fm.end(), fm.end(), "f"))
    # Multi-component swizzles, unless the name is also declared (a struct field).
    declared = set()
    for im in re.finditer(r"(\.|->)?\s*\b([xyzw]{2,4}|[rgba]{2,4})\b", m_noattr):
        if not im.group(1):
            declared.add(im.group(2))
    for sm in _SWIZZLE.finditer(m_noattr):
        name = sm.group(3)
        if name in declared:
            continue
        idx = ", ".join(str(_SWIZZLE_INDEX[c]) for c in name)
        after = m_noattr[sm.end(3):sm.end(3) + 4].lstrip()
        assigned = re.match(r"(=(?!=)|[-+*/%&|^]=|<<=|>>=|\+\+|--)", after) is not None
        fn = "fg_swr" if assigned else "fg_sw"
        edits.append((sm.start(3), sm.end(3), f"template {fn}<{idx}>()"))
    # Overlapping edits: a blanked duplicate swallows the edits inside it.
    edits.sort(key=lambda e: (e[0], -(e[1] - e[0])))
    kept, last_start, last_end = [], -1, -1
    for e in edits:
        if e[0] < last_end and e[1] <= last_end and e[1] > e[0]:
            continue  # inside a span already replaced
        if e[0] == e[1] and last_start < e[0] <= last_end:
            continue  # an insertion inside (or at the end of) a replaced span
        kept.append(e)
        if e[1] > e[0]:
            last_start, last_end = e[0], max(last_end, e[1])
    out = pp
    for (a, b, rep) in sorted(kept, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:a] + rep + out[b:]
    return hoist_member_specializations(out)


# ---- glue ------------------------------------------------------------------------------------

def int_constant(text: str) -> int:
    """The value of an integer constant expression of literals (`1200 + 0`, `(1 << 4)`)."""
    import ast
    import operator
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitAnd: operator.and_}
    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.BinOp) and type(n.op) in ops:
            return ops[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        raise ValueError(text)
    cleaned = re.sub(r"(?<=\d)[uUlL]+\b", "", text).replace("/", "//")
    cleaned = re.sub(r"\b0([0-7]+)\b", r"0o\1", cleaned)  # C octal
    try:
        return ev(ast.parse(cleaned.strip(), mode="eval").body)
    except SyntaxError:
        raise ValueError(text) from None


def cxx_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _explicit_template_args(head: str) -> bool:
    """Whether a function declaration head (`R f<int>(int x) const`) names explicit template
    arguments right before its parameter list."""
    close = head.rfind(")")
    if close < 0:
        return False
    open_paren = match_open_back(head, close, "(", ")")
    before = head[:open_paren].rstrip()
    if re.search(r"\boperator\s*(?:>|>>|>=|>>=|->)$", before):
        return False  # operator>(...) and friends
    return before.endswith(">")


def hoist_member_specializations(text: str) -> str:
    """Explicit specialisations of member function templates at class scope, which Clang and
    so Metal accept and GCC does not (`template <> R f(A a)` inside the class body).

    Inside a plain class they move after the class as `template <> R Class::f(...) {...}`
    (joined on one line, so later lines keep their numbers). Inside a class template they
    cannot move out (a member of a template is specialised only with the whole class), so
    `template <>` is dropped and the function stays where it is as a non-template overload:
    for any call whose arguments deduce the specialised types, overload resolution prefers a
    non-template function to a template specialisation with the same parameters, so it runs
    what Metal runs. Specialisations that name explicit template arguments (`f<int>(...)`)
    are left to the compiler, which names them."""
    m = blank_directives(mask(text))
    braces = brace_tree(m)
    moves = []  # (start, end, class close, text)
    drops = []  # (start, end) of `template <>` kept as a non-template overload
    for b in braces:
        if b.kind != "class" or not b.name or b.close < 0:
            continue
        before = m[max(0, b.open - 400):b.open]
        in_template = re.search(r"template\s*<[^{};]*>\s*(?:struct|class|union)\s+" +
                                re.escape(b.name) + r"\b[^{};]*$", before) is not None
        inner = [x for x in braces if b.open < x.open < b.close]
        for tm in re.finditer(r"\btemplate\s*<\s*>", m[b.open:b.close]):
            st = b.open + tm.start()
            if any(x.open < st < x.close for x in inner):
                continue  # nested deeper than the class body
            body = next((x for x in inner if x.open > st), None)
            if body is None or ";" in m[st:body.open]:
                continue
            head = text[st + (tm.end() - tm.start()):body.open]
            if in_template:
                mhead = m[st + (tm.end() - tm.start()):body.open]
                if "(" in mhead and not _explicit_template_args(mhead):
                    drops.append((st, b.open + tm.end()))
                continue
            op = re.search(r"\boperator\b", head)
            if op:
                at = op.start()
            else:
                paren = head.find("(")
                idm = list(re.finditer(r"[A-Za-z_]\w*", head[:paren]))
                if paren < 0 or not idm:
                    continue
                at = idm[-1].start()
            moved = "template <> " + head[:at] + b.name + "::" + head[at:] + text[body.open:body.close + 1]
            moves.append((st, body.close + 1, b.close, " ".join(moved.split())))
    if not moves and not drops:
        return text
    out = text
    # insert after each class's closing brace (and its `;`), then blank the originals
    ends = {}
    for st, en, close, mv in moves:
        semi = re.match(r"\s*;", m[close + 1:])
        ends.setdefault(close + 1 + (semi.end() if semi else 0), []).append(mv)
    ops = [(st, en, blank(text[st:en])) for st, en, _, _ in moves]
    ops += [(st, en, blank(text[st:en])) for st, en in drops]
    ops += [(pos, pos, " " + " ".join(mvs)) for pos, mvs in ends.items()]
    for a, b_, rep in sorted(ops, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:a] + rep + out[b_:]
    return out


def reopen_metal_outside(text: str, ns: str) -> str:
    """Top-level `namespace metal { ... }` blocks of a source wrapped in namespace `ns` extend
    the real ::metal: the wrapper is closed before each and reopened after it."""
    m = blank_directives(mask(text))
    edits = []
    depth = 0
    i = 0
    while i < len(m):
        c = m[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and m.startswith("namespace", i) and (i == 0 or not (m[i - 1].isalnum() or m[i - 1] == "_")):
            nm = re.match(r"namespace\s+metal\s*\{", m[i:])
            if nm:
                open_at = i + nm.end() - 1
                close_at = match_close(m, open_at, "{", "}")
                # the block sees the source's own names, as at Metal's global scope
                edits.append((i, f"}} {text[i:open_at + 1]} using namespace ::{ns};"))
                edits.append((close_at + 1, f" namespace {ns} {{"))
                i = close_at + 1
                continue
        i += 1
    out = text
    for pos, ins in sorted(edits, reverse=True):
        if ins.startswith("}"):
            brace = ins.index("{", 2)
            end = pos + brace - 1  # the original `namespace metal {` is replaced
            out = out[:pos] + ins + out[end:]
        else:
            out = out[:pos] + ins + out[pos:]
    return out


def glue(src: str, display: str, ident: str, base: Optional[Path] = None,
         include_dirs: Sequence[Path] = (), cxx: Optional[List[str]] = None,
         trusted: bool = False, defines: Sequence[str] = (), wrap: bool = True) -> str:
    """The glue C++ for one source. wrap: put the source in a namespace of its own, so that
    several shaders can link into one library (its top-level `namespace metal` blocks still
    extend ::metal); fastgemm.emu compiles each source as a module of its own, unwrapped, so
    that its names are at global scope as in Metal."""
    base = Path(base) if base is not None else Path.cwd()
    include_dirs = [Path(d) for d in include_dirs]
    host = check_includes(src, display, base, include_dirs, trusted)
    if not trusted:
        host = []
    pp = preprocess(strip_host_includes(src, host), display, base, include_dirs, cxx, defines,
                    confine=not trusted)
    lines = LineMap(pp)
    sc = scan(pp, lines)
    if not trusted:
        check_directives(sc.rewritten, display)
    gns = "fgemu_shader_" + re.sub(r"\W", "_", ident)
    ns = gns if wrap else ""
    if wrap:
        sc.rewritten = reopen_metal_outside(sc.rewritten, ns)
    o = [f"// Generated by msl_scan.py from {display}. Do not edit."]
    for d in defines:  # the compile pass sees the same definitions as the scan
        name, _, value = d.partition("=")
        o.append(f"#define {name} {value or 1}")
    o += [f"#include <{h}>" for h in host]
    o += ['#include "fgemu/glue.hpp"']
    o += [f"namespace {ns} {{", sc.rewritten, "", "}  // namespace"] if wrap else [sc.rewritten, ""]
    o += [f"namespace {gns}_glue {{"]
    q = (lambda n: f"::{ns}::{n}") if wrap else (lambda n: f"::{n}")
    if wrap:
        o.append(f"using namespace ::{ns};")
    # One encoder per argument-buffer struct (fgemu::ArgBufferParam::set).
    encoders = {}
    for j, a in enumerate(sc.arg_structs):
        if a.problem:
            continue
        t = q(a.qualified)
        o.append(f"void argbuf_{j}(void* obj, int id, void* ptr, size_t n, bool texture) {{")
        o.append(f"    auto& s = *static_cast<{t}*>(obj);")
        for (member, first) in a.members:
            mt = f"decltype({t}::{member})"
            o.append(f"    if (::fgemu::argbuf_holds<{mt}>({first}, id)) "
                     f"return ::fgemu::argbuf_set<{mt}>(s.{member}, {cxx_string(member)}, "
                     f"id - {first}, ptr, n, texture);")
        o.append(f"    ::fgemu::argbuf_no_member({cxx_string(a.qualified)}, id);")
        o.append("}")
        encoders[a.qualified] = (f"&argbuf_{j}", t)
    entries = []
    for i, k in enumerate(sc.kernels):
        roles = []
        for p in k.params:
            kind, idx = p.role
            if kind == "attribute":
                roles.append(f"{{::fgemu::ArgRole::attribute, int(::fgemu::Attr::{idx})}}")
            elif kind == "threadgroup_mem":
                roles.append(f"{{::fgemu::ArgRole::threadgroup_mem, {idx}}}")
            elif kind == "threadgroup_auto":
                roles.append(f"{{::fgemu::ArgRole::threadgroup_auto, {len(roles)}}}")
            elif kind == "buffer":
                roles.append(f"{{::fgemu::ArgRole::buffer, {idx}}}")
            elif kind in ("texture", "sampler"):
                roles.append(f"{{::fgemu::ArgRole::{kind}, {idx}}}")
            else:
                roles.append("{::fgemu::ArgRole::buffer, -1}")
        arr = "nullptr"
        if roles:
            o.append(f"constexpr ::fgemu::ArgRole roles_{i}[] = {{{', '.join(roles)}}};")
            arr = f"roles_{i}"
        if k.unsupported:
            o.append(f"void unsupported_{i}(const ::fgemu::ArgRole*) {{ "
                     f"::fgemu::unsupported({cxx_string(k.unsupported + ' at ' + k.where)}); }}")
            fn = f"&unsupported_{i}"
        else:
            target = (f"static_cast<void (*)({k.signature})>(&{q(k.callable)})" if k.signature
                      else f"&{q(k.callable)}")
            fn = f"&::fgemu::invoke<{target}>"
        abs_ = [p for p in k.params if p.argbuf is not None] if not k.unsupported else []
        abuf = "nullptr"
        if abs_:
            o.append(f"constexpr ::fgemu::ArgBufferParam argbufs_{i}[] = {{" + ", ".join(
                f"{{{p.role[1]}, {cxx_string(p.argbuf.qualified)}, "
                f"sizeof({encoders[p.argbuf.qualified][1]}), {encoders[p.argbuf.qualified][0]}}}"
                for p in abs_) + "};")
            abuf = f"argbufs_{i}"
        entries.append(f"    {{{cxx_string(k.name)}, {fn}, {arr}, {len(roles)}, "
                       f"{cxx_string(k.where)}, {abuf}, {len(abs_)}}},")
    o.append("constexpr ::fgemu::KernelEntry entries[] = {")
    o += entries or ["    {nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0},"]
    o.append("};")
    fcs = [f"    {{{fc.index}, {cxx_string(fc.name.split('::')[-1])}, &{q(fc.name)}, "
           f"sizeof({q(fc.name)}), ::fgemu::constant_kind<decltype({q(fc.name)})>()}},"
           for fc in sc.function_constants]
    o.append("const ::fgemu::FunctionConstant fcs[] = {")
    o += fcs or ["    {0, nullptr, nullptr, 0, '?'},"]
    o.append("};")
    o.append("void derived_constants() {")
    o += [f"    {q(d)}();" for d in sc.derived_constants]
    o.append("}")
    o.append(f"constexpr ::fgemu::Module module{{entries, {len(entries)}, fcs, {len(fcs)}, "
             "&derived_constants};")
    o.append("}  // namespace")
    o.append(f"FGEMU_MODULE(::{gns}_glue::module)")
    return "\n".join(o) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--name", help="identifier for the generated namespace")
    ap.add_argument("--display", help="file name used in line markers and messages")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[])
    ap.add_argument("--cxx", help="C++ compiler used as the preprocessor")
    a = ap.parse_args(argv)
    with open(a.source, encoding="utf-8") as f:
        src = f.read()
    ident = a.name or os.path.splitext(os.path.basename(a.source))[0]
    display = a.display or os.path.abspath(a.source)
    try:
        text = glue(src, display, ident, Path(a.source).resolve().parent,
                    [Path(d) for d in a.include_dirs], shlex.split(a.cxx) if a.cxx else None)
    except ScanError as e:
        print(f"{a.source}: error: {e}", file=sys.stderr)
        return 1
    tmp = a.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

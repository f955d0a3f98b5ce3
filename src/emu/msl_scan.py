#!/usr/bin/env python3
"""msl_scan: turn one Metal Shading Language source into C++ for the metal-emu emulator.

C++ cannot read MSL attributes ([[buffer(0)]], [[thread_position_in_grid]], [[host_name]]),
so this scanner reads them and writes a glue file that
  * contains the source, rewritten in place so that line and column numbers stay the same:
    attributes become spaces, a `threadgroup` variable declaration becomes `_FG_TG_VAR_`
    (static thread_local: one copy per emulated threadgroup) followed by a poisoning call on
    the same line, a program-scope `constant` becomes `_FG_CST_` (static const);
  * wraps it in a namespace of its own (several shaders link into one library);
  * registers every kernel (plain `kernel void f(...)`, or a [[host_name("x")]] instantiation
    of a template kernel) with the list of its parameters' roles: buffer n, threadgroup
    memory n, or a position attribute.
The same module is used by CMake at build time and by fastgemm.emu.run at run time.

Usage: msl_scan.py SOURCE.metal -o GLUE.cpp [--name ID] [--display PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from dataclasses import dataclass, field

POSITION_ATTRS = {
    "thread_position_in_grid", "threads_per_grid", "thread_position_in_threadgroup",
    "threads_per_threadgroup", "threadgroup_position_in_grid", "threadgroups_per_grid",
    "dispatch_threads_per_threadgroup", "thread_index_in_threadgroup",
    "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup", "threads_per_simdgroup",
    "simdgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
    "thread_execution_width", "thread_index_in_quadgroup", "quadgroup_index_in_threadgroup",
    "quadgroups_per_threadgroup",
}
UNSUPPORTED_ATTRS = {"stage_in", "texture", "sampler", "visible_function_table",
                     "intersection_function_table", "instance_acceleration_structure",
                     "payload", "grid_origin", "grid_size", "mesh", "color", "user"}


class ScanError(Exception):
    """The source uses something the scanner cannot translate."""


@dataclass
class Param:
    text: str
    attrs: list
    role: tuple = ("buffer", -1)  # (kind, index-or-attr)


@dataclass
class Kernel:
    name: str            # registry/lookup name
    callable: str        # C++ expression naming the function
    params: list
    line: int
    unsupported: str = ""


@dataclass
class FunctionConstant:
    index: int
    name: str


@dataclass
class Scan:
    kernels: list = field(default_factory=list)
    function_constants: list = field(default_factory=list)
    rewritten: str = ""


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
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if not keep_strings:
                for k in range(i + 1, min(j, n)):
                    if out[k] != "\n":
                        out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def mask_preprocessor(m: str) -> str:
    """Blank preprocessor directives (with continuations) so #define bodies are not scanned."""
    lines = m.split("\n")
    cont = False
    for i, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[i] = " " * len(line)
    return "\n".join(lines)


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
    raise ScanError(f"unbalanced '{open_c}' at offset {i}")


def find_attributes(m: str):
    """(start, end, inner text) of every [[...]] in the masked source."""
    out = []
    i = 0
    while True:
        i = m.find("[[", i)
        if i < 0:
            return out
        j = m.find("]]", i + 2)
        if j < 0:
            raise ScanError("unterminated [[ attribute")
        out.append((i, j + 2, m[i + 2:j].strip()))
        i = j + 2


def split_top(s: str, sep: str = ","):
    parts, depth, start = [], 0, 0
    for i, c in enumerate(s):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return [p for p in parts if p.strip()]


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def prev_significant(s: str, i: int) -> str:
    j = i - 1
    while j >= 0 and s[j].isspace():
        j -= 1
    return s[j] if j >= 0 else ""


def depths(s: str):
    """Brace and paren depth before each position."""
    brace = [0] * (len(s) + 1)
    paren = [0] * (len(s) + 1)
    b = p = 0
    for i, c in enumerate(s):
        brace[i], paren[i] = b, p
        if c == "{":
            b += 1
        elif c == "}":
            b -= 1
        elif c == "(":
            p += 1
        elif c == ")":
            p -= 1
    brace[len(s)], paren[len(s)] = b, p
    return brace, paren


def declarators(decl: str):
    """Names declared by 'T a[4], b[2]' (pointer declarators give None)."""
    names = []
    for part in split_top(decl):
        head = re.split(r"[\[=({]", part, maxsplit=1)[0]
        if "*" in head or "&" in head:
            names.append(None)
            continue
        ids = re.findall(r"[A-Za-z_]\w*", head)
        names.append(ids[-1] if ids else None)
    return names


def classify(attrs, text):
    for a in attrs:
        m = re.match(r"(\w+)\s*(?:\(\s*(.*?)\s*\))?$", a)
        if not m:
            continue
        name, arg = m.group(1), m.group(2)
        if name == "buffer":
            return ("buffer", int(arg, 0))
        if name == "threadgroup":
            return ("threadgroup_mem", int(arg, 0))
        if name in POSITION_ATTRS:
            return ("attribute", name)
        if name in UNSUPPORTED_ATTRS:
            return ("unsupported", f"[[{a}]] argument ({text.strip()})")
    return None


def parse_params(src: str, m: str, open_paren: int):
    close = match_close(m, open_paren, "(", ")")
    body_m = m[open_paren + 1:close]
    params = []
    offset = open_paren + 1
    pos = 0
    for part in split_top(body_m):
        start = body_m.index(part, pos)
        pos = start + len(part)
        seg = m[offset + start: offset + pos]
        attrs = [a for (_, _, a) in find_attributes(seg)]
        plain = re.sub(r"\[\[.*?\]\]", " ", seg)
        params.append(Param(text=" ".join(plain.split()), attrs=attrs))
    # Explicit indices first; unannotated buffer-like arguments take the lowest free index
    # in declaration order (MSL "first available location", metal-api-facts B.1).
    used = set()
    for p in params:
        r = classify(p.attrs, p.text)
        if r is not None:
            p.role = r
            if r[0] == "buffer":
                used.add(r[1])
    nxt = 0
    for p in params:
        if p.role == ("buffer", -1) and classify(p.attrs, p.text) is None:
            if re.search(r"\b(texture\w*|sampler|depth\w*)\s*<|\bsampler\b", p.text):
                p.role = ("unsupported", f"texture/sampler argument ({p.text})")
                continue
            while nxt in used:
                nxt += 1
            p.role = ("buffer", nxt)
            used.add(nxt)
    return params, close


def scan(src: str) -> Scan:
    m0 = mask(src)
    m = mask_preprocessor(m0)
    attrs = find_attributes(m)
    res = Scan()

    # --- kernels: `kernel void f(` or `[[kernel]] void f(` -------------------------------
    m_noattr = list(m)
    for (a, b, _) in attrs:
        for k in range(a, b):
            if m_noattr[k] != "\n":
                m_noattr[k] = " "
    m_noattr = "".join(m_noattr)
    template_kernels = {}
    attr_at = {a: inner for (a, _, inner) in attrs}
    for km in re.finditer(r"\b(kernel)\s+void\s+([A-Za-z_]\w*)\s*\(", m_noattr):
        name = km.group(2)
        # A [[kernel]]-attributed explicit instantiation is handled below.
        head = m_noattr[max(0, km.start() - 400):km.start()]
        is_template = re.search(r"template\s*<[^;{}]*>\s*$", head) is not None
        params, close = parse_params(src, m, m_noattr.index("(", km.end() - 1))
        after = m_noattr[close + 1:].lstrip()
        if after.startswith(";"):
            continue  # a declaration, not the definition
        if is_template:
            template_kernels[name] = (params, line_of(src, km.start()))
            continue
        host = name
        for (a, b, _) in attrs:
            if b <= km.start() and not m[b:km.start()].strip():
                hm = re.match(r'\s*host_name\s*\(\s*"([^"]*)"\s*\)', src[a + 2:b - 2])
                if hm:
                    host = hm.group(1)
        res.kernels.append(Kernel(host, name, params, line_of(src, km.start())))
    for km in re.finditer(r"\[\[\s*kernel\s*\]\]\s*void\s+([A-Za-z_]\w*)\s*\(", m):
        name = km.group(1)
        head = m_noattr[max(0, km.start() - 400):km.start()]
        if re.search(r"\btemplate\s*$", head):
            continue  # explicit instantiation
        params, close = parse_params(src, m, m.index("(", km.end() - 1))
        if m_noattr[close + 1:].lstrip().startswith(";"):
            continue
        if re.search(r"template\s*<[^;{}]*>\s*$", head):
            template_kernels[name] = (params, line_of(src, km.start()))
        else:
            res.kernels.append(Kernel(name, name, params, line_of(src, km.start())))

    # --- [[host_name("x")]] instantiations of template kernels ---------------------------
    nocomment = mask(src, keep_strings=True)
    for hm in re.finditer(r'\btemplate\s*\[\[\s*host_name\s*\(\s*"([^"]*)"\s*\)\s*\]\]',
                          nocomment):
        if m[hm.start()] == " ":
            continue  # inside a #define
        host = hm.group(1)
        end = m.find(";", hm.end())
        span = m_noattr[hm.end():end]
        best = None
        for tm in re.finditer(r"\b([A-Za-z_]\w*)\s*<", span):
            if tm.group(1) in template_kernels:
                best = tm
        if best is None:
            raise ScanError(f"line {line_of(src, hm.start())}: host_name(\"{host}\") does not "
                            "instantiate a template kernel defined in this file")
        lt = hm.end() + best.end() - 1
        gt = match_close(m_noattr, lt, "<", ">")
        targs = " ".join(src[lt + 1:gt].split())
        name = best.group(1)
        params, line = template_kernels[name]
        res.kernels.append(Kernel(host, f"{name}<{targs}>", params, line_of(src, hm.start())))

    for k in res.kernels:
        for p in k.params:
            if p.role[0] == "unsupported":
                k.unsupported = p.role[1]

    # --- rewrite -------------------------------------------------------------------------
    edits = []  # (start, end, replacement)
    for (a, b, inner) in attrs:
        fc = re.match(r"function_constant\s*\(\s*(\d+)\s*\)", inner)
        edits.append((a, b, "".join("\n" if c == "\n" else " " for c in src[a:b])))
        if fc:
            res.function_constants.append((a, int(fc.group(1))))
    brace, paren = depths(m_noattr)
    fc_positions = {a: idx for (a, idx) in res.function_constants}
    res.function_constants = []
    for km in re.finditer(r"\b(threadgroup|constant)\b", m_noattr):
        word, s0 = km.group(1), km.start()
        if paren[s0] != 0 or prev_significant(m_noattr, s0) not in ("", "{", "}", ";"):
            continue
        end = m_noattr.find(";", s0)
        if end < 0:
            continue
        decl = m_noattr[km.end():end]
        if "(" in decl.split("=")[0] and word == "constant":
            continue  # a function returning a constant-space value (unusual)
        names = declarators(decl)
        if not names or all(n is None for n in names):
            continue  # pointers/references to that address space: ordinary variables
        if word == "threadgroup":
            if brace[s0] == 0:
                continue
            edits.append((s0, km.end(), "_FG_TG_VAR_"))
            poison = "".join(f" ::fgemu::tg_var(&{n}, sizeof({n}));" for n in names if n)
            edits.append((end + 1, end + 1, poison))
        else:
            fcs = [idx for (a, idx) in fc_positions.items() if s0 < a < end]
            if fcs:
                edits.append((s0, km.end(), "_FG_FC__"))
                res.function_constants.append(FunctionConstant(fcs[0], names[0]))
            else:
                edits.append((s0, km.end(), "_FG_CST_"))
    out = src
    for (a, b, rep) in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:a] + rep + out[b:]
    res.rewritten = out
    return res


def cxx_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def glue(src: str, display: str, ident: str) -> str:
    sc = scan(src)
    ns = "fgemu_shader_" + re.sub(r"\W", "_", ident)
    o = [f"// Generated by msl_scan.py from {display}. Do not edit.",
         '#include "fgemu/glue.hpp"',
         f"namespace {ns} {{",
         f"#line 1 {cxx_string(display)}",
         sc.rewritten,
         "",
         "}  // namespace",
         f"namespace {ns}_glue {{",
         f"using namespace ::{ns};"]
    entries = []
    for i, k in enumerate(sc.kernels):
        roles = []
        for p in k.params:
            kind, idx = p.role
            if kind == "attribute":
                roles.append(f"{{::fgemu::ArgRole::attribute, int(::fgemu::Attr::{idx})}}")
            elif kind == "threadgroup_mem":
                roles.append(f"{{::fgemu::ArgRole::threadgroup_mem, {idx}}}")
            elif kind == "buffer":
                roles.append(f"{{::fgemu::ArgRole::buffer, {idx}}}")
            else:
                roles.append("{::fgemu::ArgRole::buffer, -1}")
        arr = "nullptr"
        if roles:
            o.append(f"const ::fgemu::ArgRole roles_{i}[] = {{{', '.join(roles)}}};")
            arr = f"roles_{i}"
        if k.unsupported:
            o.append(f"void unsupported_{i}(const ::fgemu::ArgRole*) {{ "
                     f"::fgemu::unsupported({cxx_string(k.unsupported)}); }}")
            fn = f"&unsupported_{i}"
        else:
            fn = f"&::fgemu::invoke<&::{ns}::{k.callable}>"
        entries.append(f"    {{{cxx_string(k.name)}, {fn}, {arr}, {len(roles)}, "
                       f"{cxx_string(f'{display}:{k.line}')}}},")
    fcs = [f"    {{{fc.index}, {cxx_string(fc.name)}, &::{ns}::{fc.name}, sizeof(::{ns}::{fc.name})}},"
           for fc in sc.function_constants]
    o.append("const ::fgemu::KernelEntry entries[] = {")
    o += entries or ["    {nullptr, nullptr, nullptr, 0, nullptr},"]
    o.append("};")
    if fcs:
        o.append("const ::fgemu::FunctionConstant fcs[] = {")
        o += fcs
        o.append("};")
    o.append(f"const ::fgemu::Registrar registrar(entries, {len(entries)}, "
             f"{'fcs' if fcs else 'nullptr'}, {len(fcs)});")
    o.append("}  // namespace")
    return "\n".join(o) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--name", help="identifier for the generated namespace")
    ap.add_argument("--display", help="file name used in #line and messages")
    a = ap.parse_args(argv)
    with open(a.source, encoding="utf-8") as f:
        src = f.read()
    ident = a.name or os.path.splitext(os.path.basename(a.source))[0]
    display = a.display or os.path.abspath(a.source)
    try:
        text = glue(src, display, ident)
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

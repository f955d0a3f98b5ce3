#!/usr/bin/env python3
"""Checks the Metal Performance Shaders calls of src/metal/*.mm against Apple's MPS headers.

The Objective-C++ type check (check_objc.sh) compiles the MPS code out when the SDK copy has
no MetalPerformanceShaders framework. This script covers that code at the declaration level,
from a folder of Apple's MPS headers (any layout; they stay outside the repository):

  * every MPS identifier used (classes, functions, constants such as MPSDataTypeFloat32) is
    declared in those headers;
  * every Objective-C selector sent inside the MPS-only code (between
    `#if !defined(FASTGEMM_SYNTAX_CHECK_NO_MPS)` and its `#endif`) is declared, with the same
    keywords in the same order, by the MPS headers or by the Foundation/Metal headers of
    FASTGEMM_MACOS_SDK (when given).

    FASTGEMM_MPS_HEADERS=/path/to/mps-headers [FASTGEMM_MACOS_SDK=...] scripts/check_mps_calls.py

Without FASTGEMM_MPS_HEADERS it says so and exits 0. Exit status 1 lists what is missing.
"""
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def headers(root):
    return [p for p in Path(root).rglob("*.h") if p.is_file()]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def declared_selectors(files):
    """Selectors of the method declarations (- or +) in the headers, as 'a:b:c:'."""
    out = set()
    for f in files:
        text = strip_comments(f.read_text(errors="replace"))
        for m in re.finditer(r"^\s*[-+]\s*\([^;{]*?\)\s*([^;{]+?)(?:;|\{)", text, re.M | re.S):
            decl = m.group(1)
            decl = re.sub(r"\b(MPS_|NS_|API_|__)\w*(\([^()]*(\([^()]*\))*[^()]*\))?", " ", decl)
            keys = re.findall(r"([A-Za-z_]\w*)\s*:", decl)
            out.add("".join(k + ":" for k in keys) if keys else decl.strip().split()[0])
    return out


def declared_identifiers(files):
    ids = set()
    for f in files:
        ids.update(re.findall(r"\bMPS\w+", strip_comments(f.read_text(errors="replace"))))
    return ids


def mps_sections(text):
    """The code between #if !defined(FASTGEMM_SYNTAX_CHECK_NO_MPS) and its #endif."""
    out, depth, inside = [], 0, False
    for line in text.splitlines():
        s = line.strip()
        if not inside and re.match(r"#\s*if\s+!\s*defined\s*\(\s*FASTGEMM_SYNTAX_CHECK_NO_MPS\s*\)", s):
            inside, depth = True, 1
            continue
        if inside:
            if re.match(r"#\s*if", s):
                depth += 1
            elif re.match(r"#\s*endif", s):
                depth -= 1
                if depth == 0:
                    inside = False
                    continue
            out.append(line)
    return "\n".join(out)


def sent_selectors(code):
    """Selectors of the message expressions [receiver key: arg key: arg ...]."""
    sels = set()
    code = strip_comments(code)
    for start in [m.start() for m in re.finditer(r"\[", code)]:
        depth, j = 0, start
        while j < len(code):
            c = code[j]
            if c in "[(":
                depth += 1
            elif c in "])":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        body = code[start + 1:j]
        # receiver: an identifier, a nested [...] or a call; then keywords at depth 0
        m = re.match(r"\s*(\[.*\]|[A-Za-z_][\w.]*(\(\))?)\s+([A-Za-z_]\w*)(\s*:)?", body, re.S)
        if not m:
            continue
        top, d = [], 0
        for ch in body:
            d += ch in "[({"
            d -= ch in "])}"
            top.append(ch if d == 0 else " ")
        rest = "".join(top)[m.start(3):]
        rest = re.sub(r"\?[^:?]*:", "?", rest)  # a conditional's ':' is not a keyword
        keys = re.findall(r"([A-Za-z_]\w*)\s*:(?!:)", rest)
        sels.add("".join(k + ":" for k in keys) if m.group(4) else m.group(3))
    return sels


def main():
    mps_root = os.environ.get("FASTGEMM_MPS_HEADERS")
    if not mps_root:
        print("check_mps_calls: FASTGEMM_MPS_HEADERS is not set; skipping the MPS declaration check")
        return 0
    mps_files = headers(mps_root)
    if not mps_files:
        print(f"check_mps_calls: no .h files under {mps_root}", file=sys.stderr)
        return 2
    sdk_files = []
    if os.environ.get("FASTGEMM_MACOS_SDK"):
        sdk = Path(os.environ["FASTGEMM_MACOS_SDK"]) / "Frameworks"
        for fw in ("Foundation", "Metal"):
            sdk_files += headers(sdk / f"{fw}.framework")
    selectors = declared_selectors(mps_files + sdk_files)
    ids = declared_identifiers(mps_files)
    status = 0
    for f in sorted((HERE / "src" / "metal").glob("*.mm")):
        code = mps_sections(f.read_text())
        if not code.strip():
            continue
        missing_ids = sorted({i for i in re.findall(r"\bMPS\w+", strip_comments(code))
                              if i not in ids and not i.startswith("MPS_")})
        sent = sent_selectors(code)
        # Selectors of Foundation/Metal objects are checked only when that SDK is given.
        unknown = sorted(s for s in sent if s not in selectors and (sdk_files or "MPS" in code))
        if not sdk_files:
            unknown = [s for s in unknown if s in mps_only_selectors(code)]
        rel = f.relative_to(HERE)
        if missing_ids or unknown:
            status = 1
            print(f"check_mps_calls: FAIL {rel}")
            for i in missing_ids:
                print(f"  not declared in the MPS headers: {i}")
            for s in unknown:
                print(f"  no declaration of selector {s}")
        else:
            used = set(re.findall(r"MPS[A-Z]\w*", code))
            print(f"check_mps_calls: ok   {rel} ({len(sent)} selectors, {len(used)} MPS identifiers)")
    return status


def mps_only_selectors(code):
    """Selectors sent to an MPS class or to an object created from one (no SDK given)."""
    out = set()
    for m in re.finditer(r"\[\s*(?:\[\s*)?MPS\w+[^\]]*?\]?\s*([A-Za-z_]\w*\s*:[^\]]*)\]", code, re.S):
        out.add("".join(k + ":" for k in re.findall(r"([A-Za-z_]\w*)\s*:(?!:)", m.group(1))))
    return out


if __name__ == "__main__":
    sys.exit(main())

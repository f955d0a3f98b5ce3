"""The safe policy of metal-emu against ways around it: weak references to host functions,
directives made by macro expansion (compiled as real ones by the second pass), include
spellings that escape the include check, load-time code however declared, and machine code
in an executable section. Each source is refused with EmuRefusedError naming the construct;
a refused include never shows the file's text. Object-level checks are also tested on their
own, on objects built here, since the source checks stop every source before them."""
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fastgemm import emu

SECRET = "leaked_secret_token_q9z"  # the text of a file no shader may read


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


@pytest.fixture
def secret(tmp_path) -> Path:
    """A file outside the shader's folder; its only line would be quoted by a compile error
    ("unsupported: leaked_secret_token_q9z") if it were ever included."""
    d = tmp_path / "outside"
    d.mkdir()
    p = d / "secret.h"
    p.write_text(SECRET + "\n")
    return p


def _compile_file(tmp_path: Path, src: str):
    d = tmp_path / "shader"
    d.mkdir(exist_ok=True)
    f = d / "k.metal"
    f.write_text(src)
    return emu.compile(f)


KERNEL = 'kernel void k(device int* out [[buffer(0)]]) { out[0] = 1; }\n'
HOST_CALL = ('kernel void k(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) '
             '{ if (i == 0) out[0] = CALL("true"); }\n')

WEAK = {
    "weak_attribute": ('extern "C" int system(const char*) __attribute__((weak));\n'
                       + HOST_CALL.replace("CALL", "system"), "weak attribute"),
    "pragma_weak": ('extern "C" int system(const char*);\n#pragma weak system\n'
                    + HOST_CALL.replace("CALL", "system"), "#pragma weak"),
    "weakref": ('static int my_sys(const char*) __attribute__((weakref("system")));\n'
                + HOST_CALL.replace("CALL", "my_sys"), "weakref attribute"),
}


@pytest.mark.parametrize("case", sorted(WEAK))
def test_weak_references_to_host_functions_are_refused(case):
    src, pattern = WEAK[case]
    with pytest.raises(emu.EmuRefusedError, match=pattern):
        emu.compile("#include <metal_stdlib>\n" + src)


DIRECTIVES = {
    # `H define ASM __asm__` expands to ` # define ASM __asm__`: a directive in glue.cpp.
    "define_asm": ('#define H #\n#define D H define\nD ASM __asm__\n'
                   'kernel void k(device long* out [[buffer(0)]]) {\n'
                   '    long r = 0; ASM volatile ("" : "=r"(r)); out[0] = r; }\n', "`#define`"),
    "incbin": ('#define H #\n#define D H define\nD ASM __asm__\n'
               'ASM(".pushsection .rodata\\n.incbin \\"/etc/passwd\\"\\n.popsection");\n' + KERNEL,
               "`#define`"),
    "digraph": ('#define H %:\n#define D H define\nD ASM __asm__\n' + KERNEL, "`#define`"),
}


@pytest.mark.parametrize("case", sorted(DIRECTIVES))
def test_directives_made_by_macro_expansion_are_refused(case):
    src, pattern = DIRECTIVES[case]
    with pytest.raises(emu.EmuRefusedError, match=pattern) as e:
        emu.compile("#include <metal_stdlib>\n" + src)
    assert "made by macro expansion" in str(e.value)


INCLUDES = {
    "digraph": '%:include "{abs}"',
    "import": '#import "{abs}"',
    "include_next": '#include_next "{abs}"',
    "continuation": '#inc\\\nlude "{abs}"',
    "macro_directive": '#define H #\nH include "{abs}"',
    # The stub folder of the first pass sits in the temporary folder: enough `..` reach /.
    "angle_climb": "#include <" + "../" * 24 + "{rel_root}>",
}


@pytest.mark.parametrize("case", sorted(INCLUDES))
def test_includes_outside_the_allowed_folders_are_refused_without_their_text(case, tmp_path, secret):
    line = INCLUDES[case].format(abs=secret, rel_root=str(secret).lstrip("/"))
    with pytest.raises(emu.EmuRefusedError, match="#include") as e:
        _compile_file(tmp_path, "#include <metal_stdlib>\n" + line + "\n" + KERNEL)
    assert SECRET not in str(e.value)
    assert "refused" in str(e.value)


def test_an_allowed_include_still_compiles(tmp_path):
    d = tmp_path / "shader"
    d.mkdir()
    (d / "common.h").write_text("#define SCALE 3\n")
    (d / "k.metal").write_text('#include <metal_stdlib>\n%:include "common.h"\n'
                               'kernel void k(device int* out [[buffer(0)]]) { out[0] = SCALE; }\n')
    y = np.zeros(1, np.int32)
    emu.run(d / "k.metal", "k", threadgroups=1, threads_per_threadgroup=1, buffers=[y])
    assert y[0] == 3


LOAD_TIME = {
    "dunder_constructor": ("__attribute__((__constructor__)) static void init() { flag = 42; }",
                           "constructor/destructor attribute"),
    "constructor_after_another": ("__attribute__((aligned(16), constructor)) static void init() "
                                  "{ flag = 42; }", "constructor/destructor attribute"),
    "init_array": ('static void init() { flag = 42; }\n__attribute__((section(".init_array"), used)) '
                   'static void (*initp)() = init;', "section attribute"),
    "ifunc": ('static int impl() { return flag; }\n'
              'extern "C" { static void* resolve_get() { flag = 42; return (void*)&impl; } }\n'
              'extern "C" int get_flag() __attribute__((ifunc("resolve_get")));', "ifunc"),
    "text_section": ('__attribute__((section(".text"))) const unsigned char blob[] = {0xc3};',
                     "section attribute"),
}


@pytest.mark.parametrize("case", sorted(LOAD_TIME))
def test_load_time_code_and_code_in_data_are_refused(case):
    decl, pattern = LOAD_TIME[case]
    src = ("#include <metal_stdlib>\nusing namespace metal;\nstatic int flag = 0;\n" + decl +
           "\nkernel void k(device int* out [[buffer(0)]]) { out[0] = flag; }\n")
    with pytest.raises(emu.EmuRefusedError, match=pattern):
        emu.compile(src)


def test_attributes_and_pragmas_shaders_use_still_compile():
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "#define UNROLL _Pragma(\"unroll\")\n"
           "static inline __attribute__((always_inline)) int twice(int x) { return 2 * x; }\n"
           "kernel void k(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           "    int s = 0;\n    UNROLL\n    for (int j = 0; j < 4; ++j) s += twice(j);\n"
           "#pragma unroll\n    for (int j = 0; j < 2; ++j) s += j;\n    out[i] = s;\n}\n")
    y = np.zeros(2, np.int32)
    emu.run(src, "k", threadgroups=1, threads_per_threadgroup=2, buffers=[y])
    assert (y == 13).all()


# ---- the object checks on their own (ELF, Linux) ------------------------------------------

needs_elf = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("c++") is None
                               or shutil.which("nm") is None,
                               reason="the object checks read ELF objects (Linux)")


def _object(tmp_path: Path, code: str) -> Path:
    src, obj = tmp_path / "o.cpp", tmp_path / "o.o"
    src.write_text(code)
    subprocess.run(["c++", "-c", "-fPIC", "-O1", "-x", "c++", str(src), "-o", str(obj)],
                   check=True, timeout=120)
    return obj


@needs_elf
@pytest.mark.parametrize("code,pattern", [
    ("static int f; __attribute__((constructor)) static void init() { f = 1; }\n"
     "int get() { return f; }\n", r"load time \(the object has a \.init_array"),
    ("static void init() {}\n__attribute__((section(\".init_array\"), used)) "
     "static void (*p)() = init;\n", r"\.init_array"),
    ("__attribute__((section(\".text\"))) extern const unsigned char blob[] = {0xc3};\n",
     r"data \(blob\) in the executable section \.text"),
    ("static int impl() { return 1; }\nextern \"C\" { static void* resolve() { return (void*)&impl; } }\n"
     "extern \"C\" int get() __attribute__((ifunc(\"resolve\")));\nint use() { return get(); }\n",
     r"an ifunc \(get\)"),
], ids=["constructor", "init_array", "text_data", "ifunc"])
def test_object_check_refuses_load_time_code_and_executable_data(tmp_path, code, pattern):
    obj = _object(tmp_path, code)
    with pytest.raises(emu.EmuRefusedError, match=pattern):
        emu._policy_check_object(obj, "<source>")


@needs_elf
def test_symbol_check_sees_weak_references(tmp_path):
    obj = _object(tmp_path, 'extern "C" int system(const char*) __attribute__((weak));\n'
                            'int run() { return system("true"); }\n')
    with pytest.raises(emu.EmuRefusedError, match="the shader calls system"):
        emu._policy_check_symbols(obj, ["c++"], "<source>")


@needs_elf
def test_symbol_check_sees_ifuncs(tmp_path):
    obj = _object(tmp_path, 'static int impl() { return 1; }\n'
                            'extern "C" { static void* resolve() { return (void*)&impl; } }\n'
                            'extern "C" int get() __attribute__((ifunc("resolve")));\n')
    with pytest.raises(emu.EmuRefusedError, match=r"an ifunc \(get\)"):
        emu._policy_check_symbols(obj, ["c++"], "<source>")


@needs_elf
def test_object_check_passes_an_ordinary_object(tmp_path):
    obj = _object(tmp_path, "static const int table[4] = {1, 2, 3, 4};\n"
                            "int get(int i) { return table[i & 3]; }\n")
    emu._policy_check_object(obj, "<source>")

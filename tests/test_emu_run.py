"""fastgemm.emu.run: arbitrary MSL on the CPU, and the emulator's error reports."""
from pathlib import Path

import numpy as np
import pytest

import fastgemm
from fastgemm import emu

HERE = Path(__file__).resolve().parent
SHADERS = HERE / "shaders"
REPO_SHADERS = HERE.parent / "shaders"


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # One cache for the session keeps recompiles out of the run.
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


VECTOR_SRC = """
#include <metal_stdlib>
using namespace metal;
constant float scale [[function_constant(0)]];
struct Params { uint n; float bias; };
kernel void axpb(device const float4* x [[buffer(0)]],
                 device float4* y [[buffer(1)]],
                 constant Params& p [[buffer(2)]],
                 uint2 gid [[thread_position_in_grid]],
                 uint lane [[thread_index_in_simdgroup]]) {
    const float lanes = simd_sum(1.0f);  // all 32 lanes active here
    if (gid.x >= p.n) return;
    float s = is_function_constant_defined(scale) ? scale : 1.0f;
    float4 v = x[gid.x];
    v.xy = v.yx;                       // swizzle assignment
    y[gid.x] = fma(v, float4(s), float4(p.bias)) + float4(lanes - 32.0f);
}
template <typename T>
kernel void fill(device T* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = T(i); }
template [[host_name("fill_f32")]] [[kernel]] decltype(fill<float>) fill<float>;
template [[host_name("fill_u32")]] [[kernel]] decltype(fill<uint>) fill<uint>;
"""


def test_run_arbitrary_source_with_vectors_structs_constants():
    n = 40
    x = np.random.default_rng(1).uniform(-1, 1, (n, 4)).astype(np.float32)
    y = np.full((n, 4), np.nan, np.float32)
    params = np.array([(n, 0.25)], dtype=[("n", "<u4"), ("bias", "<f4")])
    emu.run(VECTOR_SRC, "axpb", threadgroups=(2,), threads_per_threadgroup=(32, 1),
            buffers={0: x, 1: y, 2: params}, constants={"scale": 3.0})
    expect = x[:, [1, 0, 2, 3]] * 3.0 + 0.25
    assert np.allclose(y, expect, atol=1e-6)


def test_host_name_instantiations():
    a = np.zeros(64, np.float32)
    b = np.zeros(64, np.uint32)
    emu.run(VECTOR_SRC, "fill_f32", threadgroups=2, threads_per_threadgroup=32, buffers=[a])
    emu.run(VECTOR_SRC, "fill_u32", threadgroups=2, threads_per_threadgroup=32, buffers=[b])
    assert np.array_equal(a, np.arange(64, dtype=np.float32))
    assert np.array_equal(b, np.arange(64, dtype=np.uint32))
    assert set(emu.compile(VECTOR_SRC).kernels) >= {"axpb", "fill_f32", "fill_u32"}


def test_ladder_shader_file_runs_directly():
    rng = np.random.default_rng(2)
    M, N, K = 37, 53, 29
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.full((M, N), np.nan, np.float32)
    params = np.array([M, N, K, K, N, N, 0, 0, 0, 0, 0, 0], np.uint32)
    params[8:10] = np.array([1.0, 0.0], np.float32).view(np.uint32)
    emu.run(REPO_SHADERS / "03_tiled_checked.metal", "matmul_tiled_16",
            threadgroups=(4, 3), threads_per_threadgroup=(16, 16), buffers=[A, B, C, params],
            strict=True)
    assert np.allclose(C, A.astype(np.float64) @ B, atol=1e-4)


def test_missing_barrier_is_caught():
    x = np.arange(64, dtype=np.float32)
    good = np.zeros_like(x)
    emu.run(SHADERS / "broken_missing_barrier.metal", "reverse_in_group_fixed", threadgroups=1,
            threads_per_threadgroup=64, buffers=[x, good], strict=True)
    assert np.array_equal(good, x[::-1])
    for order in ("natural", "reversed", "shuffled"):
        bad = np.zeros_like(x)
        emu.run(SHADERS / "broken_missing_barrier.metal", "reverse_in_group", threadgroups=1,
                threads_per_threadgroup=64, buffers=[x, bad], order=order)
        assert not np.array_equal(bad, x[::-1]), order  # NaN or wrong values show the race


def test_divergent_barrier_strict_and_hardware_modes():
    y = np.zeros(64, np.float32)
    count = np.uint32(48)
    with pytest.raises(fastgemm.KernelError, match="barrier divergence"):
        emu.run(SHADERS / "broken_divergent_barrier.metal", "early_return", threadgroups=1,
                threads_per_threadgroup=64, buffers=[y, count], strict=True)
    # Default follows Apple hardware: returned threads do not block the barrier.
    emu.run(SHADERS / "broken_divergent_barrier.metal", "early_return", threadgroups=1,
            threads_per_threadgroup=64, buffers=[y, count])
    assert np.array_equal(y[:48], (np.arange(48) + 1) % 48)
    with pytest.raises(fastgemm.KernelError, match="different|waits at"):
        emu.run(SHADERS / "broken_divergent_barrier.metal", "two_barriers", threadgroups=1,
                threads_per_threadgroup=64, buffers=[y], strict=True)


def test_out_of_bounds_write_is_caught():
    n = 100
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    with pytest.raises(fastgemm.KernelError, match="out-of-bounds write.*buffer\\(1\\)"):
        emu.run(SHADERS / "broken_out_of_bounds.metal", "copy_off_by_one", threadgroups=4,
                threads_per_threadgroup=32, buffers=[x, y, np.uint32(n)])


def test_bad_geometry_and_names():
    y = np.zeros(4, np.float32)
    with pytest.raises(fastgemm.errors.ArgumentError, match="out-of-range dispatch geometry"):
        emu.run(VECTOR_SRC, "fill_f32", threadgroups=1, threads_per_threadgroup=(64, 32),
                buffers=[y])
    with pytest.raises(fastgemm.NotFoundError, match="no kernel named"):
        emu.run(VECTOR_SRC, "nope", threadgroups=1, threads_per_threadgroup=1, buffers=[y])
    with pytest.raises(fastgemm.KernelError, match="buffer\\(0\\) is not bound"):
        emu.run(VECTOR_SRC, "fill_f32", threadgroups=1, threads_per_threadgroup=1, buffers=[])


def test_compile_error_carries_compiler_message():
    src = "#include <metal_stdlib>\nkernel void k(device float* y [[buffer(0)]]) { y[0] = undefined_name; }\n"
    with pytest.raises(emu.EmuCompileError, match="undefined_name"):
        emu.run(src, "k", threadgroups=1, threads_per_threadgroup=1, buffers=[np.zeros(1, np.float32)])


def test_simdgroup_matrix_transpose_and_threadgroup_memory_argument():
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void t8(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
               threadgroup float* scratch [[threadgroup(0)]],
               uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 m;
    simdgroup_load(m, a, 8, ulong2(0, 0), true);       // transposed load
    simdgroup_store(m, scratch, 8);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    out[lane] = scratch[lane];
    out[lane + 32] = scratch[lane + 32];
}
"""
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    emu.run(src, "t8", threadgroups=1, threads_per_threadgroup=32, buffers=[a, out],
            threadgroup_memory=[256], strict=True)
    assert np.array_equal(out.reshape(8, 8), a.reshape(8, 8).T)


@pytest.mark.parametrize("var, value, expect", [
    ("FASTGEMM_EMU_CACHE", "plain-file", "FASTGEMM_EMU_CACHE="),
    ("CXX", "/nonexistent-folder/c++", "CXX="),
    ("CXX", "g++ '-O2", "CXX="),
    ("FASTGEMM_EMU_CXXFLAGS", "'-O2", "FASTGEMM_EMU_CXXFLAGS="),
])
def test_environment_that_cannot_build_shaders_is_named(var, value, expect, tmp_path, monkeypatch):
    """A cache folder that is a file, a missing compiler or a command line that does not
    split: EmuCompileError naming the variable, before any compiler runs."""
    if value == "plain-file":
        (tmp_path / "plain-file").write_text("x")
        value = str(tmp_path / "plain-file")
    monkeypatch.setenv(var, value)
    src = tmp_path / "k.metal"
    src.write_text("kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 1; }\n")
    with pytest.raises(emu.EmuCompileError, match=expect):
        emu.compile(src)


@pytest.mark.parametrize("change, error, expect", [
    (dict(kernel="k\0x"), ValueError, "kernel"),
    (dict(buffers=5), TypeError, "buffers"),
    (dict(threadgroup_memory=[1 << 40]), ValueError, "threadgroup_memory"),
])
def test_run_refuses_arguments_naming_them(change, error, expect, tmp_path):
    src = tmp_path / "k.metal"
    src.write_text("kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 1; }\n")
    mod = emu.compile(src)
    args = dict(kernel="k", threadgroups=1, threads_per_threadgroup=4, buffers=[np.zeros(4, np.float32)])
    args.update(change)
    with pytest.raises(error, match=expect):
        mod.run(args.pop("kernel"), **args)


CACHE_PROBE = r"""
import sys
from pathlib import Path
from fastgemm import emu
mod = emu.compile(Path(sys.argv[1]))
print(mod.path)
"""


def test_module_cache_is_shared_across_processes(tmp_path):
    """The cache key depends on the source and the files it includes, not on anything a
    process chooses (such as a temporary folder): a second process reuses the module, and
    changing an included file gives another one."""
    import os
    import subprocess
    import sys
    cache = tmp_path / "cache"
    (tmp_path / "helper.h").write_text("inline float bump(float x) { return x + 1.0f; }\n")
    src = tmp_path / "k.metal"
    src.write_text('#include <metal_stdlib>\n#include "helper.h"\nusing namespace metal;\n'
                   "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                   "{ x[i] = bump(x[i]); }\n")
    env = dict(os.environ, FASTGEMM_EMU_CACHE=str(cache))

    def module_path():
        proc = subprocess.run([sys.executable, "-c", CACHE_PROBE, str(src)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.returncode == 0, proc.stderr
        return Path(proc.stdout.strip())

    first = module_path()
    built = first.stat().st_mtime_ns
    assert module_path() == first
    assert first.stat().st_mtime_ns == built  # reused, not rebuilt
    modules = lambda: {p.name for p in cache.iterdir() if p.is_dir() and not p.name.startswith("runtime-")}  # noqa: E731
    assert modules() == {first.parent.name}
    (tmp_path / "helper.h").write_text("inline float bump(float x) { return x + 2.0f; }\n")
    second = module_path()
    assert second != first and len(modules()) == 2


def test_a_string_that_can_only_be_a_path_must_name_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("kernels.metl", "shaders/gemm", "gemm_kernel"):
        with pytest.raises(FileNotFoundError, match=repr(name)):
            emu.compile(name)
    with pytest.raises(FileNotFoundError, match="folder"):
        emu.compile(str(tmp_path))
    # an existing file is read whatever its extension; one-line source text is still text
    body = "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 3; }"
    (tmp_path / "k.comp").write_text(body + "\n")
    x = np.zeros(4, np.float32)
    emu.run("k.comp", "k", threadgroups=1, threads_per_threadgroup=4, buffers=[x])
    assert x.tolist() == [3, 3, 3, 3]
    x[:] = 0
    emu.run(body, "k", threadgroups=1, threads_per_threadgroup=4, buffers=[x])
    assert x.tolist() == [3, 3, 3, 3]
    assert emu.compile(str(tmp_path / "k.comp")).display == str(tmp_path / "k.comp")


def test_strict_mode_tells_two_barriers_on_one_line_apart():
    """Barrier sites were told apart by file:line only, so a one-line branch with a barrier
    on each side (or two from one macro's expansion) hid the divergence."""
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { "
           "if (i & 1) { threadgroup_barrier(mem_flags::mem_threadgroup); o[i] = 1; } "
           "else { threadgroup_barrier(mem_flags::mem_threadgroup); o[i] = 2; } }\n")
    o = np.zeros(32, np.int32)
    with pytest.raises(fastgemm.KernelError, match=r"barrier divergence: .*:3 \(column \d+ of the translated line\)"):
        emu.run(src, "k", threadgroups=1, threads_per_threadgroup=32, buffers=[o], strict=True)
    emu.run(src, "k", threadgroups=1, threads_per_threadgroup=32, buffers=[o])  # Apple GPUs let it pass
    assert set(o.tolist()) == {1, 2}

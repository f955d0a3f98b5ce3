"""fastgemm.emu refuses what it cannot honour instead of guessing: objects that hold Python
references, one array where a list of buffers belongs, a float for an integer constant, a
dispatch no GPU accepts; a dispatch never depends on an earlier one's constants; an
infinite time limit means none; a write into a read-only object is reported; Ctrl-C while
the shared arena grows and a caller that dies mid-dispatch leave nothing broken behind."""
import math
import mmap
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from fastgemm import emu
from fastgemm.errors import ArgumentError, ArgumentTypeError

REPO = Path(__file__).resolve().parent.parent

SRC = """
#include <metal_stdlib>
using namespace metal;
constant int n [[function_constant(0)]];
constant float scale [[function_constant(1)]];
kernel void constants(device float* o [[buffer(0)]]) {
    o[0] = float(n); o[1] = is_function_constant_defined(n) ? 1.0f : 0.0f; o[2] = scale;
}
kernel void twice(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] *= 2.0f; }
kernel void spin(device atomic_uint* flag [[buffer(0)]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path_factory.getbasetemp() / "emu-cache"))


@pytest.fixture
def mod():
    return emu.compile(SRC)


def test_an_array_of_python_objects_is_refused_not_overwritten(mod):
    objects = np.array(["x", "y"], dtype=object)
    with pytest.raises(ArgumentTypeError, match="buffer 0: ndarray holds Python objects"):
        mod.run("twice", threadgroups=1, threads_per_threadgroup=2, buffers=[objects])
    assert list(objects) == ["x", "y"]


def test_one_array_where_a_list_of_buffers_belongs_is_refused(mod):
    x = np.ones(4, np.float32)
    with pytest.raises(ArgumentTypeError, match=r"buffers must be a list .* pass \[x\]"):
        mod.run("twice", threadgroups=1, threads_per_threadgroup=4, buffers=x)


def test_a_left_out_constant_is_undefined_and_zero_whatever_ran_before(mod):
    def run(constants):
        o = np.full(3, -1.0, np.float32)
        mod.run("constants", threadgroups=1, threads_per_threadgroup=1, buffers=[o], constants=constants)
        return o.tolist()

    assert run({"n": 7, "scale": 2}) == [7.0, 1.0, 2.0]  # an int for a float constant is its value
    assert run(None) == [0.0, 0.0, 0.0]
    assert run({1: np.float32(0.5)}) == [0.0, 0.0, 0.5]


def test_a_float_for_an_integer_constant_is_refused(mod):
    o = np.zeros(3, np.float32)
    with pytest.raises(ArgumentTypeError, match="constant n is an integer constant; got the float 1.5"):
        mod.run("constants", threadgroups=1, threads_per_threadgroup=1, buffers=[o], constants={"n": 1.5})
    with pytest.raises(ArgumentError, match=r"constant n \(4 bytes\) cannot hold"):
        mod.run("constants", threadgroups=1, threads_per_threadgroup=1, buffers=[o], constants={"n": 2**40})


@pytest.mark.parametrize("geometry", [dict(threadgroups=1, threads_per_threadgroup=2000),
                                      dict(threadgroups=(2**31, 1, 1), threads_per_threadgroup=1024)])
def test_a_dispatch_no_gpu_accepts_is_an_argument_error(mod, geometry):
    with pytest.raises(ArgumentError, match="out-of-range dispatch geometry"):
        mod.run("twice", buffers=[np.zeros(4, np.float32)], **geometry)


def test_threadgroup_memory_is_checked_against_the_gpu_limit(mod):
    for length in (17, 64 << 10):
        with pytest.raises(ArgumentError, match=r"threadgroup_memory\[0\] must be a multiple of 16"):
            mod.run("twice", threadgroups=1, threads_per_threadgroup=1, buffers=[np.zeros(1, np.float32)],
                    threadgroup_memory=[length])


def test_an_infinite_time_limit_means_none():
    """A limit of inf once left the runtime's watchdog waiting on an overflowed deadline
    and the dispatch never returned; checked in a child so a hang fails, not stalls."""
    child = textwrap.dedent(f"""
        import numpy as np
        from fastgemm import emu
        for limit in (float("inf"), 1e300):
            x = np.ones(8, np.float32)
            emu.run({SRC!r}, "twice", threadgroups=1, threads_per_threadgroup=8, buffers=[x], time_limit=limit)
            assert x.tolist() == [2.0] * 8
        print("done")
    """)
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "done" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.parametrize("value", ["-5", "nan"])
def test_cli_refuses_a_negative_or_nan_time_limit(tmp_path, value):
    src = tmp_path / "k.metal"
    src.write_text(SRC)
    proc = subprocess.run([sys.executable, "-m", "fastgemm", "emu", str(src), "--kernel", "twice",
                           "--buffer", "0:float32:8", "--time-limit", value],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--time-limit" in proc.stderr and len(proc.stderr.splitlines()) == 1, \
        proc.stderr


def test_a_write_into_a_read_only_object_is_reported(mod):
    x = np.ones(4, np.float32)
    x.flags.writeable = False
    with pytest.warns(RuntimeWarning, match=r"wrote into buffer\(0\), bound to read-only"):
        mod.run("twice", threadgroups=1, threads_per_threadgroup=4, buffers=[x])
    assert x.tolist() == [1.0] * 4


def test_ctrl_c_while_the_arena_grows_leaves_the_worker_usable(mod, monkeypatch):
    mod.run("twice", threadgroups=1, threads_per_threadgroup=1, buffers=[np.ones(1, np.float32)])
    real = mmap.mmap

    def interrupted(*args, **kwargs):
        monkeypatch.setattr(mmap, "mmap", real)
        raise KeyboardInterrupt

    monkeypatch.setattr(mmap, "mmap", interrupted)
    big = np.ones(1 << 20, np.float32)  # past the first arena: it must grow
    with pytest.raises(KeyboardInterrupt):
        mod.run("twice", threadgroups=1 << 10, threads_per_threadgroup=1 << 10, buffers=[big])
    mod.run("twice", threadgroups=1 << 10, threads_per_threadgroup=1 << 10, buffers=[big])
    assert np.all(big == 2.0)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
def test_a_worker_ends_with_its_caller_and_removes_its_files(tmp_path):
    """A caller killed mid-dispatch (SIGKILL: no cleanup runs in it) while its shader spins
    with no time limit: the worker notices its new parent, removes the shared files and
    ends, instead of spinning on for good."""
    child = textwrap.dedent(f"""
        import numpy as np
        from fastgemm import emu
        mod = emu.compile({SRC!r})
        mod.run("twice", threadgroups=1, threads_per_threadgroup=1, buffers=[np.ones(1, np.float32)])
        w = emu._worker
        print(w.proc.pid, w.dir, flush=True)
        mod.run("spin", threadgroups=1, threads_per_threadgroup=1, buffers=[np.zeros(1, np.uint32)],
                time_limit=None)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    pid, folder = proc.stdout.readline().split()
    time.sleep(1.0)  # the spin is running
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (Path(folder).exists() or _alive(int(pid))):
        time.sleep(0.2)
    alive = _alive(int(pid))
    if alive:
        os.kill(int(pid), signal.SIGKILL)
    assert not alive, "the worker outlived its caller"
    assert not Path(folder).exists(), f"{folder} was left behind"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def test_a_cache_folder_that_cannot_be_written_is_named(monkeypatch, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(folder))
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == folder else real(p, mode, **kw))
    with pytest.raises(emu.EmuCompileError, match="FASTGEMM_EMU_CACHE=.*not writable"):
        emu.compile("kernel void not_yet_cached(device float* x [[buffer(0)]]) { x[0] = 3.0f; }")


def test_sources_defines_sizes_and_textures_are_checked_naming_the_argument(mod):
    with pytest.raises(ArgumentError, match="not a usable file name"):
        emu.compile("x" * 5000)
    with pytest.raises(ArgumentError, match="unpaired surrogate"):
        emu.compile("kernel void k(device float* x [[buffer(0)]]) { x[0] = 1; } // \udc80\n")
    with pytest.raises(ArgumentTypeError, match=r"defines must be a list .*wrap one in a list"):
        emu.compile(SRC, defines="SCALE=2")
    with pytest.raises(ArgumentError, match="defines: 'A=1\\\\nB' is not NAME or NAME=VALUE"):
        emu.compile(SRC, defines=["A=1\nB"])
    with pytest.raises(ArgumentError, match="at least one texel"):
        emu.Texture(np.zeros((0, 4), np.float32))
    # numpy integers are sizes and indices like ints
    x = np.ones(8, np.float32)
    mod.run("twice", threadgroups=np.int64(2), threads_per_threadgroup=(np.uint32(4),), buffers={np.int64(0): x})
    assert x.tolist() == [2.0] * 8


def test_a_damaged_cache_entry_is_rebuilt_not_used(tmp_path):
    """A truncated module, or a runtime object emptied (which still links, as an empty
    linker script, and gives modules with undefined symbols), in a fresh process."""
    cache = tmp_path / "cache"
    env = dict(os.environ, FASTGEMM_EMU_CACHE=str(cache))
    child = textwrap.dedent(f"""
        import sys, numpy as np
        from fastgemm import emu
        src = {SRC!r}.replace("twice", sys.argv[1])
        x = np.ones(4, np.float32)
        emu.run(src, sys.argv[1], threadgroups=1, threads_per_threadgroup=4, buffers=[x])
        assert x.tolist() == [2.0] * 4, x
        print("ok")
    """)

    def run(name):
        proc = subprocess.run([sys.executable, "-c", child, name], capture_output=True, text=True,
                              timeout=300, env=env)
        assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]

    run("first")
    modules = list(cache.rglob("kernels.so"))
    assert len(modules) == 1
    modules[0].write_bytes(modules[0].read_bytes()[:100])
    run("first")
    objects = sorted(cache.glob("runtime-*/*.o"))
    assert objects
    objects[0].write_bytes(b"")
    run("second")


def test_a_compile_past_the_time_limit_is_stopped(monkeypatch, tmp_path):
    monkeypatch.setenv("FASTGEMM_EMU_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(emu, "COMPILE_TIME_LIMIT_S", 0.01)
    with pytest.raises(emu.EmuCompileError, match="took longer than 0.01 s and was stopped"):
        emu.compile("kernel void slow_to_build(device float* x [[buffer(0)]]) { x[0] = 1; }")


def test_an_empty_buffer_is_refused_naming_it(mod):
    with pytest.raises(ArgumentError, match=r"buffer 0 is empty \(0 bytes\)"):
        mod.run("twice", threadgroups=1, threads_per_threadgroup=1, buffers=[np.zeros(0, np.float32)])


TEXTURE_KINDS_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void plane(texture2d<float, access::read> t [[texture(0)]], device float* o [[buffer(0)]],
                  uint i [[thread_position_in_grid]]) { o[i] = t.read(uint2(i, 0)).x; }
kernel void line(texture1d<float, access::read> t [[texture(0)]], device float* o [[buffer(0)]],
                 uint i [[thread_position_in_grid]]) { o[i] = t.read(i).x; }
"""


@pytest.mark.parametrize("kind, shape", [("1d", (4,)), ("buffer", (4,)), ("2d_array", (1, 1, 4)),
                                         ("3d", (1, 1, 4)), ("cube", (6, 1, 4))])
def test_a_texture_of_another_kind_is_refused_naming_the_kind_to_use(kind, shape):
    """A Metal texture argument takes textures of its own type only: the emulator refused
    none, so a 1d texture bound to a texture2d read its texels as a 2D image."""
    out = np.zeros(4, np.float32)
    texture = emu.Texture(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), kind)
    with pytest.raises(emu.KernelError, match=re.escape(
            f'texture(0): a {kind} texture cannot be bound to a texture2d (make it Texture(data, kind="2d"))')):
        emu.run(TEXTURE_KINDS_SRC, "plane", threadgroups=1, threads_per_threadgroup=4, buffers=[out],
                textures=[texture])


def test_textures_of_the_argument_kind_are_read():
    data = np.arange(4, dtype=np.float32)
    for kernel, texture in [("plane", emu.Texture(data.reshape(1, 4))), ("plane", data.reshape(1, 4)),
                            ("line", emu.Texture(data, "1d"))]:
        out = np.zeros(4, np.float32)
        emu.run(TEXTURE_KINDS_SRC, kernel, threadgroups=1, threads_per_threadgroup=4, buffers=[out],
                textures=[texture])
        np.testing.assert_array_equal(out, data, err_msg=kernel)

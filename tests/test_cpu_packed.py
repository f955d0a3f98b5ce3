"""The packed, register-blocked SIMD SGEMM (src/cpu/packed): every instruction-set path
this CPU can run, against a float64 reference, on shapes that straddle every register
and cache block (1, primes, non-multiples of MR, NR, MC, KC, NC), with transposes,
alpha/beta, leading dimensions wider than the rows, NaN-poisoned outputs, thread
counts 1 and 2, and bit-for-bit determinism."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import fastgemm
from fastgemm import _fastgemm
from conftest import assert_matches, rand, reference

CPU = {k.name: k for k in fastgemm.kernels("cpu")}
LADDER = ["packed_scalar", "packed_regblock", "packed_simd", "packed_blocked", "packed"]
# One name per instruction set; registered only where this CPU can run it.
ISA_KERNELS = {"portable": "packed_portable", "avx2": "packed_avx2", "avx512": "packed_avx512",
               "neon": "packed_neon"}
CPU_ISAS = set(_fastgemm.cpu_isas())  # "scalar", "avx2", "avx512", "neon"
# Every path that runs here: the fast ones, then the portable fallback.
RUNNABLE = [k for k in ("packed", "packed_avx512", "packed_avx2", "packed_neon", "packed_portable",
                        "packed_blocked", "packed_simd") if k in CPU]


def isa_kernel(isa):
    """The forced-ISA kernel, or a skip saying this CPU lacks the instruction set."""
    name = ISA_KERNELS[isa]
    wanted = "scalar" if isa == "portable" else isa
    if wanted not in CPU_ISAS:
        pytest.skip(f"this CPU (or build) has no {isa} support, so {name} is not registered")
    assert name in CPU, f"{isa} is supported here but {name} is not registered"
    return name


@pytest.fixture
def small_blocks(monkeypatch):
    """Tiny cache blocks (read when a kernel is bound) so small problems cross every
    block boundary: several k blocks (beta applied once), row blocks and column blocks."""
    monkeypatch.setenv("FASTGEMM_CPU_KC", "24")
    monkeypatch.setenv("FASTGEMM_CPU_MC", "40")
    monkeypatch.setenv("FASTGEMM_CPU_NC", "72")


@pytest.fixture
def threads():
    saved = fastgemm.get_num_threads()
    yield fastgemm.set_num_threads
    fastgemm.set_num_threads(saved)


def run(kernel, A, B, C=None, **kw):
    return fastgemm.sgemm(A, B, C, kernel=kernel, backend="cpu", **kw)


# --- registration -------------------------------------------------------------------

def test_ladder_steps_registered_in_order():
    steps = [CPU[name].ladder_step for name in LADDER]
    assert steps == sorted(steps) and steps[0] >= 20 and steps[-1] <= 29
    assert CPU["packed"].auto_candidate
    assert not any(CPU[n].auto_candidate for n in LADDER[:-1])
    for name in LADDER + [n for n in ISA_KERNELS.values() if n in CPU]:
        info = CPU[name]
        assert info.precision == "fp32" and not info.baseline
        params = dict(info.params)
        assert {"MR", "NR", "MC", "KC", "NC", "threads"} <= params.keys(), name
        assert info.isa and info.source.startswith("src/cpu/packed/") and info.description
    # Cache-blocked steps carry the blocking derived from this machine's caches.
    blocked = dict(CPU["packed_blocked"].params)
    assert blocked["KC"] > 0 and blocked["MC"] % blocked["MR"] == 0 and blocked["NC"] % blocked["NR"] == 0


def test_selected_isa_is_the_best_supported():
    isas = _fastgemm.cpu_isas()
    assert isas[-1] == "scalar"
    name = _fastgemm.cpu_isa_name()
    if "FASTGEMM_CPU_ISA" not in os.environ:
        assert name.startswith(isas[0])
    simd = CPU["packed_simd"].isa
    assert name.startswith(simd if simd != "portable" else "scalar")
    assert CPU["packed"].isa == CPU["packed_simd"].isa == CPU["packed_blocked"].isa


def test_cache_sizes_detected():
    c = _fastgemm.cpu_cache_sizes()
    assert 4096 <= c["l1d"] <= c["l2"] <= c["l3"]


# --- correctness ----------------------------------------------------------------------

# 1, primes, and non-multiples of MR (4, 6, 8, 12), NR (8, 12, 16, 32) and the small blocks.
EDGE_SHAPES = [(1, 1, 1), (1, 37, 5), (29, 1, 3), (2, 3, 1), (13, 17, 19), (12, 32, 24), (25, 33, 49),
               (41, 73, 97), (97, 131, 53), (6, 16, 7), (101, 7, 211)]


@pytest.mark.parametrize("kernel", LADDER + [n for n in ISA_KERNELS.values() if n in CPU])
@pytest.mark.parametrize("shape", EDGE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_edge_shapes_match_float64(kernel, shape, rng, small_blocks):
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)  # beta = 0 must not read it
    run(kernel, A, B, C)
    assert_matches(C, reference(A, B), "fp32", K, f"{kernel} {shape}")


@pytest.mark.parametrize("isa", list(ISA_KERNELS))
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 1.0), (2.0, -1.5), (0.75, 0.25)])
def test_every_isa_transposes_scalars(isa, trans_a, trans_b, alpha, beta, rng, small_blocks):
    kernel = isa_kernel(isa)
    M, N, K = 67, 83, 59  # several row, column and k blocks with ragged ends
    A = rand(rng, K, M) if trans_a else rand(rng, M, K)
    B = rand(rng, N, K) if trans_b else rand(rng, K, N)
    C0 = rand(rng, M, N)
    C = C0.copy()
    run(kernel, A, B, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    assert_matches(C, reference(A, B, C0, alpha, beta, trans_a, trans_b), "fp32", K,
                   f"{kernel} ta={trans_a} tb={trans_b} alpha={alpha} beta={beta}")


@pytest.mark.parametrize("isa", list(ISA_KERNELS))
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_leading_dimensions_wider_than_rows(isa, trans_a, trans_b, rng, small_blocks):
    """Operands are views into wider arrays (lda, ldb, ldc > row width); the padding
    of C must come back untouched."""
    kernel = isa_kernel(isa)
    M, N, K = 45, 70, 53
    A_store = rand(rng, *((K, M + 11) if trans_a else (M, K + 11)))
    B_store = rand(rng, *((N, K + 5) if trans_b else (K, N + 5)))
    A = A_store[:, :M] if trans_a else A_store[:, :K]
    B = B_store[:, :K] if trans_b else B_store[:, :N]
    C_store = rand(rng, M, N + 9)
    C_before = C_store.copy()
    C = C_store[:, :N]
    run(kernel, A, B, C, alpha=1.5, beta=-0.5, trans_a=trans_a, trans_b=trans_b)
    ref = reference(A, B, C_before[:, :N], 1.5, -0.5, trans_a, trans_b)
    assert_matches(C, ref, "fp32", K, f"{kernel} strided")
    np.testing.assert_array_equal(C_store[:, N:], C_before[:, N:])


@pytest.mark.parametrize("isa", list(ISA_KERNELS))
def test_beta_zero_ignores_nan_and_alpha_zero_scales(isa, rng, small_blocks):
    kernel = isa_kernel(isa)
    A, B = rand(rng, 31, 50), rand(rng, 50, 45)
    C = np.full((31, 45), np.nan, dtype=np.float32)
    run(kernel, A, B, C, alpha=-1.0, beta=0.0)
    assert_matches(C, reference(A, B, None, -1.0), "fp32", 50, f"{kernel} beta=0 over NaN")
    # alpha == 0: C = beta * C, A and B not read (NaN in them must not leak).
    A[:] = np.nan
    C0 = rand(rng, 31, 45)
    C = C0.copy()
    run(kernel, A, B, C, alpha=0.0, beta=0.5)
    np.testing.assert_array_equal(C, C0 * np.float32(0.5))
    C = np.full((31, 45), np.nan, dtype=np.float32)
    run(kernel, A, B, C, alpha=0.0, beta=0.0)
    assert np.all(C == 0)


def test_k_zero_scales_c(rng):
    A, B = np.zeros((5, 0), np.float32), np.zeros((0, 7), np.float32)
    C0 = rand(rng, 5, 7)
    C = C0.copy()
    run("packed", A, B, C, beta=2.0)
    np.testing.assert_array_equal(C, 2 * C0)


@pytest.mark.parametrize("kernel", ["packed", "packed_avx2", "packed_portable"])
@pytest.mark.parametrize("shape", [(300, 257, 300), (7, 515, 130), (515, 9, 130), (64, 64, 1100)],
                         ids=lambda s: "x".join(map(str, s)))
def test_default_blocking_thread_counts_bitwise_equal(kernel, shape, rng, threads):
    """Real cache blocks; rows split (tall), columns split (wide) and K beyond one KC
    block. A given thread count repeats bit for bit, and since every element is summed
    in the same order whatever the split, 1 and 2 threads agree bit for bit too."""
    if kernel not in CPU:
        pytest.skip(f"{kernel}: this CPU lacks its instruction set")
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    threads(2)
    two = run(kernel, A, B)
    again = run(kernel, A, B)
    threads(1)
    one = run(kernel, A, B)
    assert_matches(two, reference(A, B), "fp32", K, f"{kernel} {shape}")
    np.testing.assert_array_equal(two, again)
    np.testing.assert_array_equal(two, one)


@pytest.mark.parametrize("isa", ["avx2", "avx512", "portable"])
def test_forced_isa_environment_variable(isa, rng, tmp_path):
    """FASTGEMM_CPU_ISA picks the path of the ladder's main steps in a fresh process."""
    wanted = "scalar" if isa == "portable" else isa
    if wanted not in CPU_ISAS:
        pytest.skip(f"this CPU has no {isa} support")
    script = (
        "import json, numpy as np, fastgemm\n"
        "from fastgemm import _fastgemm\n"
        "rng = np.random.default_rng(3)\n"
        "A = rng.uniform(-1, 1, (70, 90)).astype(np.float32)\n"
        "B = rng.uniform(-1, 1, (90, 50)).astype(np.float32)\n"
        "C = fastgemm.sgemm(A, B, kernel='packed', backend='cpu')\n"
        "ref = A.astype(np.float64) @ B.astype(np.float64)\n"
        "info = {k.name: k.isa for k in fastgemm.kernels('cpu')}\n"
        "print(json.dumps({'name': _fastgemm.cpu_isa_name(), 'isa': info['packed'],\n"
        "                  'err': float(np.linalg.norm(C - ref) / np.linalg.norm(ref))}))\n"
    )
    env = dict(os.environ, FASTGEMM_CPU_ISA=wanted)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["name"].startswith(wanted)
    assert got["isa"] == isa
    assert got["err"] < _fastgemm.tolerance_for("fp32", 90)


def test_unsupported_isa_request_falls_back_with_a_warning(tmp_path):
    env = dict(os.environ, FASTGEMM_CPU_ISA="no-such-isa")
    out = subprocess.run([sys.executable, "-c", "from fastgemm import _fastgemm; print(_fastgemm.cpu_isa_name())"],
                         env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "FASTGEMM_CPU_ISA" in out.stderr
    assert out.stdout.strip().startswith(_fastgemm.cpu_isas()[0])


def test_packed_passes_native_verification():
    r = fastgemm.benchmark("packed", 200, 150, 170, backend="cpu", warmup=1, iters=2, trans_b=True,
                           alpha=0.5, beta=2.0)
    assert r.verified and r.passed and r.rel_err <= r.tolerance


# --- FMA peak probe -------------------------------------------------------------------

def test_fma_peak_probe_reports_a_rate():
    one = _fastgemm.measure_fma_peak_gflops(1)
    assert math.isfinite(one) and one > 0
    assert _fastgemm.fma_peak_isa() in ("avx512", "avx2+fma", "neon", "scalar")
    both = _fastgemm.measure_fma_peak_gflops(2)
    assert math.isfinite(both) and both > 0

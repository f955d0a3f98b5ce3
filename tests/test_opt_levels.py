"""The optimisation-level ladder (ikj@O0 ... transposed_b_split4@O3fm) and `explain-diff`:
the kernels are correct, carry their flags, stay out of the default bench, and their
accumulation order is what their code says (checked bit for bit against numpy)."""

import ctypes
import ctypes.util
import json
import platform

import numpy as np
import pytest

import fastgemm
from fastgemm import cli, exactness
from conftest import assert_matches, rand, reference

LEVELS = ["O0", "O1", "O2", "O3", "O3fm"]
LOOPS = ["ikj", "ijk", "transposed_b", "transposed_b_split4"]
CPU = {k.name: k for k in fastgemm.kernels("cpu")}
LADDER = [f"{loop}@{level}" for loop in LOOPS for level in LEVELS]
X86 = platform.machine().lower() in ("x86_64", "amd64")


def test_every_loop_is_registered_at_every_level_with_its_flags():
    for loop in LOOPS:
        for i, level in enumerate(LEVELS):
            info = CPU[f"{loop}@{level}"]
            opt = "-O3" if level == "O3fm" else f"-{level}"
            assert info.flags.startswith(opt + " "), info.flags
            assert ("-ffast-math" in info.flags and "no -ffast-math" not in info.flags) == (level == "O3fm")
            assert info.params["opt_level"] == (3 if level == "O3fm" else int(level[1]))
            assert info.params["fast_math"] == (1 if level == "O3fm" else 0)
            assert info.ladder_step >= 40
    main_steps = [k.ladder_step for k in CPU.values() if "@" not in k.name and not k.baseline]
    assert min(CPU[n].ladder_step for n in LADDER) > max(main_steps), "experiments must sort after the ladder"
    assert len({CPU[n].ladder_step for n in LADDER}) == len(LADDER)


def test_default_bench_list_leaves_experiments_out_but_named_ones_run():
    default = cli._select_kernels("cpu", None, None)
    assert default and not any("@" in k.name for k in default)
    named = cli._select_kernels("cpu", "ikj@O0,ijk@O3fm", None)
    assert [k.name for k in named] == ["ikj@O0", "ijk@O3fm"]


@pytest.mark.parametrize("kernel", LADDER)
@pytest.mark.parametrize("shape", [(1, 1, 1), (7, 5, 3), (33, 17, 29), (31, 64, 67)],
                         ids=lambda s: "x".join(map(str, s)))
def test_ladder_kernel_matches_float64(kernel, shape, rng):
    M, N, K = shape
    A, B = rand(rng, M, K), rand(rng, K, N)
    C = np.full((M, N), np.nan, dtype=np.float32)  # beta = 0 must not read C
    fastgemm.sgemm(A, B, C, kernel=kernel, backend="cpu")
    assert_matches(C, reference(A, B), "fp32", K, kernel)


@pytest.mark.parametrize("kernel", LADDER)
@pytest.mark.parametrize("trans_a,trans_b,alpha,beta", [(True, False, -0.5, 1.0), (False, True, 2.0, -1.5),
                                                        (True, True, 1.0, 0.0), (False, False, 0.0, 0.5)])
def test_ladder_kernel_transposes_and_scalars(kernel, trans_a, trans_b, alpha, beta, rng):
    M, N, K = 13, 11, 19
    A = rand(rng, K, M) if trans_a else rand(rng, M, K)
    B = rand(rng, N, K) if trans_b else rand(rng, K, N)
    if alpha == 0.0:
        A[0, 0] = np.nan  # BLAS quick return: alpha == 0 reads neither A nor B
    C = rand(rng, M, N)
    want = beta * C.astype(np.float64) if alpha == 0.0 else reference(A, B, C, alpha, beta, trans_a, trans_b)
    fastgemm.sgemm(A, B, C, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b, kernel=kernel,
                   backend="cpu")
    assert_matches(C, want, "fp32", K, kernel)


# --- the references ------------------------------------------------------------------------

def _libm_fmaf():
    name = ctypes.util.find_library("m") or ("libm.so.6" if platform.system() == "Linux" else None)
    if not name:
        return None
    try:
        f = ctypes.CDLL(name).fmaf
    except (OSError, AttributeError):
        return None
    f.restype = ctypes.c_float
    f.argtypes = [ctypes.c_float] * 3
    return f


def test_fused_reference_is_a_chain_of_true_fmas(rng):
    fmaf = _libm_fmaf()
    if fmaf is None:
        pytest.skip("no C library fmaf to compare with")
    M, N, K = 3, 4, 257
    A, B = rand(rng, M, K), rand(rng, K, N)
    want = np.zeros((M, N), np.float32)
    for i in range(M):
        for j in range(N):
            s = 0.0
            for k in range(K):
                s = fmaf(float(A[i, k]), float(B[k, j]), s)
            want[i, j] = s
    assert np.array_equal(exactness.strict_k_fused(A, B), want)
    assert not np.array_equal(exactness.strict_k_nonfused(A, B), want), "the two references should differ"


def test_nonfused_reference_rounds_every_product():
    # s = -1, then s + (1 + 2^-12)^2 = s + (1 + 2^-11 + 2^-24). Rounded first, the product
    # loses its 2^-24 (a tie at 1, to even); fused, the sum 2^-11 + 2^-24 is exact.
    A = np.array([[1.0, 1.0 + 2.0 ** -12]], np.float32)
    B = np.array([[-1.0], [1.0 + 2.0 ** -12]], np.float32)
    assert exactness.strict_k_nonfused(A, B)[0, 0] == np.float32(2.0 ** -11)
    assert exactness.strict_k_fused(A, B)[0, 0] == np.float32(2.0 ** -11 + 2.0 ** -24)


def test_round_to_float32_breaks_float64_ties_by_the_error_term():
    mid = np.array([1.0 + 2.0 ** -24] * 3)  # halfway between 1 and 1 + 2^-23
    lo = np.array([2.0 ** -60, -(2.0 ** -60), 0.0])
    out = exactness._round_to_float32(mid, lo)
    assert out[0] == np.float32(1.0 + 2.0 ** -23)
    assert out[1] == np.float32(1.0)
    assert out[2] == np.float32(1.0)  # an exact tie goes to even
    neg = exactness._round_to_float32(-mid, -lo)
    assert neg[0] == np.float32(-(1.0 + 2.0 ** -23)) and neg[1] == np.float32(-1.0)


# --- the claims, checked -------------------------------------------------------------------

@pytest.fixture(scope="module")
def operands():
    rng = np.random.default_rng(2024)
    M, N, K = 40, 36, 173  # K prime and > 4: split accumulators and lanes change the tree
    return rand(rng, M, K), rand(rng, K, N)


@pytest.fixture(scope="module")
def references(operands):
    A, B = operands
    return exactness.strict_k_nonfused(A, B), exactness.strict_k_fused(A, B)


@pytest.mark.parametrize("kernel", LADDER + ["ikj", "ijk", "kij", "transposed_b", "transposed_b_split4"])
def test_claimed_order_is_the_measured_order(kernel, operands, references):
    A, B = operands
    nonfused, fused = references
    out = fastgemm.sgemm(A, B, kernel=kernel, backend="cpu")
    claim = exactness.claim_for(CPU[kernel])
    exact = np.array_equal(out, nonfused) or np.array_equal(out, fused)
    if claim.strict_k:
        assert exact, f"{kernel} is written in strict k order but matches neither reference"
        if X86:
            # x86-64 builds have no -mfma: a scalar or SSE loop rounds every product.
            assert np.array_equal(out, nonfused), f"{kernel}: expected two roundings per term on x86-64"
    elif claim.strict_k is False and "split4" in kernel:
        assert not exact, f"{kernel} sums k mod 4 separately and cannot match a single running sum"
    elif claim.strict_k is False and X86:
        # -ffast-math: GCC and Clang vectorise the k reduction across SSE lanes on x86-64.
        assert not exact, f"{kernel}: -ffast-math left the reduction in strict order (compiler change?)"


def test_explain_diff_command(tmp_path, capsys):
    out = tmp_path / "exact.json"
    rc = cli.main(["explain-diff", "--backend", "cpu", "--shape", "24x20x67",
                   "--kernels", "ikj@O0,ikj@O3fm,ijk@O3,transposed_b_split4@O2", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "strict-k" in text and "ikj@O0" in text
    doc = json.loads(out.read_text())
    rows = {r["kernel"]: r for r in doc["kernels"]}
    assert {"ikj@O0", "ikj@O3fm", "ijk@O3", "transposed_b_split4@O2"} <= set(rows)
    assert rows["ikj@O0"]["consistent"] is True and rows["ikj@O0"]["claim_strict_k"] is True
    assert rows["transposed_b_split4@O2"]["verdict"] == "neither"
    if doc["baseline"]:
        base = rows[doc["baseline"]]
        assert base["diff_vs_baseline"] == 0.0
        assert all(r["diff_vs_baseline"] is not None for r in rows.values())
    assert doc["conclusions"]

"""benchmarks/cuda_targets.py: the cuda backend's H200 targets judged on one ladder run's
rows (made up here, shaped as cuda_ladder.py builds them), so no GPU is needed; and
benchmarks/cuda_shapes.py's suite, summaries and behaviour without a GPU."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import cuda_shapes  # noqa: E402
import cuda_targets  # noqa: E402

LADDER = ["cublas", "cublas_tf32", "naive", "async_tma_128x256", "async_tma_256x128", "tf32_wgmma_256x128", "fp32x3_wgmma_128x128"]


def row(kernel, precision, size, ms, rel_err, base, passed=True):
    """One verified kernel's row with its ratios to the run's baselines (`base`: ms)."""
    return dict(kernel=kernel, precision=precision, size=size, device_ms=ms, rel_err=rel_err, passed=passed,
                x_cublas=base["cublas"] / ms, x_cublas_tf32=base["cublas_tf32"] / ms)


def run(size=4096, **ms):
    """A run at one size that meets every target unless `ms` overrides a kernel's time."""
    base = dict(cublas=ms.pop("cublas", 2.70), cublas_tf32=ms.pop("cublas_tf32", 0.36))
    t = dict(naive=300.0, async_tma_128x256=2.56, async_tma_256x128=2.60, tf32_wgmma_256x128=0.35, fp32x3_wgmma_128x128=1.0) | ms
    return [row("cublas", "fp32", size, base["cublas"], 1.2e-6, base),
            row("cublas_tf32", "tf32", size, base["cublas_tf32"], 2.9e-4, base),
            row("naive", "fp32", size, t["naive"], 1.0e-6, base),
            row("async_tma_128x256", "fp32", size, t["async_tma_128x256"], 1.1e-6, base),
            row("async_tma_256x128", "fp32", size, t["async_tma_256x128"], 1.1e-6, base),
            row("tf32_wgmma_256x128", "tf32", size, t["tf32_wgmma_256x128"], 2.6e-4, base),
            row("fp32x3_wgmma_128x128", "fp32x3", size, t["fp32x3_wgmma_128x128"], 4.8e-7, base)]


def verdicts(results, wall_s=120.0):
    return {(v.target, v.size): v for v in cuda_targets.check(results, LADDER, wall_s)}


def test_a_run_that_meets_every_target_says_so():
    vs = verdicts(run(4096) + run(8192, cublas=21.6, cublas_tf32=2.72, async_tma_128x256=20.0, async_tma_256x128=20.4,
                                  tf32_wgmma_256x128=2.74, fp32x3_wgmma_128x128=8.6))
    assert all(v.met for v in vs.values()), vs
    assert len(vs) == 7
    assert "async_tma_128x256 1.055x" in vs[(cuda_targets.STRICT_FP32, 4096)].detail
    assert cuda_targets.markdown(list(vs.values())).endswith("every target met in this run")


def test_strict_fp32_is_judged_on_the_fastest_kernel_within_the_error_bound():
    results = run(async_tma_128x256=2.60, async_tma_256x128=2.55)
    v = verdicts(results)[(cuda_targets.STRICT_FP32, 4096)]
    assert v.met and v.detail.startswith("async_tma_256x128 1.059x")
    results[4]["rel_err"] = 3e-6  # the fast one is not accurate enough: the next one counts
    v = verdicts(results)[(cuda_targets.STRICT_FP32, 4096)]
    assert v.met is False and v.detail.startswith("async_tma_128x256 1.038x")


def test_a_miss_by_a_thousandth_is_a_miss():
    v = verdicts(run(async_tma_128x256=2.70 / 1.049))[(cuda_targets.STRICT_FP32, 4096)]
    assert v.met is False and "1.049x" in v.detail


def test_an_unverified_kernel_never_counts_however_fast():
    results = run(async_tma_128x256=2.60, async_tma_256x128=2.60)
    results.append(row("async_tma_128x128", "fp32", 4096, 1.0, 1e-7, dict(cublas=2.70, cublas_tf32=0.36),
                       passed=False))
    assert verdicts(results)[(cuda_targets.STRICT_FP32, 4096)].met is False


def test_fp32x3_needs_its_error_within_twice_cublas_s_as_well_as_the_speed():
    results = run()
    assert verdicts(results)[(cuda_targets.FP32X3, 4096)].met
    results[6]["rel_err"] = 1.9e-6  # under 2e-6 and under 2 x cublas's 1.2e-6
    assert verdicts(results)[(cuda_targets.FP32X3, 4096)].met
    results[0]["rel_err"] = 0.9e-6  # cublas more accurate on these inputs: over 2 x 0.9e-6
    assert verdicts(results)[(cuda_targets.FP32X3, 4096)].met is False
    assert verdicts(run(fp32x3_wgmma_128x128=2.70 / 2.49))[(cuda_targets.FP32X3, 4096)].met is False


def test_tf32_is_judged_against_cublas_tf32_not_cublas():
    assert verdicts(run(tf32_wgmma_256x128=0.36 / 0.951))[(cuda_targets.TF32, 4096)].met
    v = verdicts(run(tf32_wgmma_256x128=0.36 / 0.94))[(cuda_targets.TF32, 4096)]
    assert v.met is False and "0.940x" in v.detail


def test_what_the_run_left_out_is_not_measured_rather_than_missed():
    vs = verdicts(run(4096))
    for target in (cuda_targets.STRICT_FP32, cuda_targets.FP32X3, cuda_targets.TF32):
        assert vs[(target, 8192)].met is None and "8192^3 not in this run" in vs[(target, 8192)].detail
    no_tf32_baseline = [r for r in run(4096) if r["kernel"] != "cublas_tf32"]
    assert verdicts(no_tf32_baseline)[(cuda_targets.TF32, 4096)].met is None
    text = cuda_targets.markdown(list(vs.values()))
    assert text.endswith("4 of 7 targets met in this run (3 not measured)")


@pytest.mark.parametrize("change, problem", [
    (lambda rs: [r for r in rs if r["kernel"] != "naive"], "not run: naive"),
    (lambda rs: rs[:2] + [dict(kernel="naive", size=4096, error="RuntimeError: launch failed")] + rs[3:],
     "failed: naive"),
    (lambda rs: [dict(r, passed=False) if r["kernel"] == "naive" else r for r in rs], "failed: naive"),
])
def test_the_whole_ladder_target_needs_every_rung_verified(change, problem):
    v = verdicts(change(run()))[(cuda_targets.WHOLE_LADDER, 4096)]
    assert v.met is False and problem in v.detail


def test_the_whole_ladder_target_needs_the_run_within_ten_minutes():
    assert verdicts(run(), wall_s=599.0)[(cuda_targets.WHOLE_LADDER, 4096)].met
    assert verdicts(run(), wall_s=601.0)[(cuda_targets.WHOLE_LADDER, 4096)].met is False


# --- benchmarks/cuda_shapes.py -------------------------------------------------------

def test_shape_suite_covers_what_users_call():
    full, quick = cuda_shapes.suite(), cuda_shapes.suite(quick=True)
    labels = [s.label for s in full]
    assert len(labels) == len(set(labels)), "labels name rows in tables and JSON: unique"
    assert {s.label for s in quick} < set(labels)
    cats = {s.category for s in full}
    assert {"inference", "training", "K-heavy", "tall-skinny", "square", "odd"} <= cats
    assert {s.op for s in full} == {"NN", "NT", "TN", "TT"}
    ms = [s.M for s in full if s.category == "inference"]
    assert min(ms) == 1 and max(ms) == 8192, "tokens from 1 to 8192"
    assert all(1 <= s.N <= 16384 and 1 <= s.K <= 65536 for s in full)
    assert any(s.memory_bound for s in full) and any(not s.memory_bound for s in full)
    # PyTorch Linear's layout, W stored N x K: x @ W^T is trans_b.
    assert all(s.trans_b and not s.trans_a for s in full if s.label.startswith(("decode", "prefill")))
    # primes and off-by-one sizes
    assert any(s.M % 2 and s.N % 2 and s.K % 2 for s in full if s.category == "odd")


def test_shape_suite_names_the_blas_behind_numpy_arrays():
    class Info:
        description = "vendor BLAS cblas_sgemm: OpenBLAS 0.3.34 (core SkylakeX)"

    class WithBlas:
        @staticmethod
        def kernel_info(backend, name):
            assert (backend, name) == ("cpu", "openblas")
            return Info()

    class WithoutBlas:
        @staticmethod
        def kernel_info(backend, name):
            raise KeyError(name)

    assert cuda_shapes.host_blas(WithBlas) == "OpenBLAS 0.3.34 (core SkylakeX)"
    assert cuda_shapes.host_blas(WithoutBlas) == "none"


def _row(label, **ratios):
    base = dict.fromkeys(cuda_shapes.RATIOS)
    base.update(ratios)
    return dict(label=label, ratios=base, pct_copy_bw=None)


def test_shape_summary_geomeans_and_worst():
    rows = [_row("a", auto_vs_torch=2.0, strict_vs_cublas=1.1), _row("b", auto_vs_torch=0.5),
            _row("c", auto_vs_torch=4.0, strict_vs_cublas=0.9)]
    rows[1]["pct_copy_bw"] = 71.0
    s = cuda_shapes.summarize(rows, worst=2)
    assert s["auto_vs_torch"]["geomean"] == pytest.approx((2.0 * 0.5 * 4.0) ** (1 / 3))
    assert [w["label"] for w in s["auto_vs_torch"]["worst"]] == ["b", "a"]
    assert s["strict_vs_cublas"]["shapes"] == 2 and s["strict_vs_cublas"]["worst"][0]["label"] == "c"
    assert s["tf32_vs_cublas_tf32"] == dict(geomean=None, shapes=0, worst=[])
    assert s["memory_bound_pct_copy_bw"]["min"] == 71.0


def test_shape_ratios_are_other_over_ours():
    res = dict(cublas=dict(ms=2.0), best_fp32=dict(ms=1.0), torch=dict(ms=3.0), auto_torch=dict(ms=6.0),
               numpy=dict(ms=10.0), torch_copy=dict(ms=4.0), numpy_fastgemm=dict(ms=5.0))
    x = cuda_shapes.row_ratios(res)
    assert x["strict_vs_cublas"] == 2.0 and x["auto_vs_torch"] == 0.5
    assert x["numpy_vs_best_host"] == pytest.approx(0.8)  # the faster host library: torch copy, 4 ms
    assert x["tf32_vs_cublas_tf32"] is None


def _cuda_usable():
    import fastgemm
    from fastgemm import _fastgemm

    return bool(getattr(_fastgemm, "built_with_cuda", False)) and next(
        b for b in fastgemm.backends() if b.name == "cuda").available


def test_shape_suite_without_a_gpu_says_why_in_one_line():
    if _cuda_usable():
        pytest.skip("a CUDA GPU is usable here: the no-GPU message cannot be reached")
    p = subprocess.run([sys.executable, str(BENCHMARKS / "cuda_shapes.py"), "--quick"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cuda_shapes: "), p.stdout
    assert "cuda" in lines[0].lower() or "GPU" in lines[0]
    assert p.stderr == ""

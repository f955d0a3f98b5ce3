"""The cuda backend's performance targets on the H200 (issue 6), checked on the rows of one
run of cuda_ladder.py, so that every ratio in a verdict comes from the same run. At 4096^3
and at 8192^3:

- the best strict-fp32 kernel >= 1.05x cuBLAS SGEMM, relative error <= 2e-6;
- fp32x3 >= 2.5x cuBLAS SGEMM, relative error <= 2e-6 and at most 2x cuBLAS SGEMM's on
  the same inputs;
- the best tf32 kernel >= 0.95x cuBLAS TF32.

And every rung of the ladder verified and timed at 4096^3, the whole run within 10 minutes.

A row is one kernel at one size as cuda_ladder.py builds it (kernel, precision, size,
passed, rel_err, x_cublas, x_cublas_tf32, or kernel and error when it failed to run).
A verdict's `met` is None where the run did not measure what the target needs (a size
or a baseline left out), so that a partial run never reads as a miss or a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

SIZES = (4096, 8192)
LADDER_SIZE = 4096
BASELINES = ("cublas", "cublas_tf32")

STRICT_FP32_MIN_X = 1.05
FP32X3_MIN_X = 2.5
FP32_ACCURATE_MAX_ERR = 2e-6  # relative error bound of both FP32-accurate targets
FP32X3_MAX_ERR_VS_CUBLAS = 2.0
TF32_MIN_X = 0.95
LADDER_MAX_SECONDS = 600.0

STRICT_FP32 = f"best strict-fp32 kernel >= {STRICT_FP32_MIN_X}x cublas, rel err <= {FP32_ACCURATE_MAX_ERR:.0e}"
FP32X3 = (f"fp32x3 >= {FP32X3_MIN_X}x cublas, rel err <= {FP32_ACCURATE_MAX_ERR:.0e} "
          f"and <= {FP32X3_MAX_ERR_VS_CUBLAS:g}x cublas's")
TF32 = f"best tf32 kernel >= {TF32_MIN_X}x cublas_tf32"
WHOLE_LADDER = f"every rung verified and timed at {LADDER_SIZE}^3, the run within {LADDER_MAX_SECONDS / 60:.0f} min"


@dataclass(frozen=True)
class Verdict:
    target: str
    size: int
    met: bool | None  # None: not measured in this run
    detail: str


def _verified(rows: list[dict]) -> list[dict]:
    """The rows of kernels that ran and passed verification, baselines left out."""
    return [r for r in rows if "error" not in r and r.get("passed") and r["kernel"] not in BASELINES]


def _baseline(rows: list[dict], kernel: str) -> dict | None:
    return next((r for r in rows if r["kernel"] == kernel and "error" not in r), None)


def _strict_fp32(rows: list[dict], size: int) -> Verdict:
    if _baseline(rows, "cublas") is None:
        return Verdict(STRICT_FP32, size, None, "cublas not timed")
    accurate = [r for r in _verified(rows) if r["precision"] == "fp32" and r["rel_err"] <= FP32_ACCURATE_MAX_ERR]
    if not accurate:
        return Verdict(STRICT_FP32, size, False, "no strict-fp32 kernel verified within the error bound")
    best = max(accurate, key=lambda r: r["x_cublas"])
    return Verdict(STRICT_FP32, size, best["x_cublas"] >= STRICT_FP32_MIN_X,
                   f"{best['kernel']} {best['x_cublas']:.3f}x, rel err {best['rel_err']:.2e}")


def _fp32x3(rows: list[dict], size: int) -> Verdict:
    cublas = _baseline(rows, "cublas")
    if cublas is None:
        return Verdict(FP32X3, size, None, "cublas not timed")
    split = [r for r in _verified(rows) if r["precision"] == "fp32x3"]
    if not split:
        return Verdict(FP32X3, size, False, "no fp32x3 kernel verified")
    best = max(split, key=lambda r: r["x_cublas"])
    err_bound = min(FP32_ACCURATE_MAX_ERR, FP32X3_MAX_ERR_VS_CUBLAS * cublas["rel_err"])
    met = best["x_cublas"] >= FP32X3_MIN_X and best["rel_err"] <= err_bound
    return Verdict(FP32X3, size, met, f"{best['kernel']} {best['x_cublas']:.3f}x, rel err {best['rel_err']:.2e} "
                                      f"(cublas {cublas['rel_err']:.2e})")


def _tf32(rows: list[dict], size: int) -> Verdict:
    if _baseline(rows, "cublas_tf32") is None:
        return Verdict(TF32, size, None, "cublas_tf32 not timed")
    tf32 = [r for r in _verified(rows) if r["precision"] == "tf32"]
    if not tf32:
        return Verdict(TF32, size, False, "no tf32 kernel verified")
    best = max(tf32, key=lambda r: r["x_cublas_tf32"])
    return Verdict(TF32, size, best["x_cublas_tf32"] >= TF32_MIN_X, f"{best['kernel']} {best['x_cublas_tf32']:.3f}x")


def _whole_ladder(rows: list[dict], ladder: list[str], wall_s: float) -> Verdict:
    ran = {r["kernel"]: r for r in rows}
    if not ran:
        return Verdict(WHOLE_LADDER, LADDER_SIZE, None, f"{LADDER_SIZE}^3 not in this run")
    missing = [k for k in ladder if k not in ran]
    failed = [k for k, r in ran.items() if "error" in r or not r.get("passed")]
    problems = ([f"not run: {', '.join(missing)}"] if missing else []) + (
        [f"failed: {', '.join(failed)}"] if failed else [])
    met = not problems and wall_s <= LADDER_MAX_SECONDS
    return Verdict(WHOLE_LADDER, LADDER_SIZE, met,
                   "; ".join(problems + [f"{len(ran)} kernels in {wall_s:.0f} s (build not included)"]))


def check(results: list[dict], ladder: list[str], wall_s: float) -> list[Verdict]:
    """Every target's verdict for one run: `results` is the run's rows (all sizes),
    `ladder` the names of every cuda kernel, `wall_s` the run's duration."""
    by_size = {s: [r for r in results if r["size"] == s] for s in SIZES}
    verdicts = []
    for target, check_one in ((STRICT_FP32, _strict_fp32), (FP32X3, _fp32x3), (TF32, _tf32)):
        for s in SIZES:
            absent = Verdict(target, s, None, f"{s}^3 not in this run")
            verdicts.append(check_one(by_size[s], s) if by_size[s] else absent)
    verdicts.append(_whole_ladder(by_size[LADDER_SIZE], ladder, wall_s))
    return verdicts


def markdown(verdicts: list[Verdict]) -> str:
    """The verdicts as a table, one row per target, a column per size."""
    word = {True: "met", False: "**not met**", None: "not measured"}
    lines = ["| target | " + " | ".join(f"{s}^3" for s in SIZES) + " |", "|---" * (1 + len(SIZES)) + "|"]
    for target in dict.fromkeys(v.target for v in verdicts):
        cells = {v.size: f"{word[v.met]}: {v.detail}" for v in verdicts if v.target == target}
        lines.append(f"| {target} | " + " | ".join(cells.get(s, "") for s in SIZES) + " |")
    met = sum(v.met is True for v in verdicts)
    unmeasured = sum(v.met is None for v in verdicts)
    summary = ("every target met in this run" if met == len(verdicts)
               else f"{met} of {len(verdicts)} targets met in this run"
               + (f" ({unmeasured} not measured)" if unmeasured else ""))
    return "\n".join(lines) + f"\n\n{summary}"

"""Which kernels add up each output in strict increasing-k order (`fastgemm explain-diff`).

Seed 003 ("Chasing the zero") saw some loops match Accelerate bit for bit and guessed why:
the matching loops give every C(i, j) its K products in strict increasing k order, with
one running sum, and so (it guessed) does Accelerate. This module turns the guess into a
check that does not depend on any vendor library. It computes two float32 references in
numpy, both one running sum per output in increasing k:

  non-fused  s = fl(s + fl(a * b))   the product is rounded, then the sum (two roundings)
  fused      s = fl(s + a * b)       one rounding per term, what an FMA instruction does

and reports, per kernel, whether its output is bit-identical to one of them, to both (only
possible when no rounding ever differed), or to neither, next to its max |diff| against the
vendor baseline. Each kernel also carries a claim read from how it is written (strict k
order or not); a claim that the check contradicts is printed as such.

On x86-64 the package is compiled without -mfma, so the scalar and SSE loops cannot fuse and
should match the non-fused reference. Whether the BLAS baseline matches either reference is
a property of that library on this machine, reported as measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from . import _fastgemm, api

# float64 carries 29 more fraction bits than float32.
_F64_TO_F32_DROPPED_BITS = 29


def strict_k_nonfused(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """sum_k A[:, k] * B[k, :] as one float32 running sum per output, k = 0, 1, ...,
    each product rounded to float32 before it is added (no FMA)."""
    A = np.asarray(A, dtype=np.float32)
    B = np.asarray(B, dtype=np.float32)
    M, K = A.shape
    s = np.zeros((M, B.shape[1]), dtype=np.float32)
    prod = np.empty_like(s)
    for k in range(K):
        np.multiply(A[:, k:k + 1], B[k:k + 1, :], out=prod)  # float32 * float32 -> rounded float32
        s += prod
    return s


def _round_to_float32(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """float32 nearest to hi + lo (exactly), where hi = fl64(hi + lo) and lo is its error.

    Rounding hi alone gives the right float32 except when hi sits exactly halfway between
    two float32 values and lo is not zero: then the exact sum lies off the tie, on the side
    lo points to. (hi cannot be on the other side of a float32 midpoint from the exact sum,
    since the midpoint is a float64 and would be nearer.)
    """
    out = hi.astype(np.float32)
    bits = hi.view(np.uint64)
    low_mask = np.uint64((1 << _F64_TO_F32_DROPPED_BITS) - 1)
    half = np.uint64(1 << (_F64_TO_F32_DROPPED_BITS - 1))
    tie = ((bits & low_mask) == half) & (lo != 0)
    if np.any(tie):
        idx = np.nonzero(tie)
        b = bits[idx] & ~low_mask  # hi truncated toward zero onto the float32 grid
        away = np.signbit(lo[idx]) == np.signbit(hi[idx])  # exact sum larger in magnitude than hi
        b = np.where(away, b + np.uint64(1 << _F64_TO_F32_DROPPED_BITS), b)
        out[idx] = b.view(np.float64).astype(np.float32)  # exact: b is on the float32 grid
    return out


def strict_k_fused(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """sum_k A[:, k] * B[k, :] as one float32 running sum per output, k = 0, 1, ...,
    each step a correctly rounded fused multiply-add: s = fl32(s + a * b).

    a * b of two float32 is exact in float64 (48 significant bits); s + a*b is formed in
    float64 with its rounding error (Knuth's TwoSum), and the pair is rounded once to
    float32, so the result is exactly what an FMA unit returns.
    """
    A64 = np.asarray(A, dtype=np.float32).astype(np.float64)
    B64 = np.asarray(B, dtype=np.float32).astype(np.float64)
    M, K = A64.shape
    s = np.zeros((M, B64.shape[1]), dtype=np.float32)
    for k in range(K):
        p = A64[:, k:k + 1] * B64[k:k + 1, :]  # exact
        a = s.astype(np.float64)
        hi = a + p
        bb = hi - a
        lo = (a - (hi - bb)) + (p - bb)  # hi + lo == a + p exactly
        s = _round_to_float32(hi, lo)
    return s


# --- what each kernel claims, from how it is written ------------------------------------

@dataclass
class Claim:
    strict_k: Optional[bool]  # True: strict increasing k by construction; False: not; None: unknown
    why: str


_INNER_J_OR_I = ("each C(i,j) receives its k terms in increasing k; vectorising runs across "
                 "j (or i), never across k")


def claim_for(info) -> Claim:
    """The accumulation order a kernel is written to have (None where the code does not say)."""
    name = info.name
    base, _, level = name.partition("@")
    fast_math = "-ffast-math" in (info.flags or "") and "no -ffast-math" not in (info.flags or "")
    if info.baseline:
        return Claim(None, "vendor library: its order is what this check measures")
    if base in ("ikj", "kij", "jki", "kji", "ikj_threads") or re.fullmatch(r"tiled_ikj_\d+", base):
        if base.startswith("tiled"):
            return Claim(True, "kk blocks in increasing order, k increasing inside each: " + _INNER_J_OR_I)
        if base == "ikj_threads":
            return Claim(True, "rows split across threads; inside a row " + _INNER_J_OR_I)
        return Claim(True, _INNER_J_OR_I)
    if base in ("ijk", "jik", "transposed_b"):
        if fast_math:
            return Claim(False, "one running sum over k, but -ffast-math lets the compiler split the "
                                "reduction across vector lanes (reassociation)")
        return Claim(True, "one running sum over k; without -ffast-math the compiler may not reorder it")
    if base == "transposed_b_split4":
        return Claim(False, "four partial sums (k mod 4) added at the end: a different addition tree")
    return Claim(None, "not stated by the kernel (blocked or library code)")


# --- the check ----------------------------------------------------------------------------

@dataclass
class KernelExactness:
    kernel: str
    flags: str
    claim_strict_k: Optional[bool]
    claim_why: str
    matches_nonfused: bool
    matches_fused: bool
    diff_vs_nonfused: float
    diff_vs_fused: float
    diff_vs_baseline: Optional[float]
    elements_differing_from_baseline: Optional[int]
    baseline: Optional[str]
    verdict: str = ""
    consistent: Optional[bool] = None  # claim vs measurement; None when nothing was claimed
    extra: dict = field(default_factory=dict)


def _verdict(nonfused: bool, fused: bool) -> str:
    if nonfused and fused:
        return "strict k (both references agree here)"
    if nonfused:
        return "strict k, non-fused"
    if fused:
        return "strict k, fused (FMA)"
    return "neither"


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0


def check(backend: str, kernels: List, A: np.ndarray, B: np.ndarray, baseline: Optional[str],
          progress=lambda items, desc: items) -> Tuple[List[KernelExactness], dict]:
    """Runs every kernel once on (A, B) and classifies its output against both references."""
    import time

    t0 = time.perf_counter()
    ref_nf = strict_k_nonfused(A, B)
    t1 = time.perf_counter()
    ref_f = strict_k_fused(A, B)
    t2 = time.perf_counter()
    base_out = api.sgemm(A, B, kernel=baseline, backend=backend) if baseline else None
    meta = {"reference_seconds": {"nonfused": t1 - t0, "fused": t2 - t1},
            "references_identical": bool(np.array_equal(ref_nf, ref_f)),
            "references_differ_in": int(np.count_nonzero(ref_nf != ref_f)),
            "reference_diff": _max_abs(ref_nf, ref_f)}
    rows: List[KernelExactness] = []
    infos = list(kernels)
    if baseline:
        infos = [_fastgemm.kernel_info(backend, baseline)] + [k for k in infos if k.name != baseline]
    for info in progress(infos, f"explain-diff {backend}"):
        out = base_out if (baseline and info.name == baseline) else api.sgemm(A, B, kernel=info.name,
                                                                               backend=backend)
        c = claim_for(info)
        nf, fu = bool(np.array_equal(out, ref_nf)), bool(np.array_equal(out, ref_f))
        r = KernelExactness(
            kernel=info.name, flags=info.flags or info.isa or "", claim_strict_k=c.strict_k, claim_why=c.why,
            matches_nonfused=nf, matches_fused=fu,
            diff_vs_nonfused=_max_abs(out, ref_nf), diff_vs_fused=_max_abs(out, ref_f),
            diff_vs_baseline=None if base_out is None else _max_abs(out, base_out),
            elements_differing_from_baseline=None if base_out is None else int(np.count_nonzero(out != base_out)),
            baseline=baseline, verdict=_verdict(nf, fu))
        if c.strict_k is not None:
            r.consistent = (nf or fu) == c.strict_k
        rows.append(r)
    return rows, meta


def _fmt(d: Optional[float]) -> str:
    if d is None:
        return "-"
    return "0" if d == 0 else f"{d:.3g}"


def table(rows: List[KernelExactness], baseline: Optional[str]) -> str:
    claim_txt = {True: "strict k", False: "not strict", None: "unknown"}
    head = (f"{'kernel':<26} {'claim (code)':<12} {'measured':<26} {'vs strict-k':>11} {'vs strict-k':>11} "
            f"{'max|diff| vs ' + (baseline or 'baseline'):>22}")
    head2 = f"{'':<26} {'':<12} {'':<26} {'non-fused':>11} {'fused':>11}"
    lines = [head, head2, "-" * len(head)]
    for r in rows:
        flag = "" if r.consistent is not False else "   <- contradicts the claim"
        lines.append(f"{r.kernel:<26} {claim_txt[r.claim_strict_k]:<12} {r.verdict:<26} "
                     f"{_fmt(r.diff_vs_nonfused):>11} {_fmt(r.diff_vs_fused):>11} "
                     f"{(_fmt(r.diff_vs_baseline) if r.kernel != baseline else 'baseline'):>22}{flag}")
    return "\n".join(lines)


def conclusions(rows: List[KernelExactness], baseline: Optional[str], meta: dict) -> List[str]:
    """Plain sentences on what the measurement shows (and does not)."""
    out = []
    claimed = [r for r in rows if r.claim_strict_k]
    held = [r for r in claimed if r.matches_nonfused or r.matches_fused]
    broke = [r for r in claimed if not (r.matches_nonfused or r.matches_fused)]
    if claimed:
        out.append(f"{len(held)} of {len(claimed)} kernels written in strict k order are bit-identical to a "
                   f"strict-k reference" + (f"; NOT: {', '.join(r.kernel for r in broke)}" if broke else "."))
    not_strict = [r for r in rows if r.claim_strict_k is False]
    surprise = [r for r in not_strict if r.matches_nonfused or r.matches_fused]
    if not_strict:
        out.append(f"{len(not_strict) - len(surprise)} of {len(not_strict)} kernels whose order is not strict "
                   f"(split accumulators, -ffast-math) differ from both references"
                   + (f"; these still match one (the compiler kept the order): "
                      f"{', '.join(r.kernel for r in surprise)}" if surprise else "."))
    fused = [r.kernel for r in rows if r.matches_fused and not r.matches_nonfused]
    if fused:
        out.append(f"fused (FMA) strict-k order: {', '.join(fused)}")
    if baseline:
        b = next((r for r in rows if r.kernel == baseline), None)
        if b is not None:
            if b.matches_nonfused or b.matches_fused:
                out.append(f"{baseline} matches the {b.verdict.split(', ')[-1]} strict-k reference bit for bit: "
                           f"on this machine and size it accumulates like the strict-k loops (the seed's guess "
                           f"about Accelerate, here true of {baseline}).")
            else:
                out.append(f"{baseline} matches neither strict-k reference (max |diff| {_fmt(b.diff_vs_nonfused)} "
                           f"non-fused, {_fmt(b.diff_vs_fused)} fused): it does not add each output in strict k "
                           f"order here, so the strict-k loops cannot match it bit for bit (seed 003's zeros were "
                           f"against Accelerate); only code that sums in {baseline}'s own order can.")
            zero = [r.kernel for r in rows if r.kernel != baseline and r.diff_vs_baseline == 0]
            if zero:
                out.append(f"bit-identical to {baseline}: {', '.join(zero)}")
    if meta.get("references_identical"):
        out.append("the two references are identical for these inputs, so fused and non-fused cannot be told "
                   "apart here (try a larger K)")
    else:
        out.append(f"the two references differ in {meta['references_differ_in']} elements "
                   f"(max {_fmt(meta['reference_diff'])}), so the check does tell fused from non-fused.")
    return out

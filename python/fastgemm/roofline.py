"""The roofline model: measured ceilings, the no-cache intensity of each kernel, charts.

Following seed 000: a kernel doing F FLOPs that asks device memory for Q bytes has
intensity I = F / Q and can reach at most min(P, I * beta), where P (compute) and beta
(bandwidth) are this machine's roofs, measured by probes. Q here is the *no-cache*
count: the bytes the kernel's tiles request, as if every load reached memory. Caches
make the real traffic smaller, so measured points may sit above their no-cache roof;
profiler-measured bytes (`fastgemm profile`) give the true position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from . import _fastgemm
from .errors import FastgemmError

_ceilings_cache: Dict[str, object] = {}

# The probes run this many times and each ceiling is the best trial: a competing load
# during one trial can only make it lower, never higher.
PROBE_TRIALS = 3


@dataclass
class Ceilings:
    """A backend's measured roofs: the best of `trials` probe runs."""

    peak_gflops: float
    bandwidth_gbs: float
    peak_probe: str
    bandwidth_probe: str
    trials: int
    peak_trials: Tuple[float, ...] = ()
    bandwidth_trials: Tuple[float, ...] = ()
    # (matrix unit, best measured G operations/s): roofs of the rungs that do not run on
    # the FP32 pipes (the int8 tensor cores of the fp32_ozaki rung).
    matrix_peaks: Tuple[Tuple[str, float], ...] = ()

    def to_dict(self) -> dict:
        return {"peak_gflops": self.peak_gflops, "bandwidth_gbs": self.bandwidth_gbs,
                "peak_probe": self.peak_probe, "bandwidth_probe": self.bandwidth_probe, "trials": self.trials,
                "peak_trials": list(self.peak_trials), "bandwidth_trials": list(self.bandwidth_trials),
                "matrix_peaks_gops": {name: gops for name, gops in self.matrix_peaks}}


def best_of_trials(backend: str, trials: int = PROBE_TRIALS, probe=None) -> Optional[Ceilings]:
    """Runs the backend's probes `trials` times and keeps the best of each ceiling (None
    when the backend has no probes). `probe` replaces _fastgemm.measure_ceilings in tests."""
    probe = probe or _fastgemm.measure_ceilings
    runs = []
    for _ in range(max(1, trials)):
        c = probe(backend)
        if c is None or not (c.peak_gflops > 0 or c.bandwidth_gbs > 0):
            return None
        runs.append(c)
    peak = max(runs, key=lambda c: c.peak_gflops)
    bandwidth = max(runs, key=lambda c: c.bandwidth_gbs)
    matrix = {}
    for c in runs:
        for name, gops in getattr(c, "matrix_peaks_gops", ()):
            matrix[name] = max(matrix.get(name, 0.0), gops)
    return Ceilings(peak.peak_gflops, bandwidth.bandwidth_gbs,
                    f"{peak.peak_probe}; best of {len(runs)} trials", f"{bandwidth.bandwidth_probe}; best of "
                    f"{len(runs)} trials", len(runs), tuple(c.peak_gflops for c in runs),
                    tuple(c.bandwidth_gbs for c in runs), tuple(matrix.items()))


def cached_ceilings(backend: str):
    """The backend's measured ceilings, the best of PROBE_TRIALS probe runs, probed once
    per process (None when it has no probes)."""
    if backend not in _ceilings_cache:
        try:
            c = best_of_trials(backend)
        except FastgemmError:  # an unavailable backend: no roofline here
            c = None
        _ceilings_cache[backend] = c
    return _ceilings_cache[backend]


def tile_reuse(info) -> Tuple[int, int]:
    """(rows of C, columns of C) that one loaded element of B and of A serves.

    Read from the kernel's tile parameters: an explicit reuse_m x reuse_n, a
    threadgroup/block tile BM x BN, a register block MR x NR, or a square `tile`; loop
    kernels without tiles reuse nothing (each multiply-add requests both operands).
    """
    p = info.params
    for rows, cols in (("reuse_m", "reuse_n"), ("BM", "BN"), ("MR", "NR"), ("TM", "TN")):
        if p.get(rows) and p.get(cols):
            return int(p[rows]), int(p[cols])
    if p.get("tile"):
        return int(p["tile"]), int(p["tile"])
    return 1, 1


@dataclass
class Intensity:
    flops: float
    bytes: float

    @property
    def flop_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes else math.inf


def no_cache_intensity(info, M: int, N: int, K: int, beta: float = 0.0) -> Intensity:
    """FLOPs and the bytes the kernel's tiles request from device memory, without caches.

    Each element of A is loaded once per column block of C (ceil(N / tile_n) times),
    each element of B once per row block (ceil(M / tile_m) times), and C is written once
    (and read once when beta != 0). For T x T tiles this gives seed 000's T / 4 FLOP/byte;
    for the naive kernel 0.25.
    """
    rm, rn = tile_reuse(info)
    a_loads = M * K * math.ceil(N / rn)
    b_loads = K * N * math.ceil(M / rm)
    c_traffic = M * N * (2 if beta != 0.0 else 1)
    return Intensity(2.0 * M * N * K, 4.0 * (a_loads + b_loads + c_traffic))


def roof(ceilings, flop_per_byte: float) -> float:
    """Attainable GFLOP/s at this intensity: min(peak, I * bandwidth)."""
    return min(ceilings.peak_gflops, flop_per_byte * ceilings.bandwidth_gbs)


def ridge(ceilings) -> float:
    """Intensity where the bandwidth roof meets the compute roof."""
    return ceilings.peak_gflops / ceilings.bandwidth_gbs


def _number_points(ax, items):
    """Labels each point with its number; crowded numbers are nudged apart."""
    placed = []  # label positions in axes fractions
    trans = ax.transData + ax.transAxes.inverted()
    for number, (x, y) in items:
        fx, fy = trans.transform((x, y))
        dx, dy = 0.008, 0.006
        while any(abs(fx + dx - px) < 0.022 and abs(fy + dy - py) < 0.022 for px, py in placed):
            dx += 0.022
        placed.append((fx + dx, fy + dy))
        ax.text(fx + dx, fy + dy, str(number), transform=ax.transAxes, fontsize=7)


def plot_roofline(path, ceilings, points, *, title: str, measured_points=(), baselines=(),
                  matrix_unit=()) -> None:
    """Log-log roofline chart.

    points: (label, flop_per_byte, gflops) from the no-cache model; measured_points: the
    same from profiler-measured bytes, drawn hollow and joined to their model point;
    baselines: (label, gflops) of vendor kernels, whose tiles the model cannot know,
    drawn as horizontal lines; matrix_unit: labels of kernels on matrix units (tf32,
    fp32x3), which the FP32 roof does not bound, drawn as triangles.
    """
    from .plots import pyplot

    plt = pyplot()
    fig = plt.figure(figsize=(12.5, 6.5), dpi=120)
    ax = fig.add_axes([0.07, 0.09, 0.62, 0.84])
    xs = [p[1] for p in points] + [p[1] for p in measured_points]
    lo = min(xs + [ridge(ceilings)]) / 4
    hi = max(xs + [ridge(ceilings)]) * 4
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(grid, [roof(ceilings, x) for x in grid], color="black", lw=2, label="roof (measured)")
    ax.text(hi, ceilings.peak_gflops * 1.05, f"FP32 peak {ceilings.peak_gflops:,.0f} GFLOP/s (probe)",
            ha="right", va="bottom", fontsize=9)
    ax.text(lo * 1.1, roof(ceilings, lo * 1.1) * 1.3, f"{ceilings.bandwidth_gbs:,.0f} GB/s (probe)",
            fontsize=9, rotation=25)
    for name, gops in getattr(ceilings, "matrix_peaks", ()):
        # A matrix unit's roof: the ceiling of the rungs that run on it (their points are
        # triangles), not of the FP32 ones.
        ax.axhline(gops, color="#4c72b0", ls=":", lw=1.5)
        ax.text(hi, gops * 1.05, f"{name}: {gops:,.0f} Gop/s (probe)", ha="right", va="bottom",
                color="#4c72b0", fontsize=8)
    for label, gflops in baselines:
        ax.axhline(gflops, color="#c44e52", ls="--", lw=1)
        ax.text(lo * 1.1, gflops * 1.04, f"{label} {gflops:,.0f} GFLOP/s", color="#c44e52", fontsize=8)
    cmap = plt.get_cmap("viridis")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ys = [p[2] for p in points] + [p[2] for p in measured_points] + [b[1] for b in baselines]
    ax.set_xlim(lo, hi)
    tops = [g for _, g in getattr(ceilings, "matrix_peaks", ())]
    ax.set_ylim(min(ys + [roof(ceilings, lo)]) / 2, max(ys + [ceilings.peak_gflops] + tops) * 2)
    key = []
    for i, (label, x, y) in enumerate(points):
        marker = "^" if label in matrix_unit else "o"
        ax.scatter([x], [y], color=cmap(i / max(1, len(points) - 1)), s=40, zorder=3, marker=marker)
        key.append(f"{i + 1:>2}  {label}  {y:,.0f}" if y >= 100 else f"{i + 1:>2}  {label}  {y:.3g}")
    _number_points(ax, [(i + 1, (x, y)) for i, (_, x, y) in enumerate(points)])
    fig.text(0.71, 0.93, "kernel  GFLOP/s", fontsize=8, family="monospace", va="top", weight="bold")
    fig.text(0.71, 0.90, "\n".join(key), fontsize=7.5, family="monospace", va="top")
    by_label = {p[0]: p for p in points}
    for label, x, y in measured_points:
        ax.scatter([x], [y], facecolors="none", edgecolors="red", s=60, zorder=4)
        if label in by_label:
            _, x0, y0 = by_label[label]
            ax.plot([x0, x], [y0, y], color="red", lw=0.8, ls="--")
    handles = [plt.Line2D([], [], color="gray", marker="o", ls="", label="kernel at its no-cache intensity")]
    if matrix_unit:
        handles.append(plt.Line2D([], [], color="gray", marker="^", ls="",
                                  label="matrix units (tf32 inputs): above the FP32 roof by design"))
    if measured_points:
        handles.append(plt.Line2D([], [], color="red", marker="o", mfc="none", ls="",
                                  label="same kernel at profiler-measured DRAM bytes"))
    ax.legend(handles=handles, fontsize=8, loc="lower right")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s (measured)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    fig.savefig(path)
    plt.close(fig)

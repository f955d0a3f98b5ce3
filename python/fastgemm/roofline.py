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

_ceilings_cache: Dict[str, object] = {}


def cached_ceilings(backend: str):
    """The backend's measured ceilings, probed once per process (None when it has no probes)."""
    if backend not in _ceilings_cache:
        try:
            c = _fastgemm.measure_ceilings(backend)
        except Exception:
            c = None
        _ceilings_cache[backend] = c if (c is not None and (c.peak_gflops > 0 or c.bandwidth_gbs > 0)) else None
    return _ceilings_cache[backend]


def tile_reuse(info) -> Tuple[int, int]:
    """(rows of C, columns of C) that one loaded element of B and of A serves.

    Read from the kernel's tile parameters: a threadgroup/block tile BM x BN, a square
    `tile`, or a register block MR x NR; loop kernels without tiles reuse nothing
    (each multiply-add requests both operands).
    """
    p = info.params
    for rows, cols in (("BM", "BN"), ("MR", "NR"), ("TM", "TN")):
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


def plot_roofline(path, ceilings, points, *, title: str, measured_points=()) -> None:
    """Log-log roofline chart.

    points: (label, flop_per_byte, gflops) from the no-cache model; measured_points:
    the same from profiler-measured bytes, drawn hollow and joined to their model point.
    """
    from .plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 6.5), dpi=120)
    xs = [p[1] for p in points] + [p[1] for p in measured_points]
    lo = min(xs + [ridge(ceilings)]) / 4
    hi = max(xs + [ridge(ceilings)]) * 4
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(grid, [roof(ceilings, x) for x in grid], color="black", lw=2, label="roof")
    ax.axhline(ceilings.peak_gflops, color="gray", ls=":", lw=1)
    ax.text(hi, ceilings.peak_gflops * 1.05, f"peak {ceilings.peak_gflops:,.0f} GFLOP/s (measured)",
            ha="right", va="bottom", fontsize=9)
    ax.text(lo * 1.1, roof(ceilings, lo * 1.1) * 1.3, f"{ceilings.bandwidth_gbs:,.0f} GB/s (measured)",
            fontsize=9, rotation=25)
    cmap = plt.get_cmap("viridis")
    for i, (label, x, y) in enumerate(points):
        ax.scatter([x], [y], color=cmap(i / max(1, len(points) - 1)), s=40, zorder=3)
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
    by_label = {p[0]: p for p in points}
    for label, x, y in measured_points:
        ax.scatter([x], [y], facecolors="none", edgecolors="red", s=60, zorder=4)
        if label in by_label:
            _, x0, y0 = by_label[label]
            ax.plot([x0, x], [y0, y], color="red", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte, no-cache model)")
    ax.set_ylabel("GFLOP/s (measured)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

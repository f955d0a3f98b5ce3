"""Charts of benchmark results (matplotlib, an optional dependency)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .errors import FastgemmError


def pyplot():
    """matplotlib.pyplot on a non-interactive backend, or a clear error saying how to get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise FastgemmError("charts need matplotlib: pip install 'fastgemm[plot]' (or pip install matplotlib)") from e
    return plt


def plot_ladder(path, results: Sequence, baseline=None, *, title: str,
                peak_gflops: Optional[float] = None) -> List[str]:
    """One bar per kernel (GFLOP/s, log scale), the baseline as a line, % of peak on the right.

    A measured-peak line below fp32 bars is a probe problem: the line is then drawn red
    and labelled as such, and no "% of peak" axis is drawn. Bars of rows whose ratio
    could not be measured (flag "unstable") are hatched. Returns the warnings written
    on the chart.
    """
    plt = pyplot()
    warnings: List[str] = []
    names = [r.kernel for r in results]
    values = [r.gflops for r in results]
    fig, ax = plt.subplots(figsize=(max(7, 0.45 * len(results) + 3), 5.5), dpi=120)
    colors = ["#c44e52" if r is baseline else ("#4c72b0" if r.passed is not False else "#999999")
              for r in results]
    bars = ax.bar(range(len(results)), values, color=colors)
    unstable = [i for i, r in enumerate(results) if "unstable" in getattr(r, "flags", ())]
    for i in unstable:
        bars[i].set_hatch("//")
        bars[i].set_edgecolor("black")
    if unstable:
        warnings.append(f"hatched: ratio to the baseline not measurable ({', '.join(names[i] for i in unstable)})")
    ax.set_yscale("log")
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("GFLOP/s (median device time)")
    if baseline is not None:
        ax.axhline(baseline.gflops, color="#c44e52", ls="--", lw=1.2)
        ax.text(len(results) - 0.5, baseline.gflops * 0.9, f"{baseline.kernel} {baseline.gflops:,.1f}",
                ha="right", va="top", fontsize=8, color="#c44e52")
    for i, v in enumerate(values):
        ax.text(i, v * 1.05, f"{v:,.1f}", ha="center", va="bottom", fontsize=6.5)
    ax.set_ylim(top=max(values + [peak_gflops or 0.0]) * 4)
    if peak_gflops:
        above = [r.kernel for r in results if r.precision == "fp32" and r.gflops > peak_gflops]
        if above:
            warning = (f"PROBE PROBLEM: measured peak {peak_gflops:,.0f} GFLOP/s is below "
                       f"{', '.join(above)}; the probe under-measured, no % of peak shown")
            warnings.append(warning)
            ax.axhline(peak_gflops, color="red", ls="--", lw=1.5)
            ax.text(0, peak_gflops * 1.05, warning, fontsize=8, color="red")
        else:
            ax.axhline(peak_gflops, color="black", ls=":", lw=1)
            ax.text(0, peak_gflops * 1.05, f"measured peak {peak_gflops:,.0f}", fontsize=8)
            sec = ax.secondary_yaxis("right", functions=(lambda g: 100 * g / peak_gflops,
                                                         lambda p: p * peak_gflops / 100))
            sec.set_ylabel("% of measured peak")
    if unstable:
        fig.text(0.01, 0.005, warnings[0], fontsize=7, color="red", va="bottom")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return warnings


def plot_sweep(path, series: Dict[str, List], *, title: str, xlabel: str, baseline_series: Optional[str] = None,
               log_x: bool = True) -> None:
    """GFLOP/s against size (or a kernel parameter): one line per kernel.

    series: label -> [(x, gflops), ...].
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 5.5), dpi=120)
    for label, pts in series.items():
        pts = sorted(pts)
        style = dict(color="black", ls="--", lw=2) if label == baseline_series else dict(marker="o", ms=4)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **style)
    if log_x:
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("GFLOP/s (median device time)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

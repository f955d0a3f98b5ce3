"""Run-to-run stability: the distribution of per-process best times.

Seed 003 found Accelerate's SGEMM bimodal: a whole process landed in a fast or a slow
mode (0.15 ms or 0.79 ms at 512^3), and best-of-8 inside a slow process never saw a fast
sample. A benchmark inside one process cannot show that. `fastgemm bench --processes N`
(fastgemm.cli.stability) runs the same measurement in N fresh processes, one after
another, takes the best of k iterations in each (the seed's best-of), and this module
describes the distribution of those per-process bests: the sorted values with counts
("0.151(4) 0.153(2) ..."), min / median / max, and the clusters ("modes") they fall
into, so a user can see whether a library is bimodal on their machine.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

# Consecutive sorted per-process bests further apart than this ratio start a new mode.
DEFAULT_MODE_GAP = 1.25


# --- the distribution ------------------------------------------------------------------------

def _fmt_ms(seconds: float) -> str:
    """Three significant figures in ms (0.151, 8.31, 127): the seed's resolution."""
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 1000 else f"{ms:.0f}"


def counted(values_s: Sequence[float]) -> List[Tuple[str, int]]:
    """Sorted values, rounded to 3 significant figures in ms, with how often each occurs."""
    out: List[Tuple[str, int]] = []
    for v in sorted(values_s):
        label = _fmt_ms(v)
        if out and out[-1][0] == label:
            out[-1] = (label, out[-1][1] + 1)
        else:
            out.append((label, 1))
    return out


def format_counts(values_s: Sequence[float], width: int = 88, indent: str = "  ") -> str:
    """The seed's layout: '0.151(4) 0.153(2) 0.155 ...', wrapped."""
    items = [f"{label}({n})" if n > 1 else label for label, n in counted(values_s)]
    lines, line = [], indent
    for it in items:
        if len(line) + len(it) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += it + " "
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def find_modes(values_s: Sequence[float], gap: float = DEFAULT_MODE_GAP) -> List[Dict]:
    """Clusters of the sorted values: a new one starts where a value exceeds its predecessor
    by more than `gap` (x). Returns [{low, high, median, count}] fastest first."""
    vals = sorted(values_s)
    if not vals:
        return []
    groups = [[vals[0]]]
    for prev, v in zip(vals, vals[1:]):
        if prev > 0 and v / prev > gap:
            groups.append([])
        groups[-1].append(v)
    out = []
    for g in groups:
        n = len(g)
        med = g[n // 2] if n % 2 else 0.5 * (g[n // 2 - 1] + g[n // 2])
        out.append({"low": g[0], "high": g[-1], "median": med, "count": n})
    return out


def summarize(records: List[dict], flops: float, gap: float = DEFAULT_MODE_GAP) -> dict:
    import numpy as np

    bests = [r["best_s"] for r in records]
    spreads = [max(r["device_s"]) / min(r["device_s"]) for r in records if min(r["device_s"]) > 0]
    med = float(np.median(bests))
    return {
        "processes": len(records), "best_of": records[0]["iters"] if records else 0,
        "min_s": min(bests), "median_s": med, "max_s": max(bests),
        "gflops_at_min": flops / min(bests) * 1e-9, "gflops_at_median": flops / med * 1e-9,
        "gflops_at_max": flops / max(bests) * 1e-9,
        "modes": find_modes(bests, gap), "mode_gap": gap,
        "counts": [{"ms": label, "count": n} for label, n in counted(bests)],
        "within_process_spread_median": float(np.median(spreads)) if spreads else None,
        "within_process_spread_max": max(spreads) if spreads else None,
    }


def report_text(kernel: str, s: dict, records: List[dict]) -> str:
    lines = [f"best of {s['best_of']} per process, sorted (ms), with counts:",
             format_counts([r["best_s"] for r in records]),
             f"min {_fmt_ms(s['min_s'])} ms   median {_fmt_ms(s['median_s'])} ms   max {_fmt_ms(s['max_s'])} ms"
             f"   (max/min {s['max_s'] / s['min_s']:.2f}x)",
             f"GFLOP/s at min / median / max: {s['gflops_at_min']:.1f} / {s['gflops_at_median']:.1f} / "
             f"{s['gflops_at_max']:.1f}"]
    modes = s["modes"]
    if len(modes) == 1:
        lines.append(f"modes: 1 (no jump above {s['mode_gap']:.2f}x between neighbouring values): "
                     f"no bimodality seen in {s['processes']} processes")
    else:
        parts = [f"{_fmt_ms(m['median'])} ms x{m['count']} ({_fmt_ms(m['low'])}-{_fmt_ms(m['high'])})" for m in modes]
        lines.append(f"modes: {len(modes)} (split where neighbouring values jump more than {s['mode_gap']:.2f}x): "
                     + ", ".join(parts))
        lines.append(f"  slowest mode / fastest mode: {modes[-1]['median'] / modes[0]['median']:.1f}x"
                     + ("; a mode of one process may be an interruption, not a property of the kernel"
                        if any(m["count"] == 1 for m in modes) else ""))
    if s["within_process_spread_median"] is not None:
        lines.append(f"inside one process (max/min of its {s['best_of']} samples): median "
                     f"{s['within_process_spread_median']:.2f}x, worst {s['within_process_spread_max']:.2f}x")
    return "\n".join(lines)

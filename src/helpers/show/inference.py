"""Figures for lesson ``09_fast_cpu_inference``: threads, and latency against throughput.

Matplotlib is imported inside the functions, so ``import helpers`` stays cheap.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_latency_throughput", "plot_thread_speedups"]


def plot_thread_speedups(speedups: Mapping[int, list[float]], cpus: int | None = None) -> tuple[Figure, Axes]:
    """Speed-up over 1 thread against the intra-op thread count: the median of the rounds, with their range.

    ``speedups`` maps a thread count to one speed-up per round (what
    :func:`helpers.lessons.inference.thread_speedups` returns). The dotted line is the ideal (k
    threads, k times as fast); ``cpus``, if given, is drawn as a dashed vertical line.
    Introduced in lesson 09.
    """
    import matplotlib.pyplot as plt

    counts = sorted(speedups)
    middle = [statistics.median(speedups[k]) for k in counts]
    below = [m - min(speedups[k]) for m, k in zip(middle, counts, strict=True)]
    above = [max(speedups[k]) - m for m, k in zip(middle, counts, strict=True)]
    rounds = max(len(v) for v in speedups.values())
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.errorbar(counts, middle, yerr=[below, above], fmt="o-", capsize=4,
                label=f"measured: median and range of {rounds} rounds")
    ax.plot(counts, counts, ":", color="grey", label="ideal")
    if cpus is not None:
        ax.axvline(cpus, color="black", linewidth=0.8, linestyle="--", label="CPUs visible")
    ax.set_xticks(counts)
    ax.set_xlabel("intra-op threads")
    ax.set_ylabel("speed-up over 1 thread")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig, ax


def plot_latency_throughput(seconds_per_batch: Mapping[int, float]) -> tuple[Figure, Axes]:
    """Latency per batch (left axis) and throughput in items per second (right axis) against batch size.

    ``seconds_per_batch`` maps a batch size to the time of one call on a batch of that size. Both
    axes are logarithmic. Returns the figure and its left axes. Introduced in lesson 09.
    """
    import matplotlib.pyplot as plt

    sizes = sorted(seconds_per_batch)
    fig, left = plt.subplots(figsize=(6.4, 3.4))
    left.loglog(sizes, [seconds_per_batch[b] * 1e3 for b in sizes], "o-", color="#2471a3")
    left.set_xlabel("batch size")
    left.set_ylabel("latency per batch (ms)", color="#2471a3")
    right = left.twinx()
    right.loglog(sizes, [b / seconds_per_batch[b] for b in sizes], "s--", color="#c0392b")
    right.set_ylabel("throughput (items/s)", color="#c0392b")
    left.set_title("latency and throughput against batch size")
    fig.tight_layout()
    return fig, left

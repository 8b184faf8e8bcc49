"""Plots of lesson 14's measurements: compiled code's error, a loss scale's history, FSDP's shards.

Each plots numbers the lesson computed (they are arguments, nothing is measured here).
matplotlib is imported inside each function so ``import helpers`` stays cheap; each returns
``(fig, ax)`` and the notebook calls ``plt.show()``. Introduced in lesson 14.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_errors", "draw_scale_history", "draw_shards"]


def _plain(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def draw_errors(errors: dict[str, float], title: str) -> tuple[Figure, Axes]:
    """One horizontal bar per way of computing, its mean relative error against float64."""
    import matplotlib.pyplot as plt

    names = list(errors)
    fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.45 * len(names)))
    ax.barh(names, [errors[n] for n in names], color="tab:blue")
    for i, n in enumerate(names):
        ax.annotate(f"{errors[n]:.5f}", (errors[n], i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize="small")
    ax.invert_yaxis()
    ax.set_xlim(0, max(errors.values()) * 1.25)
    ax.set_xlabel("mean relative error against float64")
    ax.set_title(title, fontsize="medium")
    _plain(ax)
    fig.tight_layout()
    return fig, ax


def draw_scale_history(runs: dict[str, dict], resumed_at: int | None = None) -> tuple[Figure, Axes]:
    """The loss scale each step used, per run (``helpers.lessons.mixed.train``), skipped steps marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    for (label, run), style in zip(runs.items(), ("-", "--"), strict=False):
        steps = range(len(run["scales"]))
        line, = ax.step(steps, run["scales"], style, where="post", label=label)
        skips = [i for i in steps if run["skipped"][i]]
        ax.plot(skips, [run["scales"][i] for i in skips], "x", color=line.get_color(), markersize=9)
    if resumed_at is not None:
        ax.axvline(resumed_at, color="0.6", linewidth=1)
        ax.annotate("checkpoint,\nresumed", (resumed_at, ax.get_ylim()[1]), xytext=(3, -3),
                    textcoords="offset points", va="top", fontsize="small", color="0.4")
    ax.set_yscale("log", base=2)
    ax.set_xlabel("step (x: skipped, the scale halves)")
    ax.set_ylabel("loss scale")
    ax.legend(fontsize="small", frameon=False, loc="lower right")
    ax.set_title("GradScaler's scale, step by step", fontsize="medium")
    _plain(ax)
    fig.tight_layout()
    return fig, ax


def draw_shards(rows: dict[int, list[int]], name: str) -> tuple[Figure, Axes]:
    """Which rows of parameter ``name`` each rank holds, for each number of ranks in ``rows``.

    ``rows`` maps a world size to the number of rows on rank 0, 1, ... (FSDP gives each rank a
    contiguous block, as ``torch.chunk`` does).
    """
    import matplotlib.pyplot as plt

    colours = plt.get_cmap("tab10").colors
    worlds = sorted(rows, reverse=True)
    fig, ax = plt.subplots(figsize=(6.4, 0.8 + 0.55 * len(worlds)))
    for y, world in enumerate(worlds):
        start = 0
        for rank, count in enumerate(rows[world]):
            if count:
                ax.barh(y, count, left=start, color=colours[rank], edgecolor="white")
                ax.annotate(f"rank {rank}: {count}", (start + count / 2, y), ha="center", va="center",
                            fontsize="small", color="white")
            start += count
    ax.set_yticks(range(len(worlds)), [f"{w} ranks" for w in worlds])
    ax.invert_yaxis()
    ax.set_xlabel(f"rows of {name}")
    ax.set_title("One checkpoint, two ways to split it", fontsize="medium")
    _plain(ax)
    fig.tight_layout()
    return fig, ax

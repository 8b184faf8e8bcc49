"""Plots of lesson 11's measurements: how the world size moves a sum and an average.

Both plot numbers that the lesson computed (they are arguments, nothing is measured here).
matplotlib is imported inside each function so ``import helpers`` stays cheap; each returns
``(fig, ax)`` and the notebook calls ``plt.show()``. Introduced in lesson 11.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_divide_first", "draw_sums_by_world_size", "float32_neighbours"]


def float32_neighbours(value: float, extra: int = 1) -> list[float]:
    """The float32 numbers around ``value``: the two that enclose it, and ``extra`` more on each side.

    If ``value`` is a float32 number itself, it is the lower of the two.
    """
    t = torch.tensor(value, dtype=torch.float64).float()
    if t.double().item() > value:  # rounded up: step down to the number below
        t = torch.nextafter(t, torch.tensor(-torch.inf))
    down, up = [t], [torch.nextafter(t, torch.tensor(torch.inf))]
    for _ in range(extra):
        down.append(torch.nextafter(down[-1], torch.tensor(-torch.inf)))
        up.append(torch.nextafter(up[-1], torch.tensor(torch.inf)))
    return [x.item() for x in reversed(down)] + [x.item() for x in up]


def draw_sums_by_world_size(totals: dict[int, float], exact: float) -> tuple[Figure, Axes]:
    """Where each world size's all-reduced sum lands among the float32 numbers around the exact sum.

    ``totals`` maps a world size (number of ranks) to the float32 sum its all-reduce returned;
    ``exact`` is the exact sum (computed in float64). One row per world size; the dotted lines are
    the float32 numbers nearby, the black line the exact sum (labelled beside it). Introduced in
    lesson 11.
    """
    import matplotlib.pyplot as plt

    grid = float32_neighbours(exact)
    base = grid[0]
    fig, ax = plt.subplots(figsize=(7.2, 2.6))
    for x in grid:
        ax.axvline(x - base, color="0.75", linestyle=":", zorder=0)
    ax.axvline(exact - base, color="black", linewidth=1.2, zorder=1)
    # the label sits beside the line, on a white ground, so that no line runs through it
    ax.annotate(f"exact sum: {exact}", (exact - base, len(totals) + 0.9), xytext=(5, 0),
                textcoords="offset points", ha="left", va="center", fontsize="small",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0}, zorder=3)
    for row, (world, total) in enumerate(sorted(totals.items()), start=1):
        ax.plot([total - base], [row], "o", color=f"C{row - 1}", markersize=9, zorder=2)
        ax.text(total - base, row + 0.22, f"{world} rank{'s' * (world > 1)}: {total}", ha="center",
                va="bottom", fontsize="small")
    spacing = grid[1] - grid[0]
    ax.set_xlim(-0.5 * spacing, grid[-1] - base + 0.5 * spacing)
    ax.set_ylim(0.4, len(totals) + 1.5)
    ax.set_yticks(range(1, len(totals) + 1), [f"{w}" for w in sorted(totals)])
    ax.set_ylabel("ranks")
    ax.set_xticks([x - base for x in grid], [f"{x}" for x in grid], fontsize="small")
    ax.set_xlabel(f"sum (dotted lines: the float32 numbers, {spacing:g} apart at this size)")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title("The same float32 numbers, all-reduced by 1, 2 and 3 ranks", fontsize="medium")
    fig.tight_layout()
    return fig, ax


def draw_divide_first(differ: dict[int, int], entries: int) -> tuple[Figure, Axes]:
    """For each world size, how many of ``entries`` averaged values "divide first" changes.

    ``differ`` maps a world size to the number of entries where "multiply by 1/world_size, then
    sum" (DDP) and "sum, then divide" give different float32 numbers. Bars of world sizes whose
    1/world_size is a float32 number (powers of two) are grey, the others orange; a bar of height 0
    is marked by a grey stroke on the baseline. Introduced in lesson 11.
    """
    import matplotlib.pyplot as plt

    worlds = sorted(differ)
    exact = [torch.tensor(1 / w).item() == 1 / w for w in worlds]  # is float32(1/w) exactly 1/w?
    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    colours = ["0.6" if e else "tab:orange" for e in exact]
    ax.bar([str(w) for w in worlds], [differ[w] / entries for w in worlds], color=colours)
    for i, w in enumerate(worlds):
        if differ[w] == 0:  # a bar of height 0 is invisible: mark its place on the baseline
            ax.hlines(0, i - 0.4, i + 0.4, color=colours[i], linewidth=5, clip_on=False, zorder=3)
        ax.annotate(f"{differ[w]}", (i, differ[w] / entries), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize="small")
    ax.set_xlabel("world size (ranks)")
    ax.set_ylabel(f"entries that differ\n(fraction of {entries})")
    ax.set_ylim(0, max(1e-9, max(differ.values()) / entries) * 1.2)
    handles = [plt.Rectangle((0, 0), 1, 1, color="0.6"), plt.Rectangle((0, 0), 1, 1, color="tab:orange")]
    ax.legend(handles, ["1/world_size is a float32 number", "1/world_size is rounded"], fontsize="small",
              loc="upper left", frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title("Multiply by 1/world_size, then sum, against sum, then divide", fontsize="medium")
    fig.tight_layout()
    return fig, ax

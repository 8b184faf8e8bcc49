"""Lesson 13's figures: small work on this CPU next to a published GPU measurement, and a verdict board.

matplotlib is imported inside each function so ``import helpers`` stays cheap; each returns
``(fig, ax)`` or ``(fig, axes)`` and the notebook calls ``plt.show()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["PUBLISHED_INVERSE", "VERDICT_COLORS", "draw_verdict_board", "plot_small_work"]

# pytorch/pytorch issue #42265 (2020), torch.inverse timed with torch.cuda.synchronize():
# (matrix size, GPU milliseconds, CPU milliseconds), as printed in the description.
PUBLISHED_INVERSE = (("4x4", 8.78560, 0.07149), ("1024x1024", 17.25289, 9.54982))
PUBLISHED_SOURCE = "https://github.com/pytorch/pytorch/issues/42265"

VERDICT_COLORS = {"true": "#b7e1b0", "false": "#f4b6b6", "it depends": "#fde3a7"}


def plot_small_work(ratios: Sequence[float], published=PUBLISHED_INVERSE) -> tuple[Figure, Sequence[Axes]]:
    """Left: the measured ratio (100 one-element additions / one 100-element addition) of each
    repeated round on this machine, with their median. Right: torch.inverse on a GPU and on a CPU
    as published in issue #42265, drawn hatched and labelled as someone else's data.
    Introduced in lesson 13.
    """
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [1, 1.4]})
    rounds = list(range(1, len(ratios) + 1))
    left.plot(rounds, ratios, "o", color="#1f77b4", label="one round (measured here)")
    median = sorted(ratios)[len(ratios) // 2]
    left.axhline(median, color="#1f77b4", linestyle="--", linewidth=1, label=f"median {median:.0f}x")
    left.set_ylim(0, max(ratios) * 1.25)
    left.set_xticks(rounds)
    left.set_xlabel("round (the three timings interleaved)")
    left.set_ylabel("time of 100 small calls / 1 call")
    left.set_title("measured where this notebook ran (CPU)", fontsize="medium")
    left.legend(fontsize="small", loc="lower right")

    sizes = [size for size, _, _ in published]
    x = range(len(sizes))
    gpu = [g for _, g, _ in published]
    cpu = [c for _, _, c in published]
    right.bar([i - 0.2 for i in x], gpu, 0.4, color="white", edgecolor="#d62728", hatch="//",
              label="GPU (published)")
    right.bar([i + 0.2 for i in x], cpu, 0.4, color="white", edgecolor="#555555", hatch="..",
              label="CPU (published)")
    for i, (g, c) in enumerate(zip(gpu, cpu, strict=True)):
        right.text(i - 0.2, g, f"{g:.2f} ms", ha="center", va="bottom", fontsize="small")
        right.text(i + 0.2, c, f"{c:.2f} ms", ha="center", va="bottom", fontsize="small")
    right.set_yscale("log")
    right.set_ylim(0.02, max(gpu) * 4)
    right.set_xticks(list(x), [f"torch.inverse, {s}" for s in sizes])
    right.set_ylabel("ms per call (log scale)")
    right.set_title("published, not measured here: issue #42265", fontsize="medium")
    right.legend(fontsize="small", loc="upper left")
    fig.text(0.99, 0.01, f"right: numbers from {PUBLISHED_SOURCE}", ha="right", fontsize="x-small")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig, (left, right)


def draw_verdict_board(verdicts: Sequence[tuple[str, str, str]]) -> tuple[Figure, Axes]:
    """One row per claim: the claim, its verdict (coloured) and the lessons that explain it, read
    from the ``(claim, verdict, evidence)`` records the lesson collected. A schematic summary,
    not data. Introduced in lesson 13.
    """
    import re

    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    n = len(verdicts)
    fig, ax = plt.subplots(figsize=(10, 0.42 * n + 0.9))
    for row, (claim, answer, evidence) in enumerate(verdicts):
        y = n - 1 - row
        lessons = re.findall(r"\(lessons? ([^)]*)\)", evidence)
        ax.text(0.0, y, f"13.{row + 1}  {claim.replace('`', '')}", va="center", fontsize="small")
        ax.add_patch(Rectangle((7.1, y - 0.38), 1.3, 0.76, facecolor=VERDICT_COLORS[answer],
                               edgecolor="black", linewidth=0.6))
        ax.text(7.75, y, answer, ha="center", va="center", fontsize="small")
        named = lessons[-1] if lessons else ""
        plural = "lessons" if any(sep in named for sep in (",", " to ", " and ")) else "lesson"
        ax.text(8.6, y, f"{plural} {named}" if named else "", va="center", fontsize="small")
    ax.set_xlim(0, 10.5)
    ax.set_ylim(-0.6, n - 0.4)
    ax.axis("off")
    ax.set_title("The twelve claims and their verdicts (schematic summary of this lesson)", fontsize="medium")
    return fig, ax

"""Lesson 00's two pictures: how far the opening demonstration's answers are from float64, and a
map of where such differences come from, with the lessons that teach each.

matplotlib is imported inside each function so ``import helpers`` stays cheap; each returns
``(fig, ax)`` and the notebook calls ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from helpers.floats import unit_roundoff

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

from helpers.show.diagrams import _arrow, _blank, _box

__all__ = ["DIFFERENCE_SOURCES", "draw_difference_sources", "plot_answer_distances"]


def plot_answer_distances(
    distances: Mapping[str, float], formats: Sequence[str] = ("float32", "bfloat16"),
    reference: str = "the float64 answer",
) -> tuple[Figure, Axes]:
    """One horizontal bar per answer: its distance from ``reference``, on a log scale.

    ``distances`` maps each answer's name to its distance (a relative error, a float >= 0), as the
    notebook computed it; the bars are drawn from those values, in that order, each labelled with
    its value. A distance of exactly 0 cannot sit on a log axis: it is written at the left edge
    instead of drawn ("0 (the same bits as the reference)"). Each format of ``formats`` adds a
    dashed line at its unit roundoff (``helpers.unit_roundoff``), the size of one rounding in that
    format, so a reader sees which precision's rounding each distance is the size of.
    Introduced in lesson 00.
    """
    import matplotlib.pyplot as plt

    names = list(distances)
    values = [float(distances[name]) for name in names]
    if not names or any(v < 0 or v != v for v in values):
        raise ValueError("distances: one non-negative number per answer")
    lines = {fmt: unit_roundoff(fmt) for fmt in formats}
    positive = [v for v in values if v > 0] + list(lines.values())
    left = min(positive) / 10
    right = max(positive) * 10

    fig, ax = plt.subplots(figsize=(7.6, 0.55 * len(names) + 1.6))
    rows = range(len(names))[::-1]  # the first answer on top
    for y, value in zip(rows, values, strict=True):
        if value > 0:
            ax.barh(y, value - left, left=left, height=0.6, color="#2471a3")
            ax.text(value * 1.15, y, f"{value:.1e}", va="center", fontsize="small")
        else:
            ax.text(left * 1.15, y, "0 (the same bits as the reference)", va="center", fontsize="small")
    colours = ("tab:green", "tab:orange", "tab:purple", "tab:red")
    for (fmt, u), colour in zip(lines.items(), colours, strict=False):
        ax.axvline(u, color=colour, linestyle="--", linewidth=1.2, label=f"one {fmt} rounding (u = {u:.1e})")
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_yticks(list(rows), names)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlabel(f"largest difference from {reference},\nrelative to its largest output (log scale)")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title("The same function, several correct answers", fontsize="medium")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig, ax


# (cause, what brings it in, the lessons that teach it)
DIFFERENCE_SOURCES = (
    ("order of operations", "threads, SIMD lanes, batch size,\natomic additions, ranks", "01 · 02 · 04 · 11"),
    ("precision", "TF32, bfloat16, float16, int8", "03 · 09"),
    ("algorithm choice", "FMA or not, maths libraries,\nwhich kernel runs", "01 · 04 · 09"),
    ("random numbers", "seeds, generators,\nDataLoader workers", "05 · 11"),
    ("device moves", "what .to() moves,\ncheckpoints across devices", "06 · 07"),
)


def draw_difference_sources(seen: Sequence[str] = ()) -> tuple[Figure, Axes]:
    """A schematic map: each source of different numbers (``DIFFERENCE_SOURCES``), what brings it
    into a program, and the lessons that teach it; below, the lessons that tell a legitimate
    difference from a bug (10, 12, 13) and that measure speed (08, 09).

    ``seen`` names causes to highlight (for example those the opening demonstration showed); each
    must be one of the causes. A diagram of the course, not data. Introduced in lesson 00.
    """
    import matplotlib.pyplot as plt

    causes = [cause for cause, _, _ in DIFFERENCE_SOURCES]
    unknown = set(seen) - set(causes)
    if unknown:
        raise ValueError(f"seen: not a cause on the map: {sorted(unknown)}; the causes are {causes}")
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    ax.text(0.0, 5.55, "where a difference comes from", ha="center", fontsize="small", weight="bold")
    ax.text(3.6, 5.55, "what brings it in", ha="center", fontsize="small", weight="bold")
    ax.text(7.2, 5.55, "lessons", ha="center", fontsize="small", weight="bold")
    for i, (cause, brings, lessons) in enumerate(DIFFERENCE_SOURCES):
        y = 5.0 - i * 0.95
        highlighted = cause in seen
        _box(ax, 0.0, y, cause + ("\n(seen above)" if highlighted else ""),
             "#fde2c8" if highlighted else "#dbe9f6", 2.6, 0.7)
        ax.text(3.6, y, brings, ha="center", va="center", fontsize="small")
        _arrow(ax, (5.0, y), (6.15, y))
        _box(ax, 7.2, y, lessons, "#d5ecd4", 2.0, 0.6)
    _box(ax, 3.6, 0.05, "is a difference legitimate or a bug? tolerances 10 · debugging 12 · myths 13\n"
         "which device is faster, and how to keep CPU inference fast: 08 · 09", "#eeeeee", 8.8, 0.75)
    ax.set_xlim(-1.6, 8.3)
    ax.set_ylim(-0.5, 5.8)
    _blank(ax)
    ax.set_aspect("auto")
    ax.set_title("Where the differences come from, and which lesson teaches each (a diagram)",
                 fontsize="medium")
    fig.tight_layout()
    return fig, ax

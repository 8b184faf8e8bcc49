"""Lesson 02's figures: how threads split a sum, what split-K does to a dot product, and a batch plot.

The first two are schematics of what the lesson explains, not measurements, and say so in their
titles; the third plots numbers the lesson measured. matplotlib is imported inside each function so
``import helpers`` stays cheap; each returns ``(fig, ax)`` or ``(fig, axes)`` and the notebook calls
``plt.show()``. Introduced in lesson 02.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from helpers.show.diagrams import _arrow, _blank, _box

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_split_k", "draw_thread_split", "plot_batch_differences"]

#: One colour per thread or per block of K, in the order they are used.
_COLOURS = ("#dbe9f6", "#fde2c8", "#d5ecd4", "#f8d7d5", "#e8dcf2", "#fff2b3", "#d9d9d9", "#cfe8e6")


def _split(n: int, parts: int) -> list[range]:
    """``range(n)`` cut into ``parts`` contiguous pieces, as ``at::parallel_for`` cuts it (ceil-sized)."""
    size = -(-n // parts)
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def draw_thread_split(n: int = 16, threads: int = 2) -> tuple[Figure, Sequence[Axes]]:
    """How PyTorch's CPU kernels share one reduction between threads (a schematic).

    Left, ``x.sum()`` of ``n`` numbers: with 1 thread one range covers all of them; with
    ``threads`` threads each takes a contiguous range and writes a partial sum of its own, and the
    partial sums are added at the end, so the order of the additions depends on the thread count
    (``TensorIteratorBase::parallel_reduce``'s two-pass reduction). Right, ``x.sum(dim=1)`` of 4
    rows: each thread gets whole rows, so every row is added in the same order whatever the
    count. Inside each range the kernel also keeps several SIMD accumulators; they are not drawn.
    ``n`` is an int from 4 to 32, ``threads`` an int from 2 to 4 with at most ``n // 2``.
    Introduced in lesson 02.
    """
    if not (isinstance(n, int) and 4 <= n <= 32):
        raise ValueError(f"n must be an int from 4 to 32; got {n!r}")
    if not (isinstance(threads, int) and 2 <= threads <= min(4, n // 2)):
        raise ValueError(f"threads must be an int from 2 to {min(4, n // 2)}; got {threads!r}")

    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.9), gridspec_kw={"width_ratios": [1.7, 1]})
    width = 0.9
    for row, count in ((2.2, 1), (0.0, threads)):
        left.text(-0.8, row + 0.45, f"{count} thread{'s' if count > 1 else ''}", ha="right", va="center",
                  fontsize="small", weight="bold")
        for t, part in enumerate(_split(n, count)):
            for i in part:
                _box(left, i * width, row + 0.45, f"x{i}", _COLOURS[t], 0.75, 0.42)
            middle = (part[0] + part[-1]) / 2 * width
            _arrow(left, (part[0] * width - 0.4, row + 0.05), (part[-1] * width + 0.4, row + 0.05))
            label = "one range" if count == 1 else f"thread {t}: partial sum p{t}"
            left.text(middle, row - 0.2, label, ha="center", va="center", fontsize="x-small")
        if count > 1:
            centre = (n - 1) / 2 * width
            _box(left, centre, row - 0.95, " + ".join(f"p{t}" for t in range(count)) + " (the combine)",
                 "white", 1.6 + 1.1 * count, 0.42)
            for part in _split(n, count):
                middle = (part[0] + part[-1]) / 2 * width
                _arrow(left, (middle, row - 0.35), (centre + (middle - centre) * 0.3, row - 0.72))
    left.set_title("x.sum(): the thread count changes the order", fontsize="medium")
    left.set_xlim(-2.2, n * width)
    left.set_ylim(-1.4, 3.0)
    _blank(left)
    left.set_aspect("auto")

    rows = 4
    for r in range(rows):
        owner = r * threads // rows
        y = 2.4 - r * 0.85
        for j in range(6):
            _box(right, j * 0.6, y, "", _COLOURS[owner], 0.5, 0.42)
        _arrow(right, (-0.2, y - 0.3), (3.2, y - 0.3))
        right.text(3.9, y, f"row {r}: thread {owner}", ha="left", va="center", fontsize="x-small")
    right.set_title("x.sum(dim=1): whole rows per thread,\nthe same order for any count", fontsize="medium")
    right.set_xlim(-0.5, 6.2)
    right.set_ylim(-0.6, 3.0)
    _blank(right)
    right.set_aspect("auto")
    fig.suptitle(f"How {threads} threads share a CPU reduction (a schematic, {n} numbers)", fontsize="medium")
    fig.tight_layout()
    return fig, (left, right)


def draw_split_k(k: int = 16, splits: int = 4) -> tuple[Figure, Axes]:
    """Split-K (a schematic): one entry ``C[i, j]`` of ``C = A @ B`` as ``splits`` partial dot products.

    Row ``i`` of ``A`` and column ``j`` of ``B`` are cut into ``splits`` blocks of ``K``; each
    block's products are summed on their own (by another thread block, on a GPU), and the
    partial sums are added at the end. The blocks, and how many there are, are chosen per shape,
    so another shape adds the same products in another order. ``k`` is an int from 4 to 32,
    ``splits`` an int from 2 to 8 that divides ``k``. Introduced in lesson 02.
    """
    if not (isinstance(k, int) and 4 <= k <= 32):
        raise ValueError(f"k must be an int from 4 to 32; got {k!r}")
    if not (isinstance(splits, int) and 2 <= splits <= 8 and k % splits == 0):
        raise ValueError(f"splits must be an int from 2 to 8 that divides k={k}; got {splits!r}")

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.6))
    cell = 0.5
    blocks = _split(k, splits)
    for b, block in enumerate(blocks):
        for kk in block:
            _box(ax, kk * cell, 2.6, "", _COLOURS[b], 0.42, 0.36)           # row i of A
            _box(ax, kk * cell, 1.9, "", _COLOURS[b], 0.42, 0.36)           # column j of B, laid flat
        centre = (block[0] + block[-1]) / 2 * cell
        _box(ax, centre, 0.75, f"partial {b}:\n{len(block)} products", _COLOURS[b], 1.5, 0.6)
        _arrow(ax, (centre, 1.65), (centre, 1.08))
    ax.text(-0.4, 2.6, "row i of A", ha="right", va="center", fontsize="small")
    ax.text(-0.4, 1.9, "column j of B", ha="right", va="center", fontsize="small")
    total = (k - 1) * cell / 2
    _box(ax, total, -0.45, " + ".join(f"partial {b}" for b in range(splits)) + "  =  C[i, j]", "white",
         max(4.0, 1.3 * splits), 0.45)
    for block in blocks:
        centre = (block[0] + block[-1]) / 2 * cell
        _arrow(ax, (centre, 0.43), (total + (centre - total) * 0.4, -0.2))
    ax.set_title(f"Split-K: a dot product of K = {k} in {splits} blocks, added at the end (a schematic)",
                 fontsize="medium")
    ax.set_xlim(-2.2, k * cell + 0.2)
    ax.set_ylim(-0.9, 3.0)
    _blank(ax)
    ax.set_aspect("auto")
    fig.tight_layout()
    return fig, ax


def plot_batch_differences(diffs: Mapping[int, float], title: str = "") -> tuple[Figure, Axes]:
    """Bars of the largest difference between ``a[:n] @ b`` and ``(a @ b)[:n]``, one bar per batch size ``n``.

    ``diffs`` maps each ``n`` to that difference (0.0 where the two agree bit for bit); the bars
    keep its order. Introduced in lesson 02.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    ax.bar([str(n) for n in diffs], list(diffs.values()), color="#2471a3")
    ax.set_xlabel("rows computed alone (n)")
    ax.set_ylabel("largest difference")
    ax.tick_params(axis="x", labelsize="x-small", labelrotation=90)
    ax.set_title(title or "a[:n] @ b against (a @ b)[:n]")
    fig.tight_layout()
    return fig, ax

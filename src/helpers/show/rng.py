"""Diagrams of random number generators: what a seed reaches, and when a DataLoader draws.

Both are schematics of what lesson 05 explains, not measurements, and each says so in its
title. matplotlib is imported inside each function so ``import helpers`` stays cheap; each
returns ``(fig, ax)`` and the notebook calls ``plt.show()``. Introduced in lesson 05.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.show.diagrams import _arrow, _blank, _box

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["SEED_TARGETS", "draw_epoch_timeline", "draw_seed_reach"]

#: What ``draw_seed_reach`` draws: each generator, whether ``torch.manual_seed`` seeds it, and what
#: does if it does not. ``torch.manual_seed`` seeds the CPU's and every accelerator's default
#: generator (``_manual_seed_impl`` in ``torch/random.py``), nothing else.
SEED_TARGETS: list[tuple[str, bool, str]] = [
    ("PyTorch's CPU generator\n(torch.default_generator, mt19937)", True, ""),
    ("each GPU's default generator\n(Philox; also MPS, XPU)", True, ""),
    ("Python's random\n(random.random, random.shuffle)", False, "random.seed(s)"),
    ("NumPy's global generator\n(np.random.rand, np.random.normal)", False, "np.random.seed(s)"),
    ("generators you create: torch.Generator(),\nnp.random.default_rng(), random.Random()", False,
     "their own seed,\nwhere they are made"),
    ("hash() of str and bytes\n(the order of a set of strings)", False,
     "PYTHONHASHSEED,\nset before Python starts"),
]


def draw_seed_reach() -> tuple[Figure, Axes]:
    """What ``torch.manual_seed(s)`` seeds (green arrows) and what it leaves alone (red boxes, with
    what seeds each of them on the right), from :data:`SEED_TARGETS`. ``seed_everything(s)`` is
    ``torch.manual_seed`` plus the first two of the right-hand column. Introduced in lesson 05.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.0, 4.4))
    rows = len(SEED_TARGETS)
    ys = [rows - 1 - i for i in range(rows)]
    _box(ax, 0.0, ys[0] - 0.5, "torch.manual_seed(s)", "#dbe9f6", 2.4, 0.6)
    for (name, reached, other), y in zip(SEED_TARGETS, ys, strict=True):
        _box(ax, 4.4, y, name, "#d5ecd4" if reached else "#f8d7d5", 3.6, 0.78)
        if reached:
            _arrow(ax, (1.2, ys[0] - 0.5), (2.6, y), "tab:green")
        else:
            ax.text(6.5, y, other, ha="left", va="center", fontsize="small", color="tab:red")
    ax.text(6.5, ys[0] - 0.5, "seeded by\ntorch.manual_seed", ha="left", va="center", fontsize="small",
            color="tab:green")
    ax.text(0.0, ys[-1] + 0.3, "not touched by it:\nseed each one itself\n(seed_everything(s)\n"
            "does random and NumPy too)", ha="center", va="center", fontsize="small", color="tab:red")
    ax.set_xlim(-1.4, 8.6)
    ax.set_ylim(-0.6, rows - 0.4)
    _blank(ax)
    ax.set_aspect("auto")
    ax.set_title("What torch.manual_seed(s) reaches (a diagram)", fontsize="medium")
    fig.tight_layout()
    return fig, ax


def draw_epoch_timeline(batches: int = 6, stop_epoch: int = 1, done: int = 4) -> tuple[Figure, Axes]:
    """When a map-style DataLoader draws from its ``generator``, and what a mid-epoch resume needs.

    Each epoch starts with ``iter(loader)``, which draws the workers' ``base_seed``; with
    ``shuffle=True`` the sampler then draws the epoch's order (at the first batch, or at once with
    workers, which start loading ahead). Nothing more is drawn until the sampler runs out of
    indices: then a ``RandomSampler`` that draws from the loader's generator draws a spare
    permutation and keeps its first ``num_samples % n`` items, none by default. Without workers
    that happens as the epoch ends (at the ``next()`` that ends it, or that makes a short last
    batch); with workers a few batches earlier, when the prefetching reaches the sampler's end. The
    figure draws it at each epoch's end. The top row
    is a run that never stops; it is checkpointed after ``done`` batches of epoch ``stop_epoch``
    (counted from 0; labelled from 1). The middle row resumes from the generator's state at that
    epoch's start (S\\ *stop_epoch*), loads the ``done`` batches again and skips them, and continues
    with the same batches; the bottom row resumes from the state at the checkpoint, which is past
    the epoch's draws, and gets another order. ``batches`` is an int from 2 to 10, ``stop_epoch``
    from 0 to 2, ``done`` from 1 to ``batches - 1``. A schematic: widths are not measured.
    Introduced in lesson 05.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    if not 2 <= batches <= 10 or not 0 <= stop_epoch <= 2 or not 1 <= done < batches:
        raise ValueError(f"batches in 2..10, stop_epoch in 0..2 and done in 1..batches-1, got "
                         f"{batches}, {stop_epoch}, {done}")
    epochs, lead = stop_epoch + 2, 1.2             # epochs drawn; room for the draws at an epoch's start
    span = lead + batches + 0.7                    # and room for the spare draw at its end

    def start(e: int) -> float:
        return e * span

    def batch_x(e: int, b: int) -> float:          # left edge of batch b (0-based) of epoch e
        return start(e) + lead + b

    fig, ax = plt.subplots(figsize=(10.0, 4.3))
    shades = ["#9ecae1", "#6baed6", "#c6dbef"]
    rows = {"run": 2.0, "good": 1.0, "bad": 0.0}

    def draws(e: int, y: float, color: str) -> None:
        ax.plot(start(e) + 0.3, y + 0.55, marker="v", color=color, markersize=7, linestyle="none",
                gid="base_seed")
        ax.plot(start(e) + 0.8, y + 0.55, marker="o", color=color, markersize=6, linestyle="none",
                gid="order")
        ax.plot(batch_x(e, batches) + 0.2, y + 0.55, marker="s", color=color, markersize=5,
                linestyle="none", gid="spare")

    def batch(e: int, b: int, y: float, face: str, label: str, hatch: str | None = None) -> None:
        ax.add_patch(Rectangle((batch_x(e, b), y - 0.3), 0.9, 0.6, facecolor=face, edgecolor="black",
                               linewidth=0.6, hatch=hatch, gid="batch"))
        ax.text(batch_x(e, b) + 0.45, y, label, ha="center", va="center", fontsize="x-small")

    for e in range(epochs):                        # the run that never stops
        draws(e, rows["run"], "tab:blue")
        ax.text(start(e) + 0.55, rows["run"] + 0.95, f"S{e}", ha="center", fontsize="small",
                color="tab:blue", weight="bold")
        ax.text(batch_x(e, 0), rows["run"] + 0.95, f"epoch {e + 1}", ha="left", fontsize="small")
        for b in range(batches):
            batch(e, b, rows["run"], shades[e % 3], str(b + 1))
    for row, resumed_from in (("good", f"S{stop_epoch}"), ("bad", "the state at the checkpoint")):
        y, good = rows[row], row == "good"
        draws(stop_epoch, y, "tab:blue" if good else "tab:red")
        for e in range(stop_epoch, epochs):
            if e > stop_epoch:
                draws(e, y, "tab:blue" if good else "tab:red")
            for b in range(batches):
                if e == stop_epoch and b < done:
                    batch(e, b, y, "#eeeeee", "", hatch="//")
                elif good:
                    batch(e, b, y, shades[e % 3], str(b + 1))
                else:
                    batch(e, b, y, "#f8d7d5", "?")
        ax.text(start(stop_epoch) - 0.2, y, f"resumed from\n{resumed_from}", ha="right", va="center",
                fontsize="small", color="tab:blue" if good else "tab:red")
    ax.text(start(0) - 0.2, rows["run"], "a run that\nnever stops", ha="right", va="center", fontsize="small")
    end = start(epochs - 1) + lead + batches + 0.5
    ax.text(end, rows["good"], "the same batches:\nthe same run", ha="left", va="center",
            fontsize="small", color="tab:blue")
    ax.text(end, rows["bad"], "another order,\nand no error", ha="left", va="center", fontsize="small",
            color="tab:red")
    checkpoint = batch_x(stop_epoch, done) - 0.05
    ax.axvline(checkpoint, color="tab:red", linestyle="--", linewidth=1.2, gid="checkpoint")
    ax.text(checkpoint + 0.15, rows["run"] + 1.3,
            f"checkpoint in epoch {stop_epoch + 1}, after {done} batches:\n"
            f"save S{stop_epoch} (the state when the epoch began), not the state here",
            ha="left", va="bottom", fontsize="small", color="tab:red")
    legend = [
        Line2D([], [], marker="v", color="black", linestyle="none", label="iter(loader) draws base_seed"),
        Line2D([], [], marker="o", color="black", linestyle="none",
               label="the sampler draws the epoch's order (first batch; with workers, at iter)"),
        Line2D([], [], marker="s", color="black", linestyle="none", markersize=5,
               label="the sampler draws a spare permutation as it runs out\n"
                     "(the epoch's end; earlier with workers)"),
        Rectangle((0, 0), 1, 1, facecolor="#eeeeee", edgecolor="black", hatch="//",
                  label="a batch done before the checkpoint: loaded again and skipped"),
    ]
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize="small",
              frameon=False)
    ax.set_xlim(start(0) - 3.2, end + 3.2)
    ax.set_ylim(-0.6, rows["run"] + 1.95)
    ax.set_yticks([])
    ax.set_xticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(f"time \u2192 (a schematic: epochs of {batches} batches; widths are not measured)",
                  fontsize="small")
    ax.set_title("When a DataLoader draws from its generator, and what a resume needs (a schematic)",
                 fontsize="medium")
    fig.tight_layout()
    return fig, ax

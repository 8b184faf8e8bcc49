"""Schematics of a move: which objects ``model.to()`` keeps, and when a ``non_blocking`` copy is done.

They draw what lesson 06 explains, not measurements, and each says so on the figure.
matplotlib is imported inside each function so ``import helpers`` stays cheap; each returns
``(fig, axes)`` and the notebook calls ``plt.show()``. Introduced in lesson 06.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.show.diagrams import _arrow, _blank, _box

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_nonblocking_copy", "draw_what_a_move_keeps"]

# The names that point at a model's tensors, in the order they are drawn (top to bottom).
_NAMES = [
    ("model.weight", 3.0),
    ("w (a name you kept)", 2.35),
    ("optimizer: its params", 1.7),
    ("model.running_mean", 0.75),
    ("rm (a name you kept)", 0.1),
    ("optimizer: its state", -0.9),
]
_BLUE, _GREEN, _GREY, _RED = "#dbe9f6", "#d5ecd4", "#eeeeee", "#f8d7d5"


def _objects(after: bool) -> tuple[dict[str, tuple[str, float, str]], list[tuple[int, str, str]]]:
    """The tensors of one panel, {key: (label, y, colour)}, and the arrows (name index, key, colour)."""
    if not after:
        objects = {
            "param": ("Parameter\ndata on the CPU", 2.35, _BLUE),
            "buffer": ("buffer tensor\non the CPU", 0.42, _BLUE),
            "state": ("state tensor\n(Adam's exp_avg)\non the CPU", -0.9, _BLUE),
        }
        return objects, [(0, "param", "black"), (1, "param", "black"), (2, "param", "black"),
                         (3, "buffer", "black"), (4, "buffer", "black"), (5, "state", "black")]
    objects = {
        "param": ("the same Parameter\ndata now on the GPU", 2.35, _GREEN),
        "new buffer": ("a new buffer tensor\non the GPU", 0.85, _GREEN),
        "old buffer": ("the old buffer tensor\nstill on the CPU", 0.0, _GREY),
        "state": ("state tensor still\non the CPU: the\nnext step raises", -0.9, _RED),
    }
    return objects, [(0, "param", "tab:green"), (1, "param", "tab:green"), (2, "param", "tab:green"),
                     (3, "new buffer", "tab:green"), (4, "old buffer", "grey"), (5, "state", "tab:red")]


def draw_what_a_move_keeps() -> tuple[Figure, tuple[Axes, Axes]]:
    """What ``model.to("cuda")`` does to the objects that names point at, and to the optimizer.

    Left, before the move: the module's ``weight``, a name kept for it and the optimizer's list of
    parameters all point at one ``Parameter``; the module's ``running_mean`` and a kept name point at
    one buffer tensor; the optimizer's state (Adam's ``exp_avg``) is a tensor of its own. Right,
    after: the ``Parameter`` is the same object with new data (``Module._apply`` assigns
    ``param.data``), so every name still reaches it; the buffer slot holds a new tensor and the
    kept name still points at the old one; the optimizer's state has not moved, and the next step
    raises. A dtype change behaves the same way. The defaults, not the ``torch.__future__``
    switches. Introduced in lesson 06.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10.4, 4.4))
    titles = ["before model.to('cuda')",
              "after: Parameter kept, buffer replaced, state left behind"]
    for ax, after, title in zip(axes, (False, True), titles, strict=True):
        for name, y in _NAMES:
            _box(ax, 0.0, y, name, "white", 2.4, 0.45)
        objects, arrows = _objects(after)
        for label, y, colour in objects.values():
            _box(ax, 3.9, y, label, colour, 2.5, 0.62 if label.count("\n") < 2 else 0.8)
        for index, key, colour in arrows:  # arrows into one box end spread along its edge
            into = [i for i, k, _ in arrows if k == key]
            spread = 0.0 if len(into) == 1 else 0.36 * (0.5 - into.index(index) / (len(into) - 1))
            _arrow(ax, (1.22, _NAMES[index][1]), (2.62, objects[key][1] + spread), colour)
        ax.set_xlim(-1.4, 5.3)
        ax.set_ylim(-1.5, 3.5)
        _blank(ax)
        ax.set_title(title, fontsize="medium")
    fig.suptitle("Which objects a move keeps (a schematic, not data)", fontsize="medium")
    fig.tight_layout()
    return fig, (axes[0], axes[1])


def _lane_bar(ax, start: float, length: float, lane: float, text: str, colour: str,
              hatch: str | None = None) -> None:
    ax.broken_barh([(start, length)], (lane - 0.25, 0.5), facecolors=colour, hatch=hatch,
                   edgecolor="black", linewidth=0.5)
    ax.text(start + length / 2, lane, text, ha="center", va="center", fontsize="x-small",
            bbox=dict(facecolor="white", edgecolor="none", pad=1) if hatch else None)


def _moment(ax, t: float, text: str, colour: str) -> None:
    ax.axvline(t, color=colour, linestyle="--", linewidth=1)
    ax.text(t + 0.05, 1.75, text, ha="left", va="center", fontsize="x-small", color=colour)


def draw_nonblocking_copy() -> tuple[Figure, tuple[Axes, Axes]]:
    """When the data of a ``non_blocking=True`` copy can be used, in both directions.

    Top, GPU to CPU: ``x.to("cpu", non_blocking=True)`` returns at once while the copy runs; a
    read of the CPU tensor before ``torch.cuda.synchronize()`` (or a CUDA event) may see data that
    have not arrived; after it, the data are complete. Bottom, CPU to GPU from pinned memory: the
    call returns at once; changing the source before the copy has run can change what arrives;
    GPU work queued after the copy on the same stream waits for it. The durations are made up to
    show the order of events, not measured. Introduced in lesson 06.
    """
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9.0, 4.8), sharex=True)
    cpu, gpu = 1.0, 0.0
    _lane_bar(top, 0.0, 0.5, cpu, "call", _BLUE)
    _lane_bar(top, 2.0, 1.6, cpu, "torch.cuda.synchronize()\nwaits", _GREY, "//")
    _lane_bar(top, 0.5, 3.1, gpu, "the copy runs", "#fde2c8")
    _moment(top, 1.2, "read y here:\nthe data may not\nhave arrived", "tab:red")
    _moment(top, 3.8, "read y here:\ncomplete", "tab:green")
    top.set_title("GPU → CPU: y = x.to('cpu', non_blocking=True)", fontsize="medium")
    _lane_bar(bottom, 0.0, 0.5, cpu, "call", _BLUE)
    _lane_bar(bottom, 0.5, 3.1, cpu, "the CPU goes on with other work", _GREY)
    _lane_bar(bottom, 0.5, 2.3, gpu, "the copy runs", "#fde2c8")
    _lane_bar(bottom, 2.8, 1.8, gpu, "a kernel using x_gpu\n(waits for the copy)", _GREEN)
    _moment(bottom, 1.2, "x.add_(1) here can\nchange what arrives", "tab:red")
    bottom.set_title("CPU → GPU, x in pinned memory: x_gpu = x.to('cuda', non_blocking=True)",
                     fontsize="medium")
    for ax in (top, bottom):
        ax.set_yticks([gpu, cpu], ["GPU", "CPU"])
        ax.set_ylim(-0.5, 2.4)
        ax.set_xlim(-0.1, 5.4)
        ax.set_xticks([])
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    bottom.set_xlabel("time (a schematic: the durations are not measured)")
    fig.tight_layout()
    return fig, (top, bottom)

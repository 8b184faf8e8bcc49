"""Figures for lesson ``07_checkpoints_across_devices``: what a checkpoint file holds.

Matplotlib is imported inside the functions, so ``import helpers`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.show.diagrams import _arrow, _blank, _box

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_checkpoint_contents"]


def draw_checkpoint_contents(tag: str = "cuda:0") -> tuple[Figure, Axes]:
    """A schematic of a ``torch.save`` file and the two switches of ``torch.load`` that act on it.

    The file is a zip archive: ``data.pkl`` is the pickled structure (the dict, its keys, and for
    each tensor a call that rebuilds it from a storage key and a location tag such as ``tag``);
    ``data/0``, ``data/1``... are the storages' raw bytes (the tags live in ``data.pkl``: the
    persistent id of each storage, see ``torch/serialization.py``). ``map_location`` decides where each
    storage goes instead of its tag; ``weights_only=True`` unpickles ``data.pkl`` with an
    allow-list and refuses any other global the pickle names. Introduced in lesson 07.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 3.8))
    # the file
    ax.add_patch(plt.Rectangle((-0.2, -0.45), 4.4, 3.3, facecolor="none", edgecolor="grey",
                               linestyle="--"))
    ax.text(2.0, 2.65, f"a checkpoint saved from {tag} (a zip archive)", ha="center", fontsize="small")
    _box(ax, 2.0, 1.75, "data.pkl: the pickled structure\n{'body.0.weight': rebuild(storage 0,\n"
         f"  location '{tag}', shape, dtype), ...}}\n+ names of any other classes", "#eeeeee", 4.0, 1.1)
    for i in range(2):
        _box(ax, 1.0 + 2.0 * i, 0.2, f"data/{i}: raw bytes\nof storage {i}", "#dbe9f6", 1.8, 0.7)
    # torch.load's two switches
    _box(ax, 7.4, 1.75, "weights_only=True:\nrebuilds tensors, plain types and\nan allow-list; "
         "refuses any\nother global the pickle names", "#fde2c8", 3.4, 1.1)
    _box(ax, 7.4, 0.2, "map_location='cpu':\neach storage goes to the CPU\n"
         f"instead of its tag '{tag}'", "#d5ecd4", 3.4, 0.9)
    _arrow(ax, (4.05, 1.75), (5.65, 1.75))
    _arrow(ax, (3.95, 0.2), (5.65, 0.2))
    ax.set_xlim(-0.4, 9.3)
    ax.set_ylim(-0.6, 2.9)
    _blank(ax)
    ax.set_title("What a checkpoint file holds, and what torch.load's switches act on (a diagram)",
                 fontsize="medium")
    fig.tight_layout()
    return fig, ax

"""Lesson 03's figures: how the reduced-precision formats split their bits, and how a tie rounds.

``draw_format_layouts`` is a schematic of the bit fields (exact counts, not a measurement) next to
each format's range, read from ``torch.finfo``. ``draw_tie_rounding`` puts one value on the number
line of a shorter mantissa and shows where each rounding rule sends it, computed with
:func:`helpers.floats.round_mantissa`. matplotlib is imported inside each function so that
``import helpers`` stays cheap; each returns ``(fig, ax)`` or ``(fig, axes)`` and the notebook
calls ``plt.show()``. Introduced in lesson 03.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["FORMATS", "draw_format_layouts", "draw_tie_rounding", "format_range"]

#: name -> (exponent bits, stored mantissa bits, the dtype whose range it has). TF32 is the format
#: in which tensor cores read float32 inputs: float32's exponent, float16's mantissa, no torch dtype.
FORMATS = {
    "float32": (8, 23, torch.float32),
    "TF32": (8, 10, torch.float32),
    "bfloat16": (8, 7, torch.bfloat16),
    "float16": (5, 10, torch.float16),
}

_COLOURS = {"sign": "#d9d9d9", "exponent": "#9ecae1", "mantissa": "#fdae6b"}


def format_range(name: str) -> tuple[float | None, float, float]:
    """``(smallest subnormal, smallest normal, largest)`` of one of :data:`FORMATS`, from ``torch.finfo``.

    The smallest subnormal is ``finfo.smallest_normal * finfo.eps``. TF32 has float32's normal
    range; whether a tensor core keeps TF32 subnormals is not documented, so it is ``None`` there.
    """
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; use one of: {', '.join(FORMATS)}")
    fi = torch.finfo(FORMATS[name][2])
    subnormal = None if name == "TF32" else fi.smallest_normal * fi.eps
    return subnormal, fi.smallest_normal, fi.max


def draw_format_layouts() -> tuple[Figure, tuple[Axes, Axes]]:
    """Left: the sign, exponent and mantissa bits of float32, TF32, bfloat16 and float16, one box
    per bit (a schematic of the layout). Right: each format's range on a log scale, from its
    smallest subnormal (light) through its smallest normal number to its largest value (dark).

    The exponent's width sets the range and the mantissa's the precision: bfloat16 and TF32 keep
    float32's range with fewer mantissa bits, float16 has TF32's mantissa with a short range.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, (bits_ax, range_ax) = plt.subplots(
        1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1.6, 1]}
    )
    names = list(FORMATS)
    for row, name in enumerate(names):
        exponent, mantissa, _ = FORMATS[name]
        y = len(names) - 1 - row
        fields = [("sign", 1), ("exponent", exponent), ("mantissa", mantissa)]
        x = 0
        for field, width in fields:
            for i in range(width):
                bits_ax.add_patch(Rectangle((x + i, y - 0.35), 1, 0.7, facecolor=_COLOURS[field],
                                            edgecolor="white", linewidth=0.6, gid=f"{name}:{field}"))
            if field != "sign":
                bits_ax.text(x + width / 2, y, str(width), ha="center", va="center", fontsize="small")
            x += width
        total = 1 + exponent + mantissa
        label = f"{name} ({total} bits)" if name != "TF32" else "TF32 (19 bits, read by tensor cores)"
        bits_ax.text(-0.8, y, label, ha="right", va="center", fontsize="small")
    for field, colour in _COLOURS.items():
        bits_ax.add_patch(Rectangle((0, 0), 0, 0, facecolor=colour, label=field))
    bits_ax.set_xlim(-14, 33)
    bits_ax.set_ylim(-0.8, len(names) - 0.3)
    bits_ax.axis("off")
    bits_ax.legend(loc="lower right", fontsize="small", ncol=3, frameon=False, bbox_to_anchor=(1.0, -0.12))
    bits_ax.set_title("bit layout (schematic; the numbers are bit counts)", fontsize="medium")

    for row, name in enumerate(names):
        y = len(names) - 1 - row
        subnormal, normal, largest = format_range(name)
        if subnormal is not None:
            range_ax.barh(y, math.log10(normal) - math.log10(subnormal), left=math.log10(subnormal),
                          height=0.5, color="#c6dbef", gid=f"{name}:subnormal")
        range_ax.barh(y, math.log10(largest) - math.log10(normal), left=math.log10(normal),
                      height=0.5, color="#2171b5", gid=f"{name}:normal")
    range_ax.set_yticks(range(len(names)), list(reversed(names)), fontsize="small")
    range_ax.set_xlabel("log10 of |value| (light: subnormal numbers)")
    range_ax.axvline(0, color="black", linewidth=0.6)
    range_ax.set_title("range, from torch.finfo", fontsize="medium")
    fig.tight_layout()
    return fig, (bits_ax, range_ax)


def draw_tie_rounding(value: float = 1024.5, bits: int = 10) -> tuple[Figure, Axes]:
    """``value`` on the number line of a ``bits``-bit mantissa, and where three rules send it.

    Drawn: the two neighbours of ``value`` that the shorter mantissa can hold (ticks), ``value``
    itself, and one arrow per rule: to nearest with ties to even (IEEE 754's default), to nearest
    with ties away from zero (NVIDIA's ``cvt.rna``) and truncation (dropping the extra bits).
    ``value`` must be a positive normal float32 number that the shorter mantissa cannot hold; 1024.5 with
    10 bits is the tie of PyTorch issue #53635.
    """
    from helpers.floats import round_mantissa

    x = torch.tensor([value], dtype=torch.float32)
    if not (torch.finfo(torch.float32).smallest_normal <= float(x) < math.inf):
        raise ValueError(f"value must be a positive normal float32 number, got {value!r}")
    drop = 23 - bits
    truncated = float((x.view(torch.int32) & -(1 << drop)).view(torch.float32))
    if truncated == float(x):
        raise ValueError(f"{value!r} already fits in {bits} mantissa bits: nothing to round")
    gap = math.ulp(truncated) * 2.0 ** (52 - bits)  # the gap between neighbours with `bits` bits
    lower, upper = truncated, truncated + gap
    rules = {
        "ties to even (IEEE 754 default)": float(round_mantissa(x, bits, ties="even")),
        "ties away from zero (cvt.rna)": float(round_mantissa(x, bits, ties="away")),
        "truncation (the extra bits dropped)": truncated,
    }

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 2.8))
    ax.axhline(0, color="black", linewidth=1)
    ax.vlines([lower, upper], -0.25, 0.25, color="tab:blue", linewidth=2)
    for v in (lower, upper):
        ax.annotate(f"{v:g}", (v, -0.5), ha="center", fontsize="small", color="tab:blue")
    ax.plot([float(x)], [0], "o", color="tab:red", gid="value")
    ax.annotate(f"{float(x):g}", (float(x), -0.5), ha="center", fontsize="small", color="tab:red")
    stacked: dict[float, int] = {}
    for rule, target in rules.items():
        level = stacked.get(target, 0)
        stacked[target] = level + 1
        ax.annotate("", xy=(target, 0.08), xytext=(float(x), 0.08), gid=f"rule:{rule}",
                    arrowprops=dict(arrowstyle="-|>", color="grey", linewidth=1,
                                    connectionstyle=f"arc3,rad={-0.4 if target > float(x) else 0.4}"))
        ax.annotate(rule, (target, 1.0 + 0.3 * level), ha="center", fontsize="small")
    ax.set_xlim(lower - 0.45 * gap, upper + 0.45 * gap)
    ax.set_xticks([])
    ax.set_ylim(-0.8, 1.2 + 0.3 * len(rules))
    ax.set_yticks([])
    ax.set_xlabel(f"value (ticks: the numbers a {bits}-bit mantissa holds here, {gap:g} apart)")
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig, ax

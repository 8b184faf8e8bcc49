"""Pictures of how floats are stored and spaced: the bits of one value, the gap between neighbours.

``draw_float_bits`` is a diagram of one value's bits (computed from the value, not a schematic);
``plot_float_spacing`` draws the exact gap between neighbouring floats across a range of powers
of two, subnormals included. matplotlib is imported inside each function so ``import helpers``
stays cheap; each returns ``(fig, ax)`` and the notebook calls ``plt.show()``. Introduced in
lesson 01.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from helpers.floats import FORMATS, float_anatomy

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_float_bits", "float_gaps", "plot_float_spacing"]

#: The fill colours of the three fields: light versions of ``helpers.float_anatomy``'s red, blue and green.
FIELD_COLOURS = {"sign": "#f5b7b1", "exponent": "#aed6f1", "mantissa": "#a9dfbf"}


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def draw_float_bits(value: float | torch.Tensor, dtype: torch.dtype = torch.float32) -> tuple[Figure, Axes]:
    """The bits of ``value`` rounded to ``dtype``, one box per bit, coloured by field.

    Under each field it writes what the field means for this value: the sign, the exponent
    field's integer and the power of two it stands for, and the significand ``1 + M / 2^(p-1)``
    (``0 + ...`` for a subnormal). The bits come from :func:`helpers.float_anatomy`, so the
    picture is the value's real encoding. ``dtype`` is one of float16, bfloat16, float32 and
    float64. Introduced in lesson 01.
    """
    if dtype not in FORMATS:
        raise TypeError(f"draw_float_bits draws float16, bfloat16, float32 or float64, not {dtype}")
    a = float_anatomy(value, dtype)
    bits = [str(a.sign), *a.exponent_bits, *a.mantissa_bits]
    fields = ["sign"] + ["exponent"] * len(a.exponent_bits) + ["mantissa"] * len(a.mantissa_bits)

    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    width = len(bits)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.3 * width + 1.0), 2.8))
    for i, (bit, field) in enumerate(zip(bits, fields, strict=True)):
        box = Rectangle((i, 0), 1, 1, facecolor=FIELD_COLOURS[field], edgecolor="black", linewidth=0.8)
        ax.add_patch(box)
        ax.text(i + 0.5, 0.5, bit, ha="center", va="center", fontsize="small", family="monospace")

    m = len(a.mantissa_bits)
    raw_exponent = int(a.exponent_bits, 2)
    formula = ""
    if a.kind in ("normal", "subnormal"):
        lead = 1 if a.kind == "normal" else 0
        fraction = lead + int(a.mantissa_bits, 2) / 2**m
        if a.kind == "normal":
            exponent_text = f"{raw_exponent} - {a.bias} = {a.exponent}"
            significand = f"1 + M/2^{m} = {fraction:.10g}"
        else:
            exponent_text = f"all zeros: subnormal, {a.exponent}"
            significand = f"0 + M/2^{m} = {fraction:.10g} (no implicit 1)"
        formula = f"value = {'-' if a.sign else '+'}{fraction:.10g} x 2^{a.exponent} = {a.stored!r}"
    else:
        exponent_text = f"all {'ones' if a.kind in ('inf', 'nan') else 'zeros'}: {a.kind}"
        significand = a.kind
    e_start, e_end = 1, 1 + len(a.exponent_bits)
    labels = [
        (0.5, "sign", "-" if a.sign else "+"),
        ((e_start + e_end) / 2, "exponent", exponent_text),
        ((e_end + width) / 2, f"mantissa M ({m} bits)", significand),
    ]
    for x, title, meaning in labels:
        ax.text(x, -0.35, title, ha="center", va="top", fontsize="small", weight="bold")
        ax.text(x, -0.8, meaning, ha="center", va="top", fontsize="small")
    if formula:
        ax.text(width / 2, -1.35, formula, ha="center", va="top", fontsize="small")
    ax.set_title(f"{a.requested!r} as {_name(dtype)}: the bits store {a.stored!r}", fontsize="medium")
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-1.9, 1.2)
    ax.set_aspect("auto")
    ax.axis("off")
    fig.tight_layout()
    return fig, ax


def float_gaps(dtype: torch.dtype, low: int, high: int) -> list[tuple[float, float, float]]:
    """``(start, end, gap)`` for each binade ``[2^e, 2^(e+1))`` with ``low <= e < high``.

    ``gap`` is the exact distance from ``2^e`` to the next larger ``dtype`` value, which is the
    gap between all neighbours in that binade. Below the smallest normal number, among the
    subnormals, it is the same in every binade down to 0 (2^-149 in float32). ``2^low`` must be at
    least the smallest subnormal (``ValueError`` otherwise). Introduced in lesson 01.
    """
    fi = torch.finfo(dtype)
    smallest = fi.smallest_normal * fi.eps  # the smallest subnormal: 2^-149 in float32
    rows = []
    for e in range(low, high):
        start = 2.0**e
        if start < smallest:
            raise ValueError(f"2^{e} is below {_name(dtype)}'s smallest subnormal, {smallest!r}")
        x = torch.tensor(start, dtype=torch.float64).to(dtype)
        gap = (torch.nextafter(x, torch.tensor(math.inf, dtype=dtype)) - x).double().item()
        rows.append((start, 2.0 ** (e + 1), gap))
    return rows


def plot_float_spacing(
    dtype: torch.dtype = torch.float32, low: int = -3, high: int = 3, title: str = ""
) -> tuple[Figure, Axes]:
    """The gap between neighbouring ``dtype`` values from ``2^low`` to ``2^high``, on log-log axes.

    Each binade ``[2^e, 2^(e+1))`` is one flat step at its gap (measured with
    ``torch.nextafter``, see :func:`float_gaps`): the gap doubles at every power of two. The
    dashed line is ``eps * x``, the gap the value would have if floats kept a fixed relative
    spacing; among the normal numbers the steps stay between half of it and all of it. Where the
    range reaches below the smallest normal number, the subnormals are shaded: their gap stops
    shrinking. Introduced in lesson 01.
    """
    rows = float_gaps(dtype, low, high)
    fi = torch.finfo(dtype)

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    xs = [start for start, _, _ in rows] + [rows[-1][1]]
    ys = [gap for _, _, gap in rows] + [rows[-1][2]]
    ax.step(xs, ys, where="post", color="tab:blue", linewidth=2, label="gap to the next float")
    relative = [fi.eps * x for x in xs]
    ax.plot(xs, relative, "--", color="grey", linewidth=1, label="eps * x (a fixed relative spacing)")
    if xs[0] < fi.smallest_normal:
        ax.axvspan(xs[0], min(fi.smallest_normal, xs[-1]), color="#fdebd0",
                   label=f"subnormals (below {fi.smallest_normal:.3g})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlim(xs[0], xs[-1])
    ax.set_xlabel(f"value x ({_name(dtype)}, log scale)")
    ax.set_ylabel("gap between neighbours")
    ax.legend(fontsize="small", loc="upper left")
    ax.set_title(title or f"{_name(dtype)}: the gap doubles at every power of two", fontsize="medium")
    fig.tight_layout()
    return fig, ax

"""Figures for lesson ``12_debugging_a_mismatch``: the symptom, and where two served models diverge.

:func:`plot_predictions` draws what the separate runs predicted; :func:`plot_stages` draws, for
several comparisons of the same trained weights, which module differs on its own and which only
inherits a difference. Matplotlib is imported inside the functions, so ``import helpers`` stays cheap.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["LEGEND", "VERDICTS", "plot_predictions", "plot_stages", "verdicts"]

#: The plain-word verdicts of :func:`verdicts`, with the colour :func:`plot_stages` gives each.
VERDICTS: dict[str, str] = {
    "same bits": "white",
    "within tolerance": "#9ecae1",
    "first divergence": "tab:red",
    "inherited": "#bdbdbd",
    "diverges too": "#f4a582",
}

#: What each word of :data:`VERDICTS` means, as the caption under :func:`plot_stages` says it.
LEGEND = ("same bits: error 0; within tolerance: the module's own rounding plus at most twice the "
          "error it received; first divergence: the module first_divergence names; inherited: after "
          "it and given a difference, so not judged; diverges too: after it, but given the same "
          "input, and fails")

_OWN_CODE = " (its own code"
_BEFORE = ", before "


def _first_row(module: str | None, names: list[str]) -> int | None:
    """The row of ``names`` that ``first_divergence``'s verdict ``module`` names, or None."""
    if module is None:
        return None
    if module in names:
        return names.index(module)
    parent, found, rest = module.partition(_OWN_CODE)
    if found:
        if rest.startswith(_BEFORE) and rest.endswith(")") and rest[len(_BEFORE):-1] in names:
            return names.index(rest[len(_BEFORE):-1])  # the first call whose input carries it
        if parent in names:
            return names.index(parent)                 # "(model) (its own code)": the model's row
    return None


def verdicts(divergence: object) -> list[str]:
    """One plain-word verdict per row of ``divergence`` (what ``first_divergence`` returns).

    The row of the first divergence is ``"first divergence"``: the module ``first_divergence``
    names, or for a difference made in a container's own code, ``"<parent> (its own code, before
    <call>)"``, the row of ``<call>``, the first call whose input carries it (``"(model) (its own
    code)"``: the model's row). A row that ``first_divergence`` marks ``"inherited"`` (it finished
    after the divergence and was given a difference) is ``"inherited"``; a later row that failed
    although it was given the same input is ``"diverges too"``, a second cause to look at once the
    first is fixed. Any other row is ``"same bits"`` when its largest error is 0, else ``"within
    tolerance"``: within the module's own rounding plus at most twice (``amplification``) the error
    it received, which may be all of its error (see :data:`LEGEND`). Introduced in lesson 12.
    """
    rows = divergence.table.rows
    first = _first_row(divergence.module, [str(row[0]) for row in rows])
    out = []
    for i, row in enumerate(rows):
        verdict = str(row[7])
        if first is not None and i == first:
            out.append("first divergence")
        elif verdict == "inherited":
            out.append("inherited")
        elif first is not None and i > first and verdict.startswith("FAIL"):
            out.append("diverges too")
        else:
            out.append("same bits" if float(row[4]) == 0.0 else "within tolerance")
    return out


def _short(error: float) -> str:
    if error == 0:
        return "0"
    if not math.isfinite(error):
        return "inf"
    return f"{error:.0e}" if error < 0.01 else f"{error:.2g}"


def plot_stages(stages: Mapping[str, object], title: str = "") -> tuple[Figure, Axes]:
    """A grid: one row per comparison in ``stages`` (name -> ``first_divergence`` result), one
    column per module, each cell coloured by its :func:`verdicts` and labelled with its largest
    relative error, with :data:`LEGEND` as a caption under it. The columns follow the first
    comparison's rows. Introduced in lesson 12.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    names = [str(row[0]) for row in next(iter(stages.values())).table.rows]
    fig, ax = plt.subplots(figsize=(7.2, 0.55 * len(stages) + 2.2))
    for r, divergence in enumerate(stages.values()):
        y = len(stages) - 1 - r
        errors = {str(row[0]): float(row[4]) for row in divergence.table.rows}
        kinds = dict(zip((str(row[0]) for row in divergence.table.rows), verdicts(divergence), strict=True))
        for c, name in enumerate(names):
            kind = kinds.get(name)
            colour = VERDICTS.get(kind, "white")
            ax.add_patch(Rectangle((c, y), 1, 1, facecolor=colour, edgecolor="0.4", linewidth=0.8))
            text = _short(errors[name]) if name in errors else "-"
            ax.text(c + 0.5, y + 0.5, text, ha="center", va="center", fontsize="small",
                    color="white" if kind == "first divergence" else "black")
    ax.set_xlim(0, len(names))
    ax.set_ylim(0, len(stages))
    ax.set_xticks([c + 0.5 for c in range(len(names))], names, rotation=30, ha="right", fontsize="small")
    ax.set_yticks([len(stages) - 0.5 - r for r in range(len(stages))], list(stages), fontsize="small")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    shown = {kind for divergence in stages.values() for kind in verdicts(divergence)}
    handles = [Patch(facecolor=colour, edgecolor="0.4", label=kind) for kind, colour in VERDICTS.items()
               if kind in shown or kind != "diverges too"]
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=5, fontsize="small",
              frameon=False)
    if title:
        ax.set_title(title, fontsize="medium", pad=28)
    ax.set_xlabel("module, in the order its call finished (numbers: largest relative error)",
                  fontsize="small")
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    fig.text(0.5, 0.01, textwrap.fill(LEGEND[0].upper() + LEGEND[1:] + ".", 120), ha="center", va="bottom",
             fontsize="x-small", color="0.25")
    return fig, ax


def plot_predictions(runs: Mapping[str, Mapping[str, Sequence[float]]], reference: str = "A"
                     ) -> tuple[Figure, list[Axes]]:
    """What each run predicted for the test bags (left), and how far each is from ``reference``'s
    predictions (right, log scale; a difference of 0 is drawn at the bottom edge, and the
    legend sits in headroom above the largest difference).

    ``runs`` maps a run's name to a record with a ``"predictions"`` list, as lesson 12's child
    processes write it. Introduced in lesson 12.
    """
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.4))
    markers = "os^vD"
    base = list(runs[reference]["predictions"])
    gaps = {}
    for i, (name, run) in enumerate(runs.items()):
        predictions = list(run["predictions"])
        bags = range(len(predictions))
        left.plot(bags, predictions, marker=markers[i % len(markers)], linestyle="none", label=name,
                  markerfacecolor="none" if i else None, markersize=7)
        if name != reference:
            differences = [abs(p - q) for p, q in zip(predictions, base, strict=True)]
            gaps[name] = (differences, markers[i % len(markers)], f"C{i}")
    left.set_xlabel("test bag")
    left.set_ylabel("prediction")
    left.set_title("what each run predicts", fontsize="medium")
    left.legend(fontsize="small")
    finite = [g for values, _, _ in gaps.values() for g in values if g > 0]
    floor = min(finite) / 10 if finite else 1e-12
    for name, (values, marker, colour) in gaps.items():
        right.plot(range(len(values)), [max(v, floor) for v in values], marker=marker, linestyle="none",
                   color=colour, markerfacecolor="none", markersize=7, label=f"{name} against {reference}")
    right.set_yscale("log")
    right.set_xlabel("test bag")
    right.set_ylabel("|difference|")
    right.set_title(f"how far each is from {reference}", fontsize="medium")
    if finite:  # headroom above the largest difference, so that the legend covers no point
        right.set_ylim(top=max(finite) * 30)
    right.legend(fontsize="small", loc="upper center", ncol=2)
    fig.tight_layout()
    return fig, [left, right]

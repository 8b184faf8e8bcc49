"""The recurring plots. matplotlib is imported inside each function so ``import helpers`` stays cheap.

Each function draws on a new figure and returns ``(fig, ax)``; the notebook calls ``plt.show()``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported lazily; these names are for type checkers only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

from helpers.floats import ulp_distance

__all__ = [
    "plot_accumulators",
    "plot_divergence",
    "plot_number_line",
    "plot_speed_vs_error",
    "plot_ulp_differences",
    "plot_error_growth",
    "plot_tolerance_band",
    "plot_run_spread",
    "plot_sum_spread",
]


def plot_sum_spread(
    sums: torch.Tensor, exact: float, unit: float, title: str = "", unit_name: str = ""
) -> tuple[Figure, Axes]:
    """Histogram of many sums of the same numbers, as distances from the exact sum in units of ``unit``.

    ``sums`` holds the sums (any shape, on any device); ``exact`` is the exact sum and ``unit``
    the unit of the distances. ``unit_name`` labels the unit on the x axis (for example "ULPs of
    the sum"). Introduced in lesson 01 (different orders) and reused for atomics in lesson 02.
    """
    offsets = ((sums.detach().cpu().double() - exact) / unit).flatten()
    bins = min(60, max(10, int(offsets.unique().numel())))

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.hist(offsets.numpy(), bins=bins, color="#2471a3")
    ax.axvline(0.0, color="black", linestyle="--", label="exact sum")
    ax.set_xlabel(f"sum - exact, in {unit_name or f'units of {unit:.3g}'}")
    ax.set_ylabel("orders")
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    return fig, ax


def plot_error_growth(
    ns: Sequence[int],
    errors: Mapping[str, Sequence[float]],
    bounds: Mapping[str, Sequence[float]] | None = None,
    ylabel: str = "relative error",
    xlabel: str = "n (numbers summed)",
) -> tuple[Figure, Axes]:
    """Measured errors (solid, markers) and their bounds (dashed) against n, on log-log axes.

    ``ns`` holds the sizes; ``errors`` and ``bounds`` map a label to one value per size.
    Introduced in lesson 01; lesson 03 plots matmul errors against the inner dimension with it.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    colours = {}
    for name, values in errors.items():
        (line,) = ax.loglog(ns, [max(v, 1e-18) for v in values], "o-", label=name)
        colours[name] = line.get_color()
    for name, values in (bounds or {}).items():
        ax.loglog(ns, values, "--", color=colours.get(name.split(" ")[0], "grey"), label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig, ax


def plot_run_spread(
    runs: Mapping[str, torch.Tensor], exact: float, unit: float, unit_name: str = "", title: str = ""
) -> tuple[Figure, Axes]:
    """The result of each run of the same computation, as its distance from the exact value.

    ``runs`` maps a label (a setting, say) to a 1-D tensor holding one result per run; each is
    drawn as dots against the run number, in units of ``unit`` from ``exact``, so a setting whose
    runs agree bit for bit shows as a flat row. ``unit_name`` labels the unit on the y axis.
    Introduced in lesson 04.
    """
    offsets = {label: (values.detach().cpu().double() - exact) / unit for label, values in runs.items()}

    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    for (label, values), marker in zip(offsets.items(), "os^vD" * len(runs), strict=False):
        ax.plot(range(1, values.numel() + 1), values.numpy(), marker, label=label, alpha=0.8)
    ax.axhline(0.0, color="black", linestyle="--", linewidth=1, label="exact value")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("run")
    ax.set_ylabel(f"result - exact, in {unit_name or f'units of {unit:.3g}'}")
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig, ax


def plot_tolerance_band(
    results: Mapping[str, torch.Tensor],
    expected: torch.Tensor,
    rtol: float,
    atol: float,
    title: str = "",
) -> tuple[Figure, Axes]:
    """Each result's error against the size of its expected value, with the line a check allows.

    ``torch.allclose`` and ``assert_close`` pass an entry when
    ``|actual - expected| <= atol + rtol * |expected|``: on log-log axes that is a line, flat at
    ``atol`` for small ``|expected|`` and rising with slope ``rtol`` beyond ``atol / rtol``. Each
    series of ``results`` (a label mapped to a tensor shaped like ``expected``) is drawn as points
    ``(|expected|, |actual - expected|)``, computed in float64; points above the line, the
    entries the check rejects, are red. An error of exactly 0 cannot sit on a log axis: it is drawn
    at the bottom edge, and so is an ``|expected|`` of 0 at the left edge. Introduced in lesson 10.
    """
    e = expected.detach().cpu().double().flatten()
    size = e.abs()
    errors = {label: (v.detach().cpu().double().flatten() - e).abs() for label, v in results.items()}
    allowed = atol + rtol * size
    positive = torch.cat([size, *errors.values(), allowed])
    positive = positive[positive > 0]
    floor = float(positive.min()) / 4 if positive.numel() else 1e-30
    x_low = max(float(size[size > 0].min()) / 2, floor) if bool((size > 0).any()) else floor
    x_high = max(float(size.max()) * 2, x_low * 10)

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    xs = torch.logspace(math.log10(x_low), math.log10(x_high), 200, dtype=torch.float64)
    ax.plot(xs.numpy(), (atol + rtol * xs).numpy(), color="black", linewidth=1.5,
            label="allowed: atol + rtol·|expected|")
    ax.fill_between(xs.numpy(), floor, (atol + rtol * xs).numpy(), color="tab:green", alpha=0.08)
    for (label, err), marker in zip(errors.items(), "o^sDv" * len(errors), strict=False):
        fails = err > allowed
        x, y = size.clamp(min=x_low), err.clamp(min=floor)
        n_fail = int(fails.sum())
        ax.scatter(x[~fails].numpy(), y[~fails].numpy(), s=10, marker=marker, alpha=0.6,
                   label=f"{label}: {len(err) - n_fail} pass")
        ax.scatter(x[fails].numpy(), y[fails].numpy(), s=14, marker=marker, color="tab:red", alpha=0.8,
                   label=f"{label}: {n_fail} fail")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(floor / 2, None)
    ax.set_xlabel("|expected|")
    ax.set_ylabel("|actual - expected|  (0 drawn at the bottom)")
    ax.set_title(f"{title}{': ' if title else ''}rtol = {rtol:.2g}, atol = {atol:.2g}")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    fig.tight_layout()
    return fig, ax


def running_total(value: float, steps: int, dtype: torch.dtype) -> torch.Tensor:
    """The running total of ``value`` added ``steps`` times, one addition at a time in ``dtype``.

    Each addition is rounded to ``dtype``: the accumulator itself is ``dtype``, as in a loop that
    keeps ``total = total + x`` in that format (not ``torch.cumsum``, whose CPU kernel may add in a
    wider type). Returns a float64 tensor of ``steps`` totals. Introduced in lesson 03.
    """
    x, total = torch.tensor(value, dtype=dtype), torch.zeros((), dtype=dtype)
    out = []
    for _ in range(steps):
        total = total + x  # a dtype scalar plus a dtype scalar, rounded to dtype
        out.append(float(total))
    return torch.tensor(out, dtype=torch.float64)


def plot_accumulators(
    dtypes: Sequence[torch.dtype] = (torch.float16, torch.bfloat16, torch.float32),
    steps: int = 4096,
    value: float = 1.0,
    title: str = "",
) -> tuple[Figure, Axes]:
    """Running totals of ``value`` added ``steps`` times, one line per accumulator dtype.

    A total stops growing once ``value`` is less than half the gap between neighbouring floats
    at the total, or exactly half with the tie rounded to the even neighbour (the total itself):
    adding 1.0 in float16 stalls at 2048, in bfloat16 at 256; float32 keeps counting to 2**24.
    The exact total is drawn dashed, and each stall is marked. Introduced in lesson 03.
    """
    totals = {dtype: running_total(value, steps, dtype) for dtype in dtypes}

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    n = torch.arange(1, steps + 1, dtype=torch.float64)
    ax.plot(n.numpy(), (n * value).numpy(), "k--", linewidth=1, label="exact")
    for dtype, total in totals.items():
        name = str(dtype).removeprefix("torch.")
        (line,) = ax.plot(n.numpy(), total.numpy(), label=f"{name} accumulator", linewidth=2)
        stalled = (total[1:] == total[:-1]).nonzero()
        if stalled.numel():
            at = float(total[int(stalled[0, 0])])
            ax.axhline(at, color=line.get_color(), linestyle=":", linewidth=1)
            ax.annotate(f"{name} stalls at {at:g}", (steps, at), xytext=(-4, 3), textcoords="offset points",
                        ha="right", va="bottom", fontsize="small", color=line.get_color())
    ax.set_xlabel(f"number of additions of {value:g}")
    ax.set_ylabel("running total")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left")
    fig.tight_layout()
    return fig, ax


def plot_number_line(
    power: float = 1.0, dtype: torch.dtype = torch.bfloat16, count: int = 8, title: str = ""
) -> tuple[Figure, Axes]:
    """The representable values of ``dtype`` on each side of a power of two, on a linear axis.

    ``count`` neighbours below ``power`` and ``count`` above it are drawn as ticks: the gap
    between neighbours doubles at the power of two, where the exponent steps up (except at the
    smallest normal number, ``finfo.tiny``, where the subnormals below keep the same gap). The
    gaps are labelled. ``power`` is a power of two that ``dtype`` holds as a normal number.
    Introduced in lesson 01.
    """
    centre = torch.tensor(power, dtype=dtype)
    below, above, x = [], [], centre
    for _ in range(count):
        x = torch.nextafter(x, torch.tensor(0.0, dtype=dtype))
        below.append(float(x))
    x = centre
    for _ in range(count):
        x = torch.nextafter(x, torch.tensor(math.inf, dtype=dtype))
        above.append(float(x))
    values = [*reversed(below), power, *above]

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 2.2))
    ax.axhline(0, color="black", linewidth=1)
    ax.vlines(values, -0.3, 0.3, color="tab:blue")
    ax.vlines([power], -0.6, 0.6, color="tab:red", linewidth=2)
    gap_below, gap_above = power - below[0], above[0] - power
    ax.annotate(f"gap {gap_below:g}", ((values[0] + power) / 2, 0.45), ha="center", fontsize="small")
    ax.annotate(f"gap {gap_above:g}", ((power + values[-1]) / 2, 0.45), ha="center", fontsize="small")
    ax.annotate(f"{power:g}", (power, -0.85), ha="center", fontsize="small", color="tab:red")
    ax.set_ylim(-1.1, 0.9)
    ax.set_yticks([])
    ax.set_xlabel(f"value (every tick is a {str(dtype).removeprefix('torch.')} number)")
    ax.set_title(title)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig, ax


def plot_ulp_differences(
    a: torch.Tensor, b: torch.Tensor, labels: tuple[str, str] = ("a", "b"), title: str = ""
) -> tuple[Figure, Axes]:
    """A histogram of how many ULPs apart the results of two runs are, one count per element.

    ``a`` and ``b`` hold the same results computed two ways (1 and 2 threads, say), with one
    float dtype and shape. The distance is signed: positive where ``a`` is the larger. The count
    of results that agree bit for bit is the bar at 0, and is given in the title. Introduced in
    lesson 02.
    """
    distance = ulp_distance(a, b)
    signed = torch.where(a.detach().cpu().flatten() >= b.detach().cpu().flatten(), 1, -1) * distance.flatten()
    same = int((signed == 0).sum())

    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    low, high = int(signed.min()), int(signed.max())
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.hist(signed.numpy(), bins=[x - 0.5 for x in range(low, high + 2)], color="tab:blue", edgecolor="white")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"{labels[0]} - {labels[1]}, in ULPs of the result")
    ax.set_ylabel("results")
    ax.set_title(f"{title}{': ' if title else ''}{same} of {signed.numel()} agree bit for bit")
    fig.tight_layout()
    return fig, ax


def plot_speed_vs_error(
    levers: Mapping[str, tuple[float, float]], budget: float | None = None, title: str = ""
) -> tuple[Figure, Axes]:
    """Each lever as a point: its speed-up (x) against the error it adds (y, log scale).

    ``levers`` maps a name to ``(speed-up, error)``, the speed-up as a ratio to a baseline (1.0:
    no faster) and the error as a number >= 0 (an error of 0 is drawn at the bottom edge). An
    error ``budget``, if given, is drawn as a line: the levers below it and right of 1 are the
    ones worth taking. Introduced in lesson 09.
    """
    errors = [e for _, e in levers.values() if e > 0]
    floor = min(errors + ([budget] if budget else [])) / 10 if errors or budget else 1e-12

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for name, (speed, error) in levers.items():
        ax.scatter([speed], [max(error, floor)], s=40)
        ax.annotate(name, (speed, max(error, floor)), xytext=(5, 4), textcoords="offset points",
                    fontsize="small")
    ax.axvline(1.0, color="gray", linestyle="--", linewidth=1, label="no faster than the baseline")
    if budget is not None:
        ax.axhline(budget, color="tab:red", linestyle=":", linewidth=1.5, label=f"error budget {budget:.2g}")
    ax.set_yscale("log")
    ax.set_xlabel("speed-up over the baseline (times)")
    ax.set_ylabel("error added (0 drawn at the bottom)")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return fig, ax


def plot_divergence(divergence: object, title: str = "") -> tuple[Figure, Axes]:
    """Each module's error next to the tolerance its own rounding allows, in the order the calls finished.

    ``divergence`` is what :func:`helpers.diagnose.first_divergence` returns. One row per module
    call: a bar for its largest relative error and a black tick for its tolerance, both on a log
    scale; a module that fails is red, and the first one to fail is named in the title. An error
    of 0 is drawn at the left edge and an infinite one (outputs of other shapes) at the right.
    Introduced in lesson 12.
    """
    rows = divergence.table.rows
    names = [str(r[0]) for r in rows]
    errors = [float(r[4]) for r in rows]
    tolerances = [float(r[6]) if isinstance(r[6], (int, float)) else 0.0 for r in rows]
    failed = [str(r[7]).startswith("FAIL") for r in rows]
    finite = [v for v in errors + tolerances if 0 < v < math.inf]
    low = min(finite) / 10 if finite else 1e-12
    high = max(finite) * 10 if finite else 1.0

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(rows) + 1.4))
    y = list(range(len(rows)))[::-1]
    shown = [min(max(e, low), high) for e in errors]
    ax.barh(y, shown, left=low, color=["tab:red" if f else "tab:blue" for f in failed], height=0.6)
    ax.scatter([max(t, low) for t in tolerances], y, marker="|", s=300, color="black", label="tolerance",
               zorder=3)
    ax.set_yticks(y, names, fontsize="small")
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("largest relative error (bars; red: above its tolerance)")
    found = "nothing diverges" if divergence.module is None else f"first divergence: {divergence.module}"
    ax.set_title(f"{title}{': ' if title else ''}{found}", fontsize="medium")
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    return fig, ax

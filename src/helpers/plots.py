"""The recurring plots. matplotlib is imported inside each function so ``import helpers`` stays cheap.

Each function draws on a new figure and returns ``(fig, ax)``; the notebook calls ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported lazily; these names are for type checkers only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

from helpers.floats import _check_float_dtype, ulp

__all__ = [
    "plot_error_growth",
    "plot_roofline",
    "plot_run_spread",
    "plot_sum_spread",
    "plot_sweeps",
    "plot_ulp",
]


def plot_ulp(
    dtype: torch.dtype = torch.float32, low: float = 1e-3, high: float = 1e8, points: int = 2000
) -> tuple[Figure, Axes]:
    """Draw the ULP (gap between neighbouring floats) against magnitude on log-log axes.

    Introduced in lesson 01.
    """
    import matplotlib.pyplot as plt

    _check_float_dtype(dtype)
    if not 0 < low < high:
        raise ValueError(f"need 0 < low < high, got low={low}, high={high}")
    x = torch.logspace(
        torch.log10(torch.tensor(low)).item(),
        torch.log10(torch.tensor(high)).item(),
        points,
        dtype=torch.float64,
    ).to(dtype)
    eps = torch.finfo(dtype).eps
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.loglog(x.double(), ulp(x).double(), drawstyle="steps-post", label=f"ulp(x), {str(dtype)[6:]}")
    ax.loglog(x.double(), eps * x.double(), "--", color="grey", label="eps * x")
    ax.set_xlabel("x")
    ax.set_ylabel("gap to the next float")
    ax.legend()
    ax.set_title("The gap between floats doubles at every power of two")
    fig.tight_layout()
    return fig, ax


def plot_sum_spread(
    sums: torch.Tensor, exact: float, unit: float, title: str = "", unit_name: str = ""
) -> tuple[Figure, Axes]:
    """Histogram of many sums of the same numbers, as distances from the exact sum in units of ``unit``.

    ``unit_name`` labels the unit on the x axis (for example "ULPs of the sum").
    Introduced in lesson 01 (different orders) and reused for atomics in lesson 02.
    """
    import matplotlib.pyplot as plt

    if not isinstance(sums, torch.Tensor) or sums.numel() == 0:
        raise ValueError("sums must be a non-empty tensor")
    if not unit > 0:
        raise ValueError(f"unit must be positive, got {unit}")
    offsets = ((sums.double() - exact) / unit).flatten()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.hist(offsets.numpy(), bins=min(60, max(10, int(offsets.unique().numel()))), color="#2471a3")
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

    Introduced in lesson 01; lesson 03 plots matmul errors against the inner dimension with it.
    """
    import matplotlib.pyplot as plt

    if len(ns) == 0:
        raise ValueError("ns is empty")
    for name, values in {**errors, **(bounds or {})}.items():
        if len(values) != len(ns):
            raise ValueError(f"{name!r} has {len(values)} values for {len(ns)} sizes")
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


def plot_sweeps(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    xlabel: str,
    ylabel: str,
    title: str = "",
) -> tuple[Figure, Axes]:
    """Several size sweeps on log-log axes: ``series`` maps a label to (sizes, values).

    Labels that contain "recorded" are drawn dashed, so live and recorded data never look alike.
    Introduced in lesson 08.
    """
    import matplotlib.pyplot as plt

    if not series:
        raise ValueError("series is empty")
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for label, (xs, ys) in series.items():
        if len(xs) != len(ys) or len(xs) == 0:
            raise ValueError(f"{label!r}: {len(xs)} sizes for {len(ys)} values")
        ax.loglog(xs, ys, "o--" if "recorded" in label else "o-", label=label, markersize=4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig, ax


def plot_roofline(
    points: Mapping[str, tuple[float, float]], peak_gflops: float, peak_gbps: float, title: str = ""
) -> tuple[Figure, Axes]:
    """A roofline: attained GFLOP/s against arithmetic intensity (FLOPs per byte), under two ceilings.

    The ceilings are ``peak_gbps * intensity`` (memory bound) and ``peak_gflops`` (compute bound);
    they meet at the ridge point ``peak_gflops / peak_gbps``. Introduced in lesson 08.
    """
    import matplotlib.pyplot as plt

    if not (peak_gflops > 0 and peak_gbps > 0):
        raise ValueError("the peaks must be positive")
    ridge = peak_gflops / peak_gbps
    intensities = [i for i, _ in points.values()] + [ridge]
    low, high = min(intensities) / 4, max(intensities) * 4
    xs = torch.logspace(torch.log10(torch.tensor(low)).item(), torch.log10(torch.tensor(high)).item(), 200)
    roof = torch.minimum(xs * peak_gbps, torch.full_like(xs, peak_gflops))
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.loglog(xs, roof, color="black", linewidth=1.2, label="roof: min(bandwidth x intensity, peak)")
    ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
    for label, (intensity, gflops) in points.items():
        ax.loglog([intensity], [gflops], "o", label=label)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title)
    ax.legend(fontsize="x-small")
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
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if not runs:
        raise ValueError("runs is empty")
    if not unit > 0:
        raise ValueError(f"unit must be positive, got {unit}")
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    for (label, values), marker in zip(runs.items(), "os^vD" * len(runs)):
        if not isinstance(values, torch.Tensor) or values.dim() != 1 or values.numel() == 0:
            raise ValueError(f"{label!r}: need a non-empty 1-D tensor of results, one per run")
        offsets = (values.double() - exact) / unit
        ax.plot(range(1, values.numel() + 1), offsets.numpy(), marker, label=label, alpha=0.8)
    ax.axhline(0.0, color="black", linestyle="--", linewidth=1, label="exact value")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("run")
    ax.set_ylabel(f"result - exact, in {unit_name or f'units of {unit:.3g}'}")
    ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig, ax

"""Lesson 08's figures: throughput against size, and a roofline, with GPU peaks from datasheets.

Live measurements are drawn as solid lines and dots. Where a GPU is not measured live, the figures
show two GPUs' *datasheet* peaks as dashed reference lines, labelled "datasheet peak, not measured":
what NVIDIA specifies, not what anyone timed. matplotlib is imported inside each function so
``import helpers`` stays cheap; each returns ``(fig, axes)`` and the notebook calls ``plt.show()``.
Introduced in lesson 08.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from helpers.lessons.bench import SweepPoint

__all__ = ["DATASHEET_PEAKS", "DatasheetPeak", "plot_roofline_with_datasheets", "plot_throughput"]


@dataclass(frozen=True)
class DatasheetPeak:
    """A GPU's specified float32 peak (non-Tensor-Core) and memory bandwidth, and where they come from."""

    name: str
    fp32_gflops: float
    bandwidth_gbps: float
    source: str

    @property
    def ridge(self) -> float:
        """FLOPs per byte where the two datasheet roofs meet."""
        return self.fp32_gflops / self.bandwidth_gbps


#: NVIDIA's specified peaks for two GPUs: the T4 that free notebook services hand out, and an H100
#: (SXM). Float32 without Tensor Cores, the arithmetic a float32 ``a @ b`` uses by default in PyTorch
#: (``torch.backends.cuda.matmul.allow_tf32`` is False unless set). T4: NVIDIA's T4 datasheet, as
#: tabulated with that link in xFormers' ``xformers/profiler/device_limits.py``; H100 SXM: NVIDIA's H100
#: page, as tabulated with that link in ``torch/_inductor/analysis/device_info.py`` (torch 2.13).
DATASHEET_PEAKS: tuple[DatasheetPeak, ...] = (
    DatasheetPeak(
        "NVIDIA T4",
        8_100.0,
        300.0,
        "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf",
    ),
    DatasheetPeak("NVIDIA H100 SXM", 67_000.0, 3_350.0, "https://www.nvidia.com/en-us/data-center/h100/"),
)

_DASHES = ("--", "-.")


def plot_throughput(
    cpu: Mapping[str, Sequence[SweepPoint]],
    live: Mapping[str, Sequence[SweepPoint]] | None = None,
    live_name: str = "GPU",
    datasheets: Sequence[DatasheetPeak] = DATASHEET_PEAKS,
) -> tuple[Figure, tuple[Axes, Axes]]:
    """Two panels, GFLOP/s of ``cpu["matmul"]`` and GB/s of ``cpu["add"]`` against size, on log axes.

    Sizes whose timing stayed noisy (``SweepPoint.noisy``) are drawn hollow. ``live`` holds a GPU's
    sweeps under the same keys, drawn as a second solid line; without it, each datasheet GPU's peak
    appears as a dashed horizontal line: a ceiling, labelled as not measured. Introduced in lesson 08.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.9))
    panels = (("matmul", "n (an n x n product)", "GFLOP/s", "fp32_gflops"),
              ("add", "elements (a + b, out=c)", "GB/s", "bandwidth_gbps"))
    for ax, (key, xlabel, unit, peak) in zip(axes, panels, strict=True):
        series = [("this CPU (live)", cpu[key], "o-", "tab:blue")]
        if live and key in live:
            series.append((f"{live_name} (live)", live[key], "s-", "tab:orange"))
        for label, points, style, color in series:
            xs, ys = [p.size for p in points], [p.rate for p in points]
            ax.loglog(xs, ys, style, color=color, label=label, markersize=4)
            noisy = [(p.size, p.rate) for p in points if p.noisy]
            if noisy:
                ax.loglog(*zip(*noisy, strict=True), "o", markerfacecolor="white", color=color,
                          label="still noisy after a second timing")
        if not live:
            for ref, dash in zip(datasheets, _DASHES, strict=False):
                ax.axhline(getattr(ref, peak), color="grey", linestyle=dash, linewidth=1.1,
                           label=f"{ref.name}: datasheet peak, not measured")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(unit)
        ax.xaxis.set_minor_formatter(NullFormatter())
        if key == "matmul":  # few sizes, far apart: label each one
            sizes = sorted({p.size for _, points, _, _ in series for p in points})
            ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.legend(fontsize="x-small", loc="best")
    axes[0].set_title("matrix product")
    axes[1].set_title("elementwise add")
    fig.suptitle("CPU measured here; " + (f"{live_name} measured here" if live else
                                          "GPUs: NVIDIA's datasheet peaks (dashed), not measurements"))
    fig.tight_layout()
    return fig, (axes[0], axes[1])


def plot_roofline_with_datasheets(
    points: Mapping[str, tuple[float, float]],
    peak_gflops: float,
    peak_gbps: float,
    datasheets: Sequence[DatasheetPeak] = DATASHEET_PEAKS,
    title: str = "",
) -> tuple[Figure, Axes]:
    """A roofline measured on this machine (solid) with each datasheet GPU's roofline (dashed).

    ``points`` maps a label to ``(intensity in FLOPs per byte, GFLOP/s)``; the measured roof is
    ``min(peak_gbps * intensity, peak_gflops)``, and each datasheet roof the same with its GPU's
    specified numbers. Introduced in lesson 08.
    """
    import matplotlib.pyplot as plt
    import torch

    ridges = [peak_gflops / peak_gbps] + [d.ridge for d in datasheets]
    intensities = [i for i, _ in points.values()] + ridges
    low, high = min(intensities) / 4, max(intensities) * 4
    xs = torch.logspace(torch.log10(torch.tensor(low)).item(), torch.log10(torch.tensor(high)).item(), 200)

    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    for ref, dash in zip(datasheets, _DASHES, strict=False):
        roof = torch.minimum(xs * ref.bandwidth_gbps, torch.full_like(xs, ref.fp32_gflops))
        ax.loglog(xs, roof, color="grey", linestyle=dash, linewidth=1.1,
                  label=f"{ref.name}: datasheet roof, not measured")
    roof = torch.minimum(xs * peak_gbps, torch.full_like(xs, peak_gflops))
    ax.loglog(xs, roof, color="black", linewidth=1.4, label="this CPU: measured roof")
    for label, (intensity, gflops) in points.items():
        ax.loglog([intensity], [gflops], "o", label=label)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig, ax

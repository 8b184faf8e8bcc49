"""Lesson 10's picture of two trainings drifting apart: weights far apart, losses close.

:func:`weight_drift` measures, step by step, how far each run's weights are from a reference run's,
relative to the reference's size; :func:`plot_drift` draws that distance on a log scale next to each
run's training loss (a moving mean). A run is ``(weights, losses, accuracy)``: ``weights`` a
``[steps, n]`` tensor holding all parameters flattened after each step, ``losses`` one float per
step, ``accuracy`` a float. matplotlib is imported inside the function so ``import helpers`` stays
cheap; it returns ``(fig, axes)`` and the notebook calls ``plt.show()``. Introduced in lesson 10.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_drift", "weight_drift"]

Run = tuple[torch.Tensor, Sequence[float], float]


def _check_runs(runs: Mapping[str, Run], reference: str) -> torch.Tensor:
    if not isinstance(runs, Mapping) or reference not in runs:
        raise ValueError(f"runs must be a mapping of run names that holds the reference run {reference!r}")
    ref = runs[reference][0]
    if not isinstance(ref, torch.Tensor) or ref.dim() != 2 or ref.shape[0] == 0:
        raise ValueError("each run's weights must be a [steps, n] tensor with at least one step")
    for name, (weights, losses, _) in runs.items():
        if not isinstance(weights, torch.Tensor) or weights.shape != ref.shape:
            raise ValueError(f"run {name!r}: weights must have the reference's shape, {tuple(ref.shape)}")
        if len(losses) != ref.shape[0]:
            raise ValueError(f"run {name!r}: one loss per step expected ({ref.shape[0]}), got {len(losses)}")
    return ref


def weight_drift(runs: Mapping[str, Run], reference: str = "reference") -> dict[str, torch.Tensor]:
    """For each run but ``reference``: ``|w - w_ref| / |w_ref|`` after each step (a 1-D tensor)."""
    ref = _check_runs(runs, reference)
    return {
        name: (weights - ref).norm(dim=1) / ref.norm(dim=1)
        for name, (weights, _, _) in runs.items()
        if name != reference
    }


def plot_drift(
    runs: Mapping[str, Run], reference: str = "reference", smooth: int = 25
) -> tuple[Figure, tuple[Axes, Axes]]:
    """Left: each run's weight distance from ``reference`` per step (log scale). Right: every run's loss.

    The loss is a moving mean over ``smooth`` steps (or all of them, if there are fewer). A distance
    of exactly 0 is drawn at 1e-12, the bottom of the log axis.
    """
    drift = weight_drift(runs, reference)
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ValueError(f"smooth must be a positive int, got {smooth!r}")

    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    colours = {name: f"C{i}" for i, name in enumerate(runs)}
    for name, d in drift.items():
        left.semilogy(d.clamp_min(1e-12).numpy(), color=colours[name], label=name)
    left.set_xlabel("step")
    left.set_ylabel(f"relative distance of the weights\nfrom the {reference} run")
    left.legend()
    for name, (_, losses, _) in runs.items():
        loss = torch.tensor([float(v) for v in losses], dtype=torch.float64)
        window = min(smooth, loss.numel())
        right.plot(loss.unfold(0, window, 1).mean(dim=1).numpy(), color=colours[name], label=name)
    right.set_xlabel("step")
    right.set_ylabel(f"training loss (mean of {min(smooth, len(runs[reference][1]))} steps)")
    right.legend()
    fig.tight_layout()
    return fig, (left, right)

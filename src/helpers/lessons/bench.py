"""Thin wrappers on ``torch.utils.benchmark`` for timings and size sweeps, and the rates they imply.

The lessons call ``torch.utils.benchmark.Timer`` directly where the API is the point; these
helpers only take the repetition out of sweeps (one timing per size, with its spread) and turn
times into GFLOP/s and GB/s. ``Timer`` synchronises CUDA itself, so GPU timings are of the work,
not of the launch. Introduced in lesson ``08_cpu_vs_gpu_performance``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.utils import benchmark

from helpers.show.tables import Table

__all__ = ["SweepPoint", "Timing", "gb_per_s", "gflop_per_s", "sweep", "sweep_table", "time_call"]

@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the interquartile range over ``runs`` measured blocks."""

    median: float
    iqr: float
    runs: int

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median (0.05 means 5%)."""
        return self.iqr / self.median if self.median > 0 else float("inf")


def time_call(fn: Callable[[], object], min_run_time: float = 0.2, threads: int | None = None) -> Timing:
    """Time ``fn()`` with ``torch.utils.benchmark.Timer.blocked_autorange``.

    ``threads`` is passed to the Timer, which sets the intra-op thread count only while it
    measures (default: the current setting). Introduced in lesson 08.
    """
    timer = benchmark.Timer(
        stmt="fn()",
        globals={"fn": fn},
        num_threads=threads if threads is not None else torch.get_num_threads(),
    )
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(median=m.median, iqr=m.iqr, runs=len(m.times))


def gflop_per_s(flops: float, seconds: float) -> float:
    """Billions of floating-point operations per second. Introduced in lesson 08."""
    return flops / seconds / 1e9


def gb_per_s(nbytes: float, seconds: float) -> float:
    """Billions of bytes moved per second. Introduced in lesson 08."""
    return nbytes / seconds / 1e9


@dataclass(frozen=True)
class SweepPoint:
    """One size of a sweep: its timing and the work (FLOPs or bytes) one call does."""

    size: int
    timing: Timing
    work: float

    @property
    def rate(self) -> float:
        """Work per second, in billions (GFLOP/s or GB/s, whichever ``work`` counts)."""
        return self.work / self.timing.median / 1e9


class _Progress:
    """A one-line progress report that appears only once a sweep has run for ``after`` seconds.

    The line is shown as updates to a display that starts empty and is emptied again at the end.
    nbval compares the first form of each output and never its updates, and Jupyter saves the
    last one, so the line comes and goes without making a notebook's outputs depend on the
    machine's speed.
    """

    def __init__(self, total: int, after: float) -> None:
        self.total, self.after, self.start, self.handle = total, after, time.perf_counter(), None

    def update(self, done: int, label: str) -> None:
        if time.perf_counter() - self.start < self.after:
            return
        if self.handle is None:
            try:
                from IPython import get_ipython
                from IPython.display import display
            except ImportError:  # no IPython: nowhere to show it
                return
            if get_ipython() is None:  # plain Python: no display to update
                return
            self.handle = display({}, raw=True, display_id=True)
        self.handle.update({"text/plain": f"sweep: {done}/{self.total} sizes done (last: {label})"}, raw=True)

    def close(self) -> None:
        if self.handle is not None:
            self.handle.update({}, raw=True)


def sweep(
    make_call: Callable[[int], Callable[[], object]],
    sizes: Sequence[int],
    work: Callable[[int], float],
    min_run_time: float = 0.1,
    progress_after: float = 5.0,
) -> list[SweepPoint]:
    """Time ``make_call(size)()`` for each size; ``work(size)`` is the FLOPs or bytes of one call.

    A progress line appears only while the sweep runs, once it has run longer than
    ``progress_after`` seconds, and it is removed at the end, so the cell's saved output does not
    depend on the machine's speed. Introduced in lesson 08.
    """
    progress = _Progress(len(sizes), progress_after)
    points = []
    for i, size in enumerate(sizes):
        call = make_call(size)
        call()  # warm-up: the first call pays for allocation and kernel selection
        points.append(SweepPoint(size, time_call(call, min_run_time), work(size)))
        progress.update(i + 1, str(size))
    progress.close()
    return points


def sweep_table(points: Sequence[SweepPoint], unit: str, title: str = "") -> Table:
    """A sweep as a table: size, median time, spread and rate. Introduced in lesson 08."""
    rows = [
        (p.size, f"{p.timing.median * 1e6:.1f}", f"{p.timing.spread:.0%}", f"{p.rate:.2f}") for p in points
    ]
    return Table(["size", "median (us)", "spread (IQR)", unit], rows, title=title)

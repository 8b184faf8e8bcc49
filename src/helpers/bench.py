"""Thin wrappers on ``torch.utils.benchmark`` for timings and size sweeps, and the rates they imply.

The lessons call ``torch.utils.benchmark.Timer`` directly where the API is the point; these
helpers only take the repetition out of sweeps (one timing per size, with its spread) and turn
times into GFLOP/s and GB/s. ``Timer`` synchronises CUDA itself, so GPU timings are of the work,
not of the launch. Introduced in lesson ``08_cpu_vs_gpu_performance``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.utils import benchmark

from helpers._validate import (
    check_callable,
    check_int,
    check_real,
    check_sequence,
    check_str,
    describe,
)
from helpers.tables import Table

__all__ = ["SweepPoint", "Timing", "gb_per_s", "gflop_per_s", "sweep", "sweep_table", "time_call"]

#: The longest ``min_run_time`` accepted, in seconds: ten minutes per timing is far beyond what a
#: lesson needs (they use 0.1 to 1 s), and a larger value is a slip that would look like a hang.
MAX_MIN_RUN_TIME = 600.0

#: The most threads ``time_call`` accepts: far more cores than any machine has; the Timer passes
#: the count to a C int.
MAX_THREADS = 2**15


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the interquartile range over ``runs`` measured blocks."""

    median: float
    iqr: float
    runs: int

    def __post_init__(self) -> None:
        """Check the fields (normally :func:`time_call` fills them in).

        Raises:
            TypeError: ``median`` or ``iqr`` is not a real number, or ``runs`` not an int.
            ValueError: ``median`` or ``iqr`` is negative or not finite, or ``runs`` is below 1.
        """
        check_real(self.median, "median", min=0.0)
        check_real(self.iqr, "iqr", min=0.0)
        check_int(self.runs, "runs", min=1)

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median (0.05 means 5%)."""
        return self.iqr / self.median if self.median > 0 else float("inf")


def _check_min_run_time(min_run_time: object) -> float:
    value = check_real(min_run_time, "min_run_time", positive=True)
    if value > MAX_MIN_RUN_TIME:
        raise ValueError(
            f"min_run_time must be at most {MAX_MIN_RUN_TIME:g} seconds (MAX_MIN_RUN_TIME), got {value:g}: "
            "a timing that long would look like a hang"
        )
    return value


def time_call(fn: Callable[[], object], min_run_time: float = 0.2, threads: int | None = None) -> Timing:
    """Time ``fn()`` with ``torch.utils.benchmark.Timer.blocked_autorange``.

    ``threads`` (a positive int, at most ``MAX_THREADS`` = 2**15) is passed to the Timer, which
    sets the intra-op thread count only while it measures (default: the current setting).
    ``min_run_time`` is positive and at most ``MAX_MIN_RUN_TIME`` (600 s). Introduced in lesson 08.

    Raises:
        TypeError: ``fn`` is not callable, ``min_run_time`` not a number or ``threads`` not an int.
        ValueError: ``min_run_time`` is not positive or above 600 s, or ``threads`` is below 1 or
            above 2**15.
    """
    check_callable(fn, "fn")
    min_run_time = _check_min_run_time(min_run_time)
    if threads is not None:
        threads = check_int(threads, "threads", min=1, max=MAX_THREADS)
    timer = benchmark.Timer(
        stmt="fn()",
        globals={"fn": fn},
        num_threads=threads if threads is not None else torch.get_num_threads(),
    )
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(median=m.median, iqr=m.iqr, runs=len(m.times))


def _rate(work: object, work_name: str, seconds: object) -> float:
    """``work / seconds / 1e9`` for a non-negative finite ``work`` and a positive finite ``seconds``.

    Refuses a pair whose rate overflows (``1e300`` FLOPs in ``1e-300`` s): no machine does that.
    """
    amount = check_real(work, work_name, min=0.0)
    duration = check_real(seconds, "seconds", positive=True)
    rate = amount / duration / 1e9
    if not math.isfinite(rate):
        raise ValueError(
            f"seconds={duration:g} is too small for {work_name}={amount:g}: "
            f"the rate {work_name} / seconds overflows"
        )
    return rate


def gflop_per_s(flops: float, seconds: float) -> float:
    """Billions of floating-point operations per second. Introduced in lesson 08.

    Raises:
        TypeError: ``flops`` or ``seconds`` is not a real number.
        ValueError: ``flops`` is negative or not finite, ``seconds`` is not positive and finite,
            or the rate overflows.
    """
    return _rate(flops, "flops", seconds)


def gb_per_s(nbytes: float, seconds: float) -> float:
    """Billions of bytes moved per second. Introduced in lesson 08.

    Raises:
        TypeError: ``nbytes`` or ``seconds`` is not a real number.
        ValueError: ``nbytes`` is negative or not finite, ``seconds`` is not positive and finite,
            or the rate overflows.
    """
    return _rate(nbytes, "nbytes", seconds)


@dataclass(frozen=True)
class SweepPoint:
    """One size of a sweep: its timing and the work (FLOPs or bytes) one call does."""

    size: int
    timing: Timing
    work: float

    def __post_init__(self) -> None:
        """Check the fields (normally :func:`sweep` fills them in).

        Raises:
            TypeError: ``size`` is not an int, ``timing`` not a :class:`Timing` or ``work`` not
                a real number.
            ValueError: ``size`` is below 1, ``work`` is negative or not finite, ``timing.median``
                is 0 (a rate needs a time), or the rate ``work / timing.median`` overflows.
        """
        check_int(self.size, "size", min=1)
        if not isinstance(self.timing, Timing):
            raise TypeError(f"timing must be a Timing (what time_call returns), got {describe(self.timing)}")
        work = check_real(self.work, "work", min=0.0)
        if not self.timing.median > 0:
            raise ValueError("timing.median is 0: a rate needs a positive time per call")
        if not math.isfinite(work / self.timing.median / 1e9):
            raise ValueError(
                f"timing.median={self.timing.median:g} s is too small for work={work:g}: the rate overflows"
            )

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

    ``sizes`` is a non-empty list or tuple of positive ints. ``work`` is asked for every size
    before anything is timed, so that a bad count is refused at once. A progress line appears
    only while the sweep runs, once it has run longer than ``progress_after`` seconds (a
    non-negative number), and it is removed at the end, so the cell's saved output does not
    depend on the machine's speed. Introduced in lesson 08.

    Raises:
        TypeError: ``make_call`` or ``work`` is not callable, ``sizes`` is not a list or tuple of
            ints, a number is not a number, ``work(size)`` is not a number or ``make_call(size)``
            is not callable.
        ValueError: ``sizes`` is empty or holds a size below 1, ``min_run_time`` is not positive
            or above ``MAX_MIN_RUN_TIME`` (600 s), ``progress_after`` is negative or not finite,
            or ``work(size)`` is negative or not finite.
    """
    check_callable(make_call, "make_call")
    sizes = check_sequence(sizes, "sizes", nonempty=True, item_check=lambda v, n: check_int(v, n, min=1))
    check_callable(work, "work")
    min_run_time = _check_min_run_time(min_run_time)
    progress_after = check_real(progress_after, "progress_after", min=0.0)
    works = [check_real(work(size), f"work({size})", min=0.0) for size in sizes]
    progress = _Progress(len(sizes), progress_after)
    points = []
    for i, (size, amount) in enumerate(zip(sizes, works, strict=True)):
        call = check_callable(make_call(size), f"make_call({size})")
        call()  # warm-up: the first call pays for allocation and kernel selection
        points.append(SweepPoint(size, time_call(call, min_run_time), amount))
        progress.update(i + 1, str(size))
    progress.close()
    return points


def _check_sweep_point(value: object, name: str) -> SweepPoint:
    if not isinstance(value, SweepPoint):
        raise TypeError(f"{name} must be a SweepPoint (what sweep returns), got {describe(value)}")
    return value


def sweep_table(points: Sequence[SweepPoint], unit: str, title: str = "") -> Table:
    """A sweep as a table: size, median time, spread and rate. Introduced in lesson 08.

    Raises:
        TypeError: ``points`` is not a list or tuple of :class:`SweepPoint`, or ``unit`` or
            ``title`` is not a str.
    """
    points = check_sequence(points, "points", item_check=_check_sweep_point)
    check_str(unit, "unit")
    check_str(title, "title")
    rows = [
        (p.size, f"{p.timing.median * 1e6:.1f}", f"{p.timing.spread:.0%}", f"{p.rate:.2f}") for p in points
    ]
    return Table(["size", "median (us)", "spread (IQR)", unit], rows, title=title)

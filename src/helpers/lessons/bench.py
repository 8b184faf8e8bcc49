"""Thin wrappers on ``torch.utils.benchmark`` for timings and size sweeps, and the rates they imply.

The lessons call ``torch.utils.benchmark.Timer`` directly where the API is the point; these
helpers only take the repetition out of sweeps (one timing per size, with its spread, and a second
timing of any size whose spread is too wide or unknown) and of interleaved comparisons, flag what
stayed noisy, and turn times into GFLOP/s and GB/s. ``Timer``
synchronises CUDA itself, so GPU timings are of the work, not of the launch. Introduced in lesson
``08_cpu_vs_gpu_performance``.
"""

from __future__ import annotations

import math
import os
import time
import timeit
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch.utils import benchmark
from torch.utils.benchmark.utils.timer import timer as synchronised_clock
from torch.utils.data import Dataset

from helpers.show.tables import Table

__all__ = [
    "MIN_RUNS",
    "NOISY",
    "Comparison",
    "SweepPoint",
    "Timing",
    "compare",
    "gb_per_s",
    "gflop_per_s",
    "load_note",
    "noise_summary",
    "page_faults_per_call",
    "sweep",
    "sweep_table",
    "time_call",
]

#: A timing whose interquartile range exceeds this fraction of its median is called noisy: the
#: machine did other work while it was measured. ``sweep`` and ``compare`` time such a timing a
#: second time where that is cheap.
NOISY = 0.2

#: Fewer measured blocks than this give no usable spread (one block has an IQR of 0): such a
#: timing counts as noisy, and :func:`time_call` times further blocks, within a budget, to reach this many.
MIN_RUNS = 5


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the interquartile range over ``runs`` measured blocks."""

    median: float
    iqr: float
    runs: int

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median (0.05 means 5%).

        Infinite when fewer than :data:`MIN_RUNS` blocks were measured: the spread is then
        unknown, and an unknown spread must not read as a steady timing.
        """
        if self.runs < MIN_RUNS or self.median <= 0:
            return math.inf
        return self.iqr / self.median


def time_call(
    fn: Callable[[], object], min_run_time: float = 0.2, threads: int | None = None, max_run_time: float = 0.5
) -> Timing:
    """Time ``fn()`` with ``torch.utils.benchmark.Timer.blocked_autorange``.

    ``threads`` is passed to the Timer, which sets the intra-op thread count only while it
    measures (default: the current setting). ``blocked_autorange`` makes each block of calls long
    enough for the clock's own cost to vanish (often tens of milliseconds), so ``min_run_time``
    may hold fewer than :data:`MIN_RUNS` blocks. Then further, shorter blocks (about a tenth of
    ``min_run_time`` each, or one call) are timed with the same clock until there are that many,
    as long as the measured time stays within ``max_run_time`` seconds; a timing still short of
    blocks has an unknown spread (:attr:`Timing.spread` is infinite), which reads as noisy.
    Introduced in lesson 08.
    """
    count = threads if threads is not None else torch.get_num_threads()
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=count)
    m = timer.blocked_autorange(min_run_time=min_run_time)
    if len(m.times) >= MIN_RUNS:
        return Timing(median=m.median, iqr=m.iqr, runs=len(m.times))
    times = m.times + _more_blocks(fn, m.median, MIN_RUNS - len(m.times), min_run_time / (2 * MIN_RUNS),
                                   max_run_time - sum(m.raw_times), count)
    t = torch.tensor(sorted(times), dtype=torch.float64)  # as Timer's Measurement computes them
    return Timing(median=t.quantile(0.5).item(), iqr=(t.quantile(0.75) - t.quantile(0.25)).item(),
                  runs=len(times))


def _more_blocks(
    fn: Callable[[], object], per_call: float, wanted: int, block: float, budget: float, threads: int
) -> list[float]:
    """Up to ``wanted`` more blocks of about ``block`` seconds (at least one call each), timed with
    ``torch.utils.benchmark``'s clock (which synchronises an accelerator), while their total stays
    within ``budget`` seconds. Returns seconds per call, one value per block."""
    number = max(1, round(block / per_call)) if per_call > 0 else 1
    clock = timeit.Timer("fn()", timer=synchronised_clock, globals={"fn": fn})
    times: list[float] = []
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        while len(times) < wanted and (sum(times) * number + per_call * number) <= budget:
            times.append(clock.timeit(number) / number)
    finally:
        torch.set_num_threads(before)
    return times


@dataclass(frozen=True)
class Comparison:
    """Timings of several calls, interleaved round by round: ``timings[label][r]`` is round ``r``.

    ``retimed`` says that :func:`compare` found the first set of rounds noisy and timed them all
    once more, keeping the steadier set.
    """

    timings: dict[str, list[Timing]]
    retimed: bool = False

    def best(self, label: str) -> Timing:
        """The round with the lowest median: other programs can slow a timing down, not speed it up."""
        return min(self.timings[label], key=lambda t: t.median)

    def ratios(self, slow: str, fast: str) -> list[float]:
        """The ratio ``slow / fast`` of the medians in each round, sorted."""
        pairs = zip(self.timings[slow], self.timings[fast], strict=True)
        return sorted(s.median / f.median for s, f in pairs)

    def noisy(self, slow: str, fast: str) -> bool:
        """True when a round of either call is noisy (spread over :data:`NOISY`, or unknown), or
        when the ratio ``slow / fast`` varies more than twofold between rounds."""
        if any(t.spread > NOISY for label in (slow, fast) for t in self.timings[label]):
            return True
        r = self.ratios(slow, fast)
        return r[-1] > 2 * r[0]

    def ratio_text(self, slow: str, fast: str) -> str:
        """The median ratio with its range over the rounds, e.g. ``"3.1x (2.9x to 3.4x over 3 rounds)"``,
        ending in ``", noisy"`` inside the brackets when :meth:`noisy` says so."""
        r = self.ratios(slow, fast)
        middle = r[len(r) // 2] if len(r) % 2 else (r[len(r) // 2 - 1] + r[len(r) // 2]) / 2
        flag = ", noisy" if self.noisy(slow, fast) else ""
        return f"{middle:.1f}x ({r[0]:.1f}x to {r[-1]:.1f}x over {len(r)} rounds{flag})"

    def _unsteadiness(self) -> tuple[int, float]:
        """How noisy the whole comparison is: its noisy timings, then its widest range of ratios."""
        noisy = sum(t.spread > NOISY for ts in self.timings.values() for t in ts)
        widest = 1.0
        for slow in self.timings:
            for fast in self.timings:
                if slow != fast:
                    r = self.ratios(slow, fast)
                    widest = max(widest, r[-1] / r[0])
        return noisy, widest


def compare(
    calls: Mapping[str, Callable[[], object]],
    rounds: int = 3,
    min_run_time: float = 0.05,
    threads: Mapping[str, int] | None = None,
    retime_within: float = 0.75,
) -> Comparison:
    """Time each call ``rounds`` times, interleaved (A, B, A, B, ...), so that a change in the machine's
    load affects every call alike; each timing is a :func:`time_call`.

    ``threads`` maps a label to the thread count its call is timed with (default: the current
    setting). If a round is noisy or a ratio varies more than twofold between rounds, and the
    rounds took no more than ``retime_within`` seconds, they are all timed once more and the
    steadier set is kept (``Comparison.retimed``); a slower comparison is not repeated.
    :meth:`Comparison.ratio_text` says "noisy" if the set kept is. Introduced in lesson 08.
    """
    def measure() -> Comparison:
        timings: dict[str, list[Timing]] = {label: [] for label in calls}
        for _ in range(rounds):
            for label, fn in calls.items():
                timings[label].append(time_call(fn, min_run_time, threads=(threads or {}).get(label)))
        return Comparison(timings)

    start = time.perf_counter()
    first = measure()
    noisy, widest = first._unsteadiness()
    if (noisy == 0 and widest <= 2) or time.perf_counter() - start > retime_within:
        return first
    second = measure()
    best = min(first, second, key=lambda c: c._unsteadiness())
    return Comparison(best.timings, retimed=True)


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
    remeasured: bool = False

    @property
    def noisy(self) -> bool:
        """True when the timing kept is still wider than :data:`NOISY` (IQR over median), or its
        spread is unknown (fewer than :data:`MIN_RUNS` blocks)."""
        return self.timing.spread > NOISY

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
    min_run_time: float = 0.05,
    progress_after: float = 5.0,
    max_spread: float = NOISY,
    retime_within: float = 0.25,
) -> list[SweepPoint]:
    """Time ``make_call(size)()`` for each size; ``work(size)`` is the FLOPs or bytes of one call.

    A size whose timing has an interquartile range wider than ``max_spread`` times its median, or
    an unknown spread, is timed once more if its first timing took no more than ``retime_within``
    seconds, and the narrower of the two timings is kept (``SweepPoint.remeasured``); if the one
    kept is still wide, ``SweepPoint.noisy`` says so. A progress line appears only while the sweep
    runs, once it has run longer than ``progress_after`` seconds, and it is removed at the end, so
    the cell's saved output does not depend on the machine's speed. Introduced in lesson 08.
    """
    progress = _Progress(len(sizes), progress_after)
    points = []
    for i, size in enumerate(sizes):
        call = make_call(size)
        call()  # warm-up: the first call pays for allocation and kernel selection
        start = time.perf_counter()
        timing, again = time_call(call, min_run_time), False
        cheap = time.perf_counter() - start <= retime_within
        if timing.spread > max_spread and cheap:  # the machine was busy: once more, keep the steadier
            timing, again = min(timing, time_call(call, min_run_time), key=lambda t: t.spread), True
        points.append(SweepPoint(size, timing, work(size), remeasured=again))
        progress.update(i + 1, str(size))
    progress.close()
    return points


def sweep_table(points: Sequence[SweepPoint], unit: str, title: str = "") -> Table:
    """A sweep as a table: size, median time, spread, rate, and whether it was timed twice or is
    still noisy. Introduced in lesson 08."""
    def flag(p: SweepPoint) -> str:
        return ("noisy" if p.noisy else "") + (" (timed twice)" if p.remeasured else "")

    def spread(t: Timing) -> str:
        return "unknown" if math.isinf(t.spread) else f"{t.spread:.0%}"

    rows = [
        (p.size, f"{p.timing.median * 1e6:.1f}", spread(p.timing), f"{p.rate:.2f}", flag(p).strip())
        for p in points
    ]
    return Table(["size", "median (us)", "spread (IQR)", unit, "note"], rows, title=title)


def noise_summary(points: Sequence[SweepPoint]) -> str:
    """One line: how many sizes were timed twice, and how many are still noisy. Introduced in lesson 08."""
    again = sum(p.remeasured for p in points)
    noisy = [p.size for p in points if p.noisy]
    still = f"still noisy: {', '.join(map(str, noisy))}" if noisy else "none still noisy"
    return (f"{len(points)} sizes, {again} timed twice (IQR over {NOISY:.0%} of the median "
            f"or under {MIN_RUNS} blocks), {still}")


def load_note() -> str:
    """One line on how busy the machine is: its load average over the last minute (runnable
    threads, this process's included) against the cores this process may use. Above one thread a
    core, threads wait for cores that other programs hold, and multi-threaded timings are
    unreliable. Introduced in lesson 08.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if not hasattr(os, "getloadavg"):  # Windows
        return f"{cores} cores; the load average is not available on this system"
    load = os.getloadavg()[0]
    if load > cores:
        return (f"the machine is busy (load {load:.1f} on {cores} cores): multi-threaded timings are "
                "unreliable; rerun on a quiet machine or with one thread")
    return f"load {load:.1f} on {cores} cores (the last minute's average, this notebook included)"


def page_faults_per_call(fn: Callable[[], object], calls: int = 4) -> float:
    """Page faults of the kind that need no disk access (``ru_minflt``), per call of ``fn``.

    Reads ``resource.getrusage(RUSAGE_SELF).ru_minflt`` before and after ``calls`` calls; NaN where
    the ``resource`` module is missing (Windows). Introduced in lesson 08.
    """
    try:
        import resource  # Unix only
    except ImportError:
        return math.nan
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


class SlowDecode(Dataset):
    """32 items of shape (3, 32, 32), item i filled with i, each taking 5 ms to "decode" (a sleep that
    stands in for reading and decoding a file): lesson 08's DataLoader workers.

    It lives in a module, not in the notebook: where workers start by spawn (the default on macOS and
    Windows), each worker unpickles the dataset by importing its class, and a class defined in a
    notebook cannot be imported.
    """

    def __len__(self) -> int:
        return 32

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(0.005)
        return torch.full((3, 32, 32), float(i))

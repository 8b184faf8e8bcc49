"""Two pictures of lesson 04: atomic additions arriving in different orders, and which switch covers what.

:func:`draw_atomic_arrivals` draws threads adding into one slot, as arrivals on a time axis, in
two runs whose orders differ; the arrival times are a schematic, but the totals are computed in
float32 from the values in the order drawn (:func:`atomic_totals`). :func:`draw_switch_matrix`
draws :data:`SWITCH_MATRIX`, a table of documented claims (not a measurement): which of
PyTorch's switches covers which source of run-to-run variation. matplotlib is imported inside
each function so ``import helpers`` stays cheap; each returns ``(fig, ax)`` or ``(fig, axes)`` and
the notebook calls ``plt.show()``. Introduced in lesson 04.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "ARRIVAL_RUNS",
    "SWITCHES",
    "SWITCH_MATRIX",
    "THREAD_VALUES",
    "Coverage",
    "atomic_totals",
    "draw_atomic_arrivals",
    "draw_switch_matrix",
    "switch_matrix_notes",
]

# --- the arrival order of atomic additions ---------------------------------------------------------

#: The values three threads add into one slot, each thread in its own order. 2**24 = 16,777,216 is
#: where float32's spacing becomes 2, so adding 1 to it rounds (to even) and can be lost.
THREAD_VALUES: tuple[tuple[float, ...], ...] = ((16777216.0, 1.0), (1.0, -16777216.0), (1.0, 1.0))
#: Two runs: which thread's next value reaches the slot, one arrival after another.
ARRIVAL_RUNS: tuple[tuple[int, ...], ...] = ((0, 1, 2, 0, 2, 1), (1, 2, 0, 0, 2, 1))

_THREAD_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink")


def _arrivals(threads: Sequence[Sequence[float]], order: Sequence[int]) -> list[tuple[int, float]]:
    """``(thread, value)`` for each arrival of ``order``; each thread's values arrive in its own order."""
    if not isinstance(order, Sequence) or isinstance(order, str):
        raise ValueError(f"a run is a sequence of thread numbers, got {order!r}")
    taken = [0] * len(threads)
    out = []
    for t in order:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < len(threads):
            raise ValueError(f"a run names threads 0 to {len(threads) - 1}, got {t!r}")
        if taken[t] == len(threads[t]):
            raise ValueError(f"thread {t} has {len(threads[t])} values, but the run names it more often")
        out.append((t, float(threads[t][taken[t]])))
        taken[t] += 1
    if taken != [len(v) for v in threads]:
        raise ValueError("a run must name each thread once per value it adds")
    return out


def atomic_totals(
    threads: Sequence[Sequence[float]] = THREAD_VALUES, runs: Sequence[Sequence[int]] = ARRIVAL_RUNS
) -> list[list[float]]:
    """The slot's float32 value after each arrival, for each run: one rounded addition at a time.

    ``threads[t]`` holds the values thread ``t`` adds, in its order; ``runs[r]`` lists, arrival by
    arrival, which thread's next value reaches the slot. Every value is rounded to float32 and
    added to the slot in float32, as ``index_put_(accumulate=True)`` does on float32 tensors.
    Raises ``ValueError`` when a run is not an interleaving of the threads' values.
    """
    result = []
    for order in runs:
        slot = torch.zeros((), dtype=torch.float32)
        steps = []
        for _, value in _arrivals(threads, order):
            slot = slot + torch.tensor(value, dtype=torch.float32)
            steps.append(slot.item())
        result.append(steps)
    return result


def _number(value: float, sign: bool = False) -> str:
    if value.is_integer() and abs(value) < 1e15:
        return f"{value:+,.0f}" if sign else f"{value:,.0f}"
    return f"{value:+.7g}" if sign else f"{value:.7g}"


def draw_atomic_arrivals(
    threads: Sequence[Sequence[float]] = THREAD_VALUES, runs: Sequence[Sequence[int]] = ARRIVAL_RUNS
) -> tuple[Figure, Sequence[Axes]]:
    """Threads adding into one slot, drawn as arrivals on a time axis, one panel per run.

    Each dot is one atomic addition: a thread reads the slot, adds its value and writes the sum
    back (retrying if another thread wrote first), so additions never overlap, but their order is
    whatever order the threads arrive in. The arrival times are a schematic (only their order
    matters); the slot's value after each addition and the final totals are computed in float32
    by :func:`atomic_totals`, and the exact sum of the values is drawn next to them. Arguments as
    for :func:`atomic_totals`. Introduced in lesson 04.
    """
    totals = atomic_totals(threads, runs)
    exact = math.fsum(float(torch.tensor(float(v), dtype=torch.float32)) for vs in threads for v in vs)

    import matplotlib.pyplot as plt

    n_threads = len(threads)
    fig, axes = plt.subplots(len(runs), 1, figsize=(9.0, 1.0 + 1.55 * len(runs) * (n_threads + 1) / 4),
                             squeeze=False)
    axes = [row[0] for row in axes]
    for r, (ax, order) in enumerate(zip(axes, runs, strict=True)):
        for k, ((t, value), after) in enumerate(zip(_arrivals(threads, order), totals[r], strict=True)):
            colour = _THREAD_COLOURS[t % len(_THREAD_COLOURS)]
            ax.scatter([k + 1], [t], s=90, color=colour, zorder=3)
            ax.text(k + 1.1, t, _number(value, sign=True), ha="left", va="center", fontsize="x-small",
                    color=colour)
            ax.text(k + 1, -0.95, _number(after), ha="center", va="center", fontsize="x-small")
        ax.axhline(-0.6, color="grey", linewidth=0.6)
        lanes = ["slot after it", *(f"thread {t}" for t in range(n_threads))]
        ax.set_yticks([-0.95, *range(n_threads)], lanes)
        ax.set_xticks(range(1, len(order) + 1), [f"{k}." for k in range(1, len(order) + 1)])
        ax.set_xlim(0.4, len(order) + 1.1)
        ax.set_ylim(n_threads - 0.4, -1.35)
        end = totals[r][-1] if totals[r] else 0.0
        ax.set_title(f"run {r + 1}: the slot ends at {_number(end)} (float32); exact sum {_number(exact)}",
                     fontsize="medium", loc="left")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xlabel("arrivals in time order (a schematic: only the order is real)")
    fig.suptitle("The same additions into one slot, in two arrival orders (totals computed in float32)",
                 fontsize="medium")
    fig.tight_layout()
    return fig, axes


# --- which switch covers which source ------------------------------------------------------------------

#: The columns of the matrix: PyTorch's switches, each as a learner would set it.
SWITCHES: tuple[str, ...] = (
    "torch.use_deterministic_algorithms(True)",
    "torch.backends.cudnn.deterministic = True",
    "torch.backends.cudnn.benchmark = False",
    "CUBLAS_WORKSPACE_CONFIG, set before Python starts",
    "the same torch.set_num_threads(n) in every run",
    "seeding (torch.manual_seed, generators)",
    "torch.utils.deterministic.fill_uninitialized_memory",
)
#: The column headings the figure draws, in the same order.
_HEADINGS = (
    "use_deterministic_\nalgorithms(True)", "cudnn.\ndeterministic\n= True", "cudnn.\nbenchmark\n= False",
    "CUBLAS_\nWORKSPACE_\nCONFIG", "a fixed\nset_num_\nthreads(n)", "seeding",
    "fill_un-\ninitialized_\nmemory",
)
_SHORT = ("deterministic mode", "cudnn.deterministic", "cudnn.benchmark=False", "CUBLAS_WORKSPACE_CONFIG",
          "set_num_threads", "seeding", "fill_uninitialized_memory")


@dataclass(frozen=True)
class Coverage:
    """One row of :data:`SWITCH_MATRIX`: a source of run-to-run variation and what covers it.

    ``verdicts`` holds one of ``"yes"`` (the switch removes this source), ``"part"`` (it does so only
    in part, or it is uncertain; ``notes`` says why) or ``"no"``, per switch of :data:`SWITCHES`, in
    that order. ``notes`` maps a column index to its note; ``basis`` says where the row's claims come
    from.
    """

    source: str
    verdicts: tuple[str, ...]
    basis: str
    notes: tuple[tuple[int, str], ...] = ()


_Y, _P, _N = "yes", "part", "no"

#: Which switch covers which source. Every cell is a claim, and ``basis`` names its source: "the notes"
#: are PyTorch's reproducibility notes (https://docs.pytorch.org/docs/stable/notes/randomness.html), "the
#: docstring" is that of torch.use_deterministic_algorithms in torch 2.13 (torch/__init__.py).
#: Verdict columns: deterministic mode, cudnn.deterministic, cudnn.benchmark=False, CUBLAS_WORKSPACE_CONFIG,
#: a fixed thread count, seeding, fill_uninitialized_memory (the order of SWITCHES).
SWITCH_MATRIX: tuple[Coverage, ...] = (
    Coverage(
        "GPU: atomic additions in PyTorch's CUDA kernels",
        (_Y, _N, _N, _N, _N, _N, _N),
        "the docstring: each CUDA operation it lists gets a deterministic kernel, or raises if it has none",
    ),
    Coverage(
        "GPU: a cuDNN algorithm that adds atomically",
        (_Y, _Y, _N, _N, _N, _N, _N),
        "the notes, 'CUDA convolution determinism': with benchmark off the choice repeats, but the chosen "
        "algorithm may be nondeterministic unless either of the first two switches is set",
    ),
    Coverage(
        "GPU: cudnn.benchmark timing the candidate algorithms",
        (_P, _P, _Y, _N, _N, _N, _N),
        "the notes, 'CUDA convolution benchmarking': benchmark=False makes cuDNN select deterministically",
        (
            (0, "with benchmark still on, PyTorch times the deterministic candidates and keeps the "
                "fastest: each repeats itself, but two processes can pick different ones "
                "(AlgoIterator::try_all in aten/src/ATen/native/cudnn/Conv_v7.cpp; the v8 API path "
                "not checked)"),
            (1, "as for deterministic mode: the fastest deterministic algorithm still wins the timing, "
                "which can differ between processes (same source)"),
        ),
    ),
    Coverage(
        "GPU: fused attention backward (flash, memory-efficient)",
        (_Y, _N, _N, _N, _N, _N, _N),
        "the notes, 'CUDA Scaled Dot Product Attention' (with warn_only=False); _flash_attention_backward "
        "and _efficient_attention_backward in aten/src/ATen/native/transformers/cuda/attention_backward.cu",
    ),
    Coverage(
        "GPU: concurrent streams sharing one cuBLAS workspace",
        (_N, _N, _N, _Y, _N, _N, _N),
        "cuBLAS documentation, 'Results reproducibility'; PyTorch already gives each handle and stream its "
        "own workspace (aten/src/ATen/cuda/CublasHandlePool.cpp), the first remedy listed there",
    ),
    Coverage(
        "GPU: cuDNN's RNN functions (RNN, LSTM, GRU layers)",
        (_P, _P, _N, _Y, _N, _N, _N),
        "the documentation of nn.RNN and nn.LSTM (docs/source/cudnn_rnn_determinism.md): "
        "CUBLAS_WORKSPACE_CONFIG=:16:8 or :4096:2",
        (
            (0, "uncertain: that documentation names only the variable as the remedy, and the docstring "
                "does not list RNNs"),
            (1, "uncertain, for the same reason"),
        ),
    ),
    Coverage(
        "CPU: index_put_(accumulate=True) adding atomically",
        (_Y, _N, _N, _N, _P, _N, _N),
        "the docstring, and section 4.1 of lesson 04 (measured here)",
        (
            (4, "only set_num_threads(1): on one thread the kernel takes its serial loop (section 4.1); "
                "a fixed count of 2 or more still adds atomically"),
        ),
    ),
    Coverage(
        "CPU: a sum split between threads",
        (_N, _N, _N, _N, _Y, _N, _N),
        "lessons 02 and 04 (section 4.6, measured here): the same count on the same machine and build gives "
        "the same split",
    ),
    Coverage(
        "random numbers (initialisation, dropout, shuffling)",
        (_N, _N, _N, _N, _N, _Y, _N),
        "the notes, 'Controlling sources of randomness'; lesson 05",
    ),
    Coverage(
        "reading uninitialised memory (torch.empty by mistake)",
        (_Y, _N, _N, _N, _N, _N, _P),
        "the notes, 'Filling uninitialized memory': with fill_uninitialized_memory at its default (True), "
        "deterministic mode fills such memory",
        ((6, "only while deterministic mode is on (documentation of torch.utils.deterministic)"),),
    ),
    Coverage(
        "torch.compile (Inductor): autotuning, atomic scatters",
        (_P, _N, _N, _N, _N, _N, _N),
        "the docstring (Inductor's deterministic mode); torch/_inductor/lowering.py",
        (
            (0, "it skips the benchmarking that affects numerics and sends accumulating scatters to "
                "ATen's kernels; the docstring lists what it skips, not a guarantee for every kernel"),
        ),
    ),
    Coverage(
        "another batch size or shape (batch invariance)",
        (_N, _N, _N, _N, _N, _N, _N),
        "cuBLAS promises the same bits per shape; section 4.2 (Thinking Machines, 'Defeating "
        "Nondeterminism in LLM Inference')",
    ),
    Coverage(
        "several GPUs: the order of NCCL's all-reduce",
        (_N, _N, _N, _N, _N, _N, _N),
        "the docstring names no collective; NCCL issues #754 and #1055 (section 4.6)",
    ),
    Coverage(
        "another device, GPU model, driver or library version",
        (_N, _N, _N, _N, _N, _N, _N),
        "the notes' first paragraph: not guaranteed across releases, platforms, or CPU and GPU",
    ),
)

_COLOURS = {_Y: "#a8d8b9", _P: "#ffe08a", _N: "#f2f2f2"}


def switch_matrix_notes(matrix: Sequence[Coverage] = SWITCH_MATRIX) -> list[tuple[int, str, str, str]]:
    """The numbered notes of the "part" cells: ``(number, source, switch, why)``, row by row."""
    rows = []
    for row in matrix:
        for column, note in row.notes:
            rows.append((len(rows) + 1, row.source, _SHORT[column], note))
    return rows


def _check_matrix(matrix: Sequence[Coverage]) -> None:
    for row in matrix:
        if len(row.verdicts) != len(SWITCHES) or not set(row.verdicts) <= set(_COLOURS):
            raise ValueError(f"row {row.source!r} needs one of yes/part/no per switch, got {row.verdicts}")
        noted = sorted(c for c, _ in row.notes)
        if noted != [c for c, v in enumerate(row.verdicts) if v == _P]:
            raise ValueError(f"row {row.source!r}: every 'part' cell needs a note, and only those")


def draw_switch_matrix(matrix: Sequence[Coverage] = SWITCH_MATRIX) -> tuple[Figure, Axes]:
    """Which switch covers which source of run-to-run variation: one row per source, one column per switch.

    A green cell says the switch removes that source, an amber one "partly" with the number of its
    note in :func:`switch_matrix_notes`, a grey one that it does nothing for it. The cells are claims
    from the documentation and source named in each row's ``basis`` (:data:`SWITCH_MATRIX`), not a
    measurement. Introduced in lesson 04.
    """
    _check_matrix(matrix)

    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    n_rows, n_cols = len(matrix), len(SWITCHES)
    fig, ax = plt.subplots(figsize=(11.0, 2.2 + 0.4 * n_rows))
    note = 0
    for i, row in enumerate(matrix):
        for j, verdict in enumerate(row.verdicts):
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=_COLOURS[verdict], edgecolor="white", linewidth=2))
            if verdict == _P:
                note += 1
                label = f"partly ({note})"
            else:
                label = verdict if verdict == _Y else "–"
            ax.text(j + 0.5, i + 0.5, label, ha="center", va="center", fontsize="small")
    ax.set_xlim(0, n_cols)
    ax.set_ylim(n_rows, 0)
    ax.set_yticks([i + 0.5 for i in range(n_rows)], [row.source for row in matrix], fontsize="small")
    ax.set_xticks([j + 0.5 for j in range(n_cols)], list(_HEADINGS), fontsize="small")
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title("Which switch covers which source of run-to-run variation\n"
                 "(claims from PyTorch's, cuDNN's and cuBLAS's documentation, not a measurement)",
                 fontsize="medium", pad=12)
    fig.tight_layout()
    return fig, ax

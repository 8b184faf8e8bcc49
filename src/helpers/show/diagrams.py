"""Diagrams of mechanisms: a reduction tree, a ring all-reduce, a device move, a CUDA launch timeline.

They draw what the lessons explain, not measurements: each says so where a reader might take it
for data. matplotlib is imported inside each function so ``import helpers`` stays cheap; each
returns ``(fig, ax)`` and the notebook calls ``plt.show()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matplotlib is imported lazily
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "draw_checkpoint_flow",
    "draw_device_move",
    "draw_launch_timeline",
    "draw_reduction_orders",
    "draw_ring_allreduce",
    "draw_worker_seeding",
]


def _box(ax, x: float, y: float, text: str, color: str = "white", width: float = 0.8,
         height: float = 0.5) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.02",
            facecolor=color, edgecolor="black", linewidth=1,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize="small")


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], color: str = "black",
           style: str = "-|>") -> None:
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle=style, color=color, linewidth=1))


def _blank(ax) -> None:
    ax.set_aspect("equal")
    ax.axis("off")


def draw_reduction_orders(n: int = 8) -> tuple[Figure, Axes]:
    """The two orders of adding ``n`` numbers: a loop (a chain of n - 1 additions, one after
    another) and a tree (pairs, then pairs of pairs: log2(n) levels). Each + is one rounding;
    the two orders round different partial sums, so their results can differ in the last bits.
    ``n`` is a power of two from 4 to 16. Introduced in lesson 02.
    """
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax in (left, right):
        for i in range(n):
            _box(ax, i, 0, f"x{i}", "#dbe9f6", 0.7, 0.45)
        _blank(ax)
    # the loop: ((x0 + x1) + x2) + ...
    for step in range(1, n):
        y = step * 0.55
        _box(left, step - 0.5, y, "+", "#fde2c8", 0.45, 0.4)
        _arrow(left, (step, 0.25), (step - 0.3, y - 0.2))
        _arrow(left, (0, 0.25) if step == 1 else (step - 1.5, y - 0.55 + 0.2), (step - 0.7, y - 0.2))
    left.set_title(f"a loop: {n - 1} additions in a chain, each waiting for the last", fontsize="medium")
    left.set_xlim(-0.6, n - 0.4)
    left.set_ylim(-0.4, n * 0.55 + 0.2)
    # the tree: neighbours in pairs, level by level
    positions, level = [float(i) for i in range(n)], 0
    while len(positions) > 1:
        level += 1
        y = level * 1.0
        merged = []
        for a, b in zip(positions[::2], positions[1::2], strict=True):
            x = (a + b) / 2
            _box(right, x, y, "+", "#fde2c8", 0.45, 0.4)
            _arrow(right, (a, y - 1.0 + 0.22), (x - 0.15, y - 0.2))
            _arrow(right, (b, y - 1.0 + 0.22), (x + 0.15, y - 0.2))
            merged.append(x)
        positions = merged
    right.set_title(f"a tree: {level} levels; additions on one level can run at once", fontsize="medium")
    right.set_xlim(-0.6, n - 0.4)
    right.set_ylim(-0.4, level + 0.5)
    fig.suptitle("Each + rounds its result: the two orders round different partial sums", fontsize="medium")
    fig.tight_layout()
    return fig, (left, right)


def draw_ring_allreduce(ranks: int = 3) -> tuple[Figure, Axes]:
    """A ring all-reduce as gloo runs it: each rank sends to its neighbour, in 2 (ranks - 1) steps.

    Each rank's gradient is cut into ``ranks`` chunks. In the first ranks - 1 steps (reduce-
    scatter) each chunk travels round the ring and is added to at each rank, so every chunk ends
    fully summed on one rank; the next ranks - 1 steps (all-gather) copy the sums to every rank.
    In gloo's ring (``helpers.lessons.distributed.ring_allreduce``) the partial sum of chunk ``c`` starts
    at rank ``c - 1`` and travels down the ring to rank ``c``, so each chunk's terms are added in
    an order that starts at another rank. ``ranks`` is an int from 2 to 8. Introduced in lesson 11.
    """
    import math

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    radius = 1.6
    centres = [
        (radius * math.cos(angle), radius * math.sin(angle))
        for angle in (math.pi / 2 - 2 * math.pi * r / ranks for r in range(ranks))
    ]
    for r, (x, y) in enumerate(centres):
        _box(ax, x, y, f"rank {r}\n" + " ".join(f"g{r}[{c}]" for c in range(ranks)), "#dbe9f6", 1.3, 0.6)
    for r in range(ranks):  # rank r sends to rank r - 1, as in gloo's ring
        (x0, y0), (x1, y1) = centres[r], centres[(r - 1) % ranks]
        shrink = 0.28
        _arrow(ax, (x0 + (x1 - x0) * shrink, y0 + (y1 - y0) * shrink),
               (x1 - (x1 - x0) * shrink, y1 - (y1 - y0) * shrink), "tab:red")
    order = f"g{(0 - 1) % ranks}[0]"
    for k in range(2, ranks + 1):
        order = f"({order} + g{(0 - k) % ranks}[0])" if k < ranks else f"{order} + g{(0 - k) % ranks}[0]"
    ax.text(0, 0, f"{2 * (ranks - 1)} steps, each rank\nsending one chunk\nto its neighbour.\n"
            f"Chunk 0 is summed\nas {order}", ha="center", va="center", fontsize="small")
    ax.set_title("Ring all-reduce: reduce-scatter, then all-gather (a diagram)", fontsize="medium")
    ax.set_xlim(-2.6, 2.6)
    ax.set_ylim(-2.3, 2.3)
    _blank(ax)
    fig.tight_layout()
    return fig, ax


def draw_device_move() -> tuple[Figure, Axes]:
    """What ``model.to(device)`` moves, and what it leaves behind.

    It moves every parameter and every registered buffer (persistent or not), in place, so the
    module object stays the same; it leaves behind plain tensor attributes, tensors kept in
    Python lists or dicts, tensors a forward creates without ``device=``, and the optimizer's
    state, which belongs to the optimizer. Mixing one of these with a moved tensor fails, except
    for a 0-dim CPU tensor, which PyTorch lets into an operation on another device as it would a
    Python number. Introduced in lesson 06.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 3.8))
    moved = ["parameters (nn.Parameter)", "buffers (register_buffer)", "non-persistent buffers"]
    stays = ["plain tensor attributes (self.t = ...)", "tensors in lists or dicts",
             "torch.zeros(n) inside forward", "the optimizer's state"]
    ax.text(0.0, 3.3, "CPU", ha="center", fontsize="medium", weight="bold")
    ax.text(6.0, 3.3, "GPU (model.to('cuda'))", ha="center", fontsize="medium", weight="bold")
    for i, name in enumerate(moved):
        _box(ax, 0.0, 2.5 - i * 0.8, name, "#eeeeee", 3.4, 0.55)
        _box(ax, 6.0, 2.5 - i * 0.8, name, "#d5ecd4", 3.4, 0.55)
        _arrow(ax, (1.75, 2.5 - i * 0.8), (4.25, 2.5 - i * 0.8), "tab:green")
    for i, name in enumerate(stays):
        _box(ax, 0.0, -0.2 - i * 0.65, name, "#f8d7d5", 3.9, 0.5)
    ax.text(3.0, 2.9, "moved by .to()", ha="center", fontsize="small", color="tab:green")
    ax.text(6.0, -0.9, "left behind on the CPU:\nthe next operation that mixes\n"
            "them with moved tensors fails\n(a 0-dim tensor is let through)", ha="center", va="center",
            fontsize="small", color="tab:red")
    ax.set_xlim(-2.0, 8.0)
    ax.set_ylim(-2.6, 3.6)
    _blank(ax)
    ax.set_title("What a device move moves (a diagram)", fontsize="medium")
    fig.tight_layout()
    return fig, ax


def draw_launch_timeline(kernels: int = 4) -> tuple[Figure, Axes]:
    """An illustration of asynchronous CUDA work: the CPU queues ``kernels`` kernels quickly and
    runs ahead; the GPU runs them one after another; the CPU waits where it needs a result, at a
    synchronisation (``.item()``, ``.cpu()``, ``torch.cuda.synchronize()``). The durations are made up to show
    the shape, not measured; a stopwatch that stops before the sync measures the queueing only.
    ``kernels`` is an int from 2 to 8. Introduced in lesson 08.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 2.8))
    launch, run = 0.4, 2.0
    gpu_start = launch
    for k in range(kernels):
        ax.broken_barh([(k * launch, launch * 0.9)], (1.6, 0.6), facecolors="tab:blue")
        start = max(gpu_start, (k + 1) * launch)
        ax.broken_barh([(start, run * 0.95)], (0.4, 0.6), facecolors="tab:orange")
        ax.text(start + run / 2, 0.7, f"kernel {k + 1}", ha="center", va="center", fontsize="x-small",
                color="white")
        gpu_start = start + run
    queued = kernels * launch
    ax.broken_barh([(queued, gpu_start - queued)], (1.6, 0.6), facecolors="#dddddd", hatch="//")
    ax.text((queued + gpu_start) / 2, 1.9, "CPU waits at the sync (.item())", ha="center", va="center",
            fontsize="small", bbox=dict(facecolor="white", edgecolor="none", pad=1))
    ax.axvline(queued, color="tab:red", linestyle="--", linewidth=1)
    ax.text(queued + 0.05, 2.4, "a stopwatch stopped here\nmisses the GPU's work", ha="left",
            fontsize="x-small", color="tab:red")
    ax.axvline(gpu_start, color="tab:green", linestyle="--", linewidth=1)
    ax.text(gpu_start - 0.05, 2.4, "synchronised:\nthe real end", ha="right", fontsize="x-small",
            color="tab:green")
    ax.set_yticks([0.7, 1.9], ["GPU", "CPU (launches)"])
    ax.set_xticks([])
    ax.set_xlabel("time (an illustration: the durations are not measured)")
    ax.set_ylim(0, 3.2)
    ax.set_xlim(0, gpu_start + 0.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig, ax


def draw_worker_seeding(workers: int = 2) -> tuple[Figure, Axes]:
    """How a DataLoader seeds its worker processes, as ``torch/utils/data`` does it.

    Each time an iterator is made (each epoch; only once with ``persistent_workers=True``, whose
    workers and iterator are kept), one int64 ``base_seed`` is drawn from the loader's
    ``generator``, or from torch's global generator when it has none. Worker ``k`` then seeds
    Python's ``random`` and torch with ``base_seed + k`` and NumPy's global generator with a hash
    of both, before ``worker_init_fn(k)`` runs; anything else the dataset holds (its own NumPy
    ``Generator``, say) arrives as a copy, in the same state in every worker. ``workers`` is an int
    from 1 to 4. Introduced in lesson 05.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.4, 1.6 + 1.3 * workers))
    top = 1.3 * workers
    _box(ax, 0.0, top, "DataLoader(generator=g)\nor, with none,\ntorch's global generator", "#dbe9f6", 3.0,
         1.0)
    _box(ax, 0.0, top - 1.6, "each new iterator (each epoch, unless\npersistent_workers=True):\n"
         "base_seed = one int64 drawn", "#fde2c8", 3.0, 0.95)
    _arrow(ax, (0.0, top - 0.5), (0.0, top - 1.12))
    for k in range(workers):
        y = top - 0.2 - 1.3 * k
        _box(ax, 5.4, y, f"worker {k}: random.seed(base_seed + {k})\ntorch.manual_seed(base_seed + {k})\n"
             f"np.random.seed(hash(base_seed, {k}))\nthen worker_init_fn({k})", "#d5ecd4", 4.2, 1.1)
        _arrow(ax, (1.5, top - 1.6), (3.3, y))
    _box(ax, 0.0, top - 3.0, "dataset object: copied into each\nworker, its own generators\n"
         "in the same state", "#f8d7d5", 3.0, 1.0)
    ax.set_xlim(-1.8, 7.8)
    ax.set_ylim(top - 3.8 if workers < 3 else -0.9, top + 0.7)
    _blank(ax)
    ax.set_title("How DataLoader workers are seeded (torch/utils/data, a diagram)", fontsize="medium")
    fig.tight_layout()
    return fig, ax


def draw_checkpoint_flow() -> tuple[Figure, Axes]:
    """What a training checkpoint holds and how it comes back, on whatever device is there.

    ``torch.save`` writes each tensor with the device it was on. ``torch.load(path,
    map_location="cpu", weights_only=True)`` reads them onto the CPU, unpickling only tensors,
    primitive types, plain containers and a short allow-list of torch types (dtypes, sizes...).
    ``model.load_state_dict`` copies each tensor into the parameter that is already there, on that
    parameter's device, and ``optimizer.load_state_dict`` moves the state to its parameters'
    devices (all but the ``step`` counts, which stay on the CPU unless the optimizer is fused or
    capturable: ``Optimizer._process_value_according_to_param_policy``). An exact resume needs
    more than the weights: the optimizer, the scaler and scheduler, the step, the random
    generators' states and the position in the data (lessons 05 and 07). Introduced in lesson 07.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.0, 3.6))
    parts = ["model.state_dict()", "optimizer.state_dict()", "scaler, scheduler", "epoch, step", "RNG states",
             "position in the data"]
    for i, name in enumerate(parts):
        _box(ax, 0.0, 2.5 - i * 0.55, name, "#dbe9f6", 2.6, 0.42)
    _box(ax, 3.9, 1.2, "checkpoint.pt\n(a dict; each tensor\nkeeps its device tag)", "#eeeeee", 2.4, 1.2)
    _arrow(ax, (1.35, 1.2), (2.65, 1.2))
    ax.text(2.0, 1.35, "torch.save", ha="center", fontsize="x-small")
    _box(ax, 7.6, 2.0, "torch.load(path,\nmap_location='cpu',\nweights_only=True)", "#fde2c8", 2.8, 1.0)
    _box(ax, 7.6, 0.3, "model.load_state_dict(...):\ncopies into the parameters\non their own device",
         "#d5ecd4", 2.8, 1.0)
    _arrow(ax, (5.15, 1.4), (6.15, 2.0))
    _arrow(ax, (7.6, 1.5), (7.6, 0.85))
    ax.set_xlim(-1.5, 9.2)
    ax.set_ylim(-0.6, 2.9)
    _blank(ax)
    ax.set_title("A checkpoint's round trip (a diagram)", fontsize="medium")
    fig.tight_layout()
    return fig, ax

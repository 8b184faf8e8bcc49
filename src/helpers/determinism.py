"""Seeding, deterministic mode and random-number-generator state, made explicit.

Nothing here runs on import: a lesson calls :func:`seed_everything` where it matters, and
:func:`deterministic_mode` restores every flag and variable it touched. Introduced in lessons
``04_deterministic_algorithms`` and ``05_seeds_and_generators``.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "CUBLAS_WORKSPACE",
    "NoisyDataset",
    "RngSnapshot",
    "deterministic_flags",
    "deterministic_mode",
    "philox_randn",
    "restore_rng",
    "resume_epoch",
    "seed_everything",
    "seed_worker",
    "snapshot_rng",
]

CUBLAS_WORKSPACE = ":4096:8"  # the first value named by the error of PyTorch releases that checked it


def seed_everything(seed: int) -> dict[str, object]:
    """Seed Python's ``random``, NumPy's global generator and torch (the CPU and every CUDA device).

    Returns what it seeded, so a notebook can show it. It cannot seed what a process fixes at
    start-up (``PYTHONHASHSEED``) nor generators that other code created earlier, such as a
    ``numpy.random.Generator`` stored in a dataset. Introduced in lesson 05.

    Raises ``TypeError`` unless ``seed`` is an ``int`` (a bool, a float or a NumPy integer is
    refused), and ``ValueError`` unless ``0 <= seed < 2**32``: the range that all three accept
    (NumPy's is the narrowest; ``random`` takes any int, torch ``[-2**63, 2**64)``).
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32) so that NumPy accepts it, got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device (lazily, if CUDA is not initialised yet)
    return {"random": seed, "numpy.random (global)": seed, "torch (CPU and every CUDA device)": seed}


def _inductor_deterministic() -> bool:
    """Inductor's ``config.deterministic``, without importing Inductor (slow) if nothing has yet.

    Until ``torch._inductor.config`` is imported, the value it will start from: in torch 2.13,
    ``os.getenv("TORCHINDUCTOR_DETERMINISTIC") == "1"`` (``torch/_inductor/config.py``).
    """
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        return bool(config.deterministic)
    return os.environ.get("TORCHINDUCTOR_DETERMINISTIC") == "1"


def deterministic_flags() -> dict[str, object]:
    """The current value of every setting that :func:`deterministic_mode` changes.

    ``inductor.deterministic`` is ``torch._inductor.config.deterministic``, which
    ``torch.use_deterministic_algorithms`` also sets (``torch/__init__.py``). Introduced in lesson 04.
    """
    return {
        "use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "fill_uninitialized_memory": torch.utils.deterministic.fill_uninitialized_memory,
        "inductor.deterministic": _inductor_deterministic(),
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }


_CUBLAS_CONFIG = re.compile(r"(?::[0-9]+:[0-9]+)+")  # ":SIZE:COUNT", one or more (cuBLAS docs)


def deterministic_mode(
    warn_only: bool = False, cublas_workspace_config: str | None = None
) -> contextlib.AbstractContextManager[dict[str, object]]:
    """Turn on PyTorch's deterministic settings inside a ``with`` block, and restore them after.

    Sets ``torch.use_deterministic_algorithms(True, warn_only=warn_only)``,
    ``cudnn.deterministic = True``, ``cudnn.benchmark = False`` and
    ``torch.utils.deterministic.fill_uninitialized_memory = True``; ``use_deterministic_algorithms``
    also sets ``torch._inductor.config.deterministic`` (``torch.compile``'s deterministic mode). On
    exit, normal or by an exception, every setting is put back, Inductor's included. Yields the
    settings in force.

    ``CUBLAS_WORKSPACE_CONFIG`` is never set here, because a ``with`` block cannot set it in time.
    PyTorch reads it once per process, at the first cuBLAS call, and keeps what it read in a
    ``static`` variable: the cuBLAS workspace size (``getChosenWorkspaceSize`` in ATen's
    ``cuda/CublasHandlePool.cpp``) and, in older releases, whether deterministic mode may use
    cuBLAS at all (``alertCuBLASConfigNotDeterministic`` in ``Context.cpp``, which raised unless the
    value was ``:4096:8`` or ``:16:8``; pull request #161749 removed that check, and the builds of
    2.11 and 2.13 contain no trace of it). Changing the variable later, in a cell or a ``with``
    block, changes nothing for the rest of the process: set it in the environment before Python
    starts (``CUBLAS_WORKSPACE_CONFIG=:4096:8 jupyter lab``). ``cublas_workspace_config``, if
    given, is the value the block needs: a ``RuntimeError`` saying so is raised before anything
    changes if the environment holds another. Introduced in lesson 04.

    The arguments are checked when it is called, before the ``with`` block starts: ``TypeError``
    unless ``warn_only`` is a bool, ``ValueError`` unless ``cublas_workspace_config`` is None or a
    str of cuBLAS's form ``:SIZE:COUNT`` (one or more pairs, e.g. ``:4096:8``).
    """
    if not isinstance(warn_only, bool):
        raise TypeError(f"warn_only must be True or False, got {warn_only!r}")
    config = cublas_workspace_config
    if config is not None and not (isinstance(config, str) and _CUBLAS_CONFIG.fullmatch(config)):
        raise ValueError(
            "cublas_workspace_config must have cuBLAS's form ':SIZE:COUNT' such as ':4096:8' "
            f"(or several pairs, ':4096:2:16:8'), got {config!r}"
        )
    return deterministic_block(warn_only, cublas_workspace_config)


@contextlib.contextmanager
def deterministic_block(warn_only: bool, cublas_workspace_config: str | None) -> Iterator[dict[str, object]]:
    """The ``with`` block :func:`deterministic_mode` returns once it has checked its arguments."""
    before = deterministic_flags()
    if cublas_workspace_config is not None and before["CUBLAS_WORKSPACE_CONFIG"] != cublas_workspace_config:
        raise RuntimeError(
            f"CUBLAS_WORKSPACE_CONFIG is {before['CUBLAS_WORKSPACE_CONFIG']!r}, not "
            f"{cublas_workspace_config!r}. PyTorch reads it once, at the first cuBLAS call of the "
            "process, so setting it now would change nothing: restart Python with it in the "
            f"environment, e.g. CUBLAS_WORKSPACE_CONFIG={cublas_workspace_config} jupyter lab"
        )
    try:
        torch.use_deterministic_algorithms(True, warn_only=warn_only)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.utils.deterministic.fill_uninitialized_memory = True
        yield deterministic_flags()
    finally:
        torch.use_deterministic_algorithms(
            bool(before["use_deterministic_algorithms"]), warn_only=bool(before["warn_only"])
        )
        inductor_config = sys.modules.get("torch._inductor.config")  # imported by the call above
        if inductor_config is not None:  # that call set it to the mode; put back what it was
            inductor_config.deterministic = bool(before["inductor.deterministic"])
        torch.backends.cudnn.deterministic = bool(before["cudnn.deterministic"])
        torch.backends.cudnn.benchmark = bool(before["cudnn.benchmark"])
        torch.utils.deterministic.fill_uninitialized_memory = bool(before["fill_uninitialized_memory"])


def seed_worker(worker_id: int) -> None:
    """A DataLoader ``worker_init_fn``: the recipe of PyTorch's reproducibility notes, plus one step.

    Seeds Python's ``random`` and NumPy's global generator from the worker's torch seed (which the
    DataLoader derives from its ``generator``), and reseeds a ``numpy.random.Generator`` that the
    dataset keeps in an attribute ``rng``, which every worker would otherwise inherit in the same
    state. The seed comes from ``torch.initial_seed()``, which the DataLoader has already made
    distinct per worker (``worker_id`` is not needed). Introduced in lesson 05.
    """
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)
    info = torch.utils.data.get_worker_info()
    if info is not None and isinstance(getattr(info.dataset, "rng", None), np.random.Generator):
        info.dataset.rng = np.random.default_rng(worker_seed)


class NoisyDataset(torch.utils.data.Dataset):
    """Items that draw from every random source a data pipeline may use, to see which are seeded.

    Item ``i`` is ``[i, torch.rand(), numpy.random.rand(), random.random(), self.rng.random()]``,
    where ``self.rng`` is a ``numpy.random.Generator`` created (seeded) when the dataset is built.
    It lives in the package so that DataLoader workers can import it on every platform. An index
    outside ``0..length-1`` raises ``IndexError``, as for a list. Introduced in lesson 05.
    """

    def __init__(self, length: int = 8, seed: int = 0) -> None:
        self.length = length
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> torch.Tensor:
        if not 0 <= i < self.length:
            raise IndexError(f"i (the index) {i} is out of range for a NoisyDataset of length {self.length}")
        values = [float(i), torch.rand(()).item(), np.random.rand(), random.random(), self.rng.random()]
        return torch.tensor(values, dtype=torch.float64)


@dataclass(frozen=True)
class RngSnapshot:
    """The state of every generator a training run draws from, as :func:`snapshot_rng` records it.

    Introduced in lesson 05.
    """

    python: tuple
    numpy: tuple
    torch_cpu: torch.Tensor
    torch_cuda: tuple[torch.Tensor, ...]

    def state_dict(self) -> dict[str, object]:
        """The snapshot as tensors, ints and tuples only, so ``torch.load(weights_only=True)`` reads it."""
        name, keys, pos, has_gauss, cached = self.numpy
        return {
            "python": self.python,
            "numpy": {
                "name": name,
                "keys": torch.from_numpy(keys.astype(np.int64)),
                "pos": int(pos),
                "has_gauss": int(has_gauss),
                "cached_gaussian": float(cached),
            },
            "torch_cpu": self.torch_cpu,
            "torch_cuda": list(self.torch_cuda),
        }

    @staticmethod
    def from_state_dict(state: Mapping[str, object]) -> RngSnapshot:
        """The inverse of :meth:`state_dict`."""
        version, words, gauss_next = state["python"]
        numpy = state["numpy"]
        return RngSnapshot(
            (version, tuple(words), gauss_next),  # random.setstate takes tuples only
            ("MT19937", numpy["keys"].numpy().astype(np.uint32), numpy["pos"], numpy["has_gauss"],
             numpy["cached_gaussian"]),
            state["torch_cpu"],
            tuple(state["torch_cuda"]),
        )


def snapshot_rng() -> RngSnapshot:
    """Copy the state of Python's ``random``, NumPy's global generator, torch's CPU generator and
    every CUDA device's generator.

    Only the global generators: a private one (a DataLoader's ``generator``, a generator stored in
    a dataset) is not included; for a DataLoader, see :func:`resume_epoch`. Introduced in lesson 05.
    """
    cuda = tuple(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else ()
    return RngSnapshot(
        python=random.getstate(),
        numpy=np.random.get_state(),
        torch_cpu=torch.get_rng_state(),
        torch_cuda=cuda,
    )


def _set_rng(snapshot: RngSnapshot) -> None:
    random.setstate(snapshot.python)
    np.random.set_state(snapshot.numpy)
    torch.set_rng_state(snapshot.torch_cpu)
    if snapshot.torch_cuda:
        torch.cuda.set_rng_state_all(list(snapshot.torch_cuda))


def restore_rng(snapshot: RngSnapshot) -> None:
    """Put every generator back in the state :func:`snapshot_rng` recorded.

    Raises ``ValueError``, before any generator changes, if the snapshot holds a different number
    of CUDA generator states than this process sees CUDA devices (a checkpoint from a GPU machine
    restored on a CPU-only one, for example). If a generator refuses its state, every generator is
    put back as it was before the call. Introduced in lesson 05.
    """
    devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if len(snapshot.torch_cuda) != devices:
        raise ValueError(
            f"snapshot holds {len(snapshot.torch_cuda)} CUDA generator states but this process sees "
            f"{devices} CUDA devices"
        )
    before = snapshot_rng()
    try:
        _set_rng(snapshot)
    except BaseException:  # a generator refused its state: leave every generator as it was
        _set_rng(before)
        raise


def resume_epoch(
    loader: torch.utils.data.DataLoader,
    epoch_start_state: torch.Tensor,
    batches_done: int,
    rng: RngSnapshot | None = None,
) -> Iterator:
    """The rest of an epoch of ``loader``, exactly as an interrupted run would have continued it.

    Each epoch draws from the DataLoader's ``generator``: at ``iter(loader)`` the base seed of its
    worker processes, and, with ``shuffle=True``, the epoch's order when its sampler starts (at the
    first ``next()`` with ``num_workers=0``; at ``iter(loader)`` with workers, which start loading
    at once). A checkpoint taken mid-epoch therefore holds ``loader.generator.get_state()`` as it
    was before ``iter(loader)``, and how many batches were done. This function puts the generator
    back in that state, starts the epoch, and discards the ``batches_done`` batches already trained
    on by loading them again (so that worker processes, whose state no checkpoint holds, reach the
    same state too). Then, if ``rng`` is given, it restores the global generators: after the skip,
    because a dataset that draws random numbers while loading in the main process
    (``num_workers=0``) moves them. State that a dataset keeps itself in the main process (a
    generator stored in it) is the caller's to restore, after this function returns, for the same
    reason.

    Raises ``ValueError`` unless the order comes from a sampler of the kinds the DataLoader builds
    itself, batched by the default ``BatchSampler``: a ``SequentialSampler``, or a ``RandomSampler``
    that draws from ``loader.generator`` (as ``shuffle=True`` builds it). This function puts back
    only ``loader.generator``. A sampler without a generator takes its order from the global
    generator as its epoch starts: a ``RandomSampler`` seeds a private generator with a number drawn
    from it, a ``WeightedRandomSampler`` or ``SubsetRandomSampler`` draws from it directly
    (``torch.multinomial`` or ``torch.randperm`` with ``generator=None``, in
    ``torch/utils/data/sampler.py``); either way the order depends on the global generator's state
    at the epoch's start, and ``rng`` holds its state at the checkpoint. A sampler with a generator
    of its own would need that generator's state at the epoch's start. And samplers of other kinds
    (``WeightedRandomSampler``, ``SubsetRandomSampler``, your own) are refused even with
    ``generator=loader.generator``, because this function does not know what they draw. Also
    raises ``ValueError`` for an
    iterable-style dataset (its position is the dataset's own state), for a loader without a
    ``generator`` (its order and seeds then come from the global generator), for
    ``persistent_workers=True`` (workers that keep their state from one epoch to the next), for
    ``in_order=False`` with workers (batches then come in the order the workers finish them, so
    which items the skipped batches held depends on timing), and for ``batches_done`` outside
    ``0..len(loader)``. Introduced in lesson 05.
    """
    data = torch.utils.data
    if isinstance(loader.dataset, data.IterableDataset):
        raise ValueError(
            "an IterableDataset decides its order itself, and its position is its own state: "
            "resume_epoch can restore only a map-style dataset's order"
        )
    if loader.generator is None:
        raise ValueError("give the DataLoader a generator= so that its order and seeds can be restored")
    sampler = loader.sampler
    own = type(sampler) is data.SequentialSampler or (
        type(sampler) is data.RandomSampler and sampler.generator is loader.generator
    )
    if not own:
        raise ValueError(
            f"sampler: a {type(sampler).__name__} instead of one of the kinds the DataLoader builds "
            "(a SequentialSampler, or a RandomSampler with generator=loader.generator), the only ones "
            "resume_epoch knows how to restore; use shuffle=True and generator= instead of sampler="
        )
    batcher = loader.batch_sampler
    if batcher is not None and not (type(batcher) is data.BatchSampler and batcher.sampler is sampler):
        raise ValueError(
            f"batch_sampler: a {type(batcher).__name__} instead of the default BatchSampler over "
            "loader.sampler, so the batches it forms cannot be restored"
        )
    if loader.persistent_workers and loader.num_workers > 0:
        raise ValueError("persistent workers carry state across epochs that no checkpoint holds")
    if loader.num_workers > 0 and not getattr(loader, "in_order", True):
        raise ValueError(
            "in_order=False: batches come in the order the workers finish them, so which items "
            "the skipped batches held depends on timing"
        )
    total = len(loader)
    if isinstance(batches_done, bool) or not isinstance(batches_done, int) or not 0 <= batches_done <= total:
        raise ValueError(f"batches_done must be an int from 0 to len(loader) = {total}, got {batches_done!r}")
    loader.generator.set_state(epoch_start_state)
    batches = iter(loader)
    for _ in range(batches_done):
        next(batches)
    if rng is not None:
        restore_rng(rng)
    return batches


_PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # Philox4x32-10's multipliers and key increments
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # (curand_philox4x32_x.h; Salmon et al., SC11)


def philox4x32_10(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Ten Philox rounds on counters of shape ``(n, 4)`` (uint32 values held in uint64)."""
    c0, c1, c2, c3 = (counter[:, i].astype(np.uint64) for i in range(4))
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    low, m0, m1 = np.uint64(0xFFFF_FFFF), np.uint64(_PHILOX_M[0]), np.uint64(_PHILOX_M[1])
    for _ in range(10):
        p0, p1 = m0 * c0, m1 * c2  # 32 x 32 -> 64 bits: exact in uint64
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & low, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & low
        k0, k1 = (k0 + np.uint64(_PHILOX_W[0])) & low, (k1 + np.uint64(_PHILOX_W[1])) & low
    return np.stack([c0, c1, c2, c3], axis=1)


def philox_randn(n: int, seed: int) -> torch.Tensor:
    """What ``torch.randn(n, device="cuda")`` draws right after ``torch.manual_seed(seed)``, on the CPU.

    PyTorch's CUDA generator is Philox4x32-10. This is what PyTorch's NVIDIA CUDA builds draw; its
    ROCm builds translate the same kernel to hipRAND (``torch/utils/hipify``), which is not
    reproduced here. For a float32 tensor of ``n <= 256`` elements (one block of 256 threads covers
    them, whatever the NVIDIA GPU), thread ``i`` of PyTorch's kernel
    (``distribution_elementwise_grid_stride_kernel`` in ``ATen/native/cuda/DistributionTemplates.h``)
    calls cuRAND's ``curand_init(seed, i, offset)`` (cuRAND is NVIDIA's random-number library, whose
    device functions PyTorch's kernel calls), with offset 0 right after a seed, and keeps the first of
    the four normals of ``curand_normal4``: Philox's counter is ``(0, 0, i, 0)``, its key the seed's
    two 32-bit halves, and the first two 32-bit outputs become a normal by cuRAND's Box-Muller
    transform (``_curand_box_muller`` in ``curand_normal.h``), in float32 with the constants
    ``2.3283064e-10f`` and ``2.3283064e-10f * 6.2831855f``. The logarithm and sine are taken here in
    float64, while a GPU uses its fast ``__sincosf``: the results match the four decimals reported
    in PyTorch issue #79496, and may differ from a GPU's in later digits. Introduced in lesson 13.
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 256:
        raise ValueError(f"n must be an int from 1 to 256 (one thread per element), got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    threads = np.arange(n, dtype=np.uint64)
    counter = np.zeros((n, 4), dtype=np.uint64)
    counter[:, 2] = threads  # the subsequence (the thread's index) sits in the counter's upper half
    bits = philox4x32_10(counter, (seed & 0xFFFF_FFFF, seed >> 32))
    inv, inv_2pi = np.float32(2.3283064e-10), np.float32(2.3283064e-10) * np.float32(6.2831855)
    u = bits[:, 0].astype(np.float32) * inv + inv / np.float32(2)  # in (0, 1]: log(u) is finite
    v = bits[:, 1].astype(np.float32) * inv_2pi + inv_2pi / np.float32(2)
    radius = np.sqrt(-2.0 * np.log(u.astype(np.float64)))
    return torch.from_numpy((radius * np.sin(v.astype(np.float64))).astype(np.float32))

"""Seeding, deterministic mode and random-number-generator state, made explicit.

Nothing here runs on import: a lesson calls :func:`seed_everything` where it matters, and
:func:`deterministic_mode` restores every flag and variable it touched. Introduced in lessons
``04_deterministic_algorithms`` and ``05_seeds_and_generators``.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import torch

from helpers._validate import (
    check_bool,
    check_int,
    check_str,
    check_tensor,
    checked_first,
    describe,
)

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
    ``cuda/CublasHandlePool.cpp``) and, in releases before 2.10, whether deterministic mode may use
    cuBLAS at all (``alertCuBLASConfigNotDeterministic`` in ``Context.cpp``, which raised unless the
    value was ``:4096:8`` or ``:16:8``; pull request #161749 removed that check, and the builds of
    2.11 and 2.13 contain no trace of it). Changing the variable later, in a cell or a ``with``
    block, changes nothing for the rest of the process: set it in the environment before Python
    starts (``CUBLAS_WORKSPACE_CONFIG=:4096:8 jupyter lab``). ``cublas_workspace_config``, if
    given, is the value the block needs: a ``RuntimeError`` saying so is raised before anything
    changes if the environment holds another. Introduced in lesson 04.

    The arguments are checked when it is called, before the ``with`` block starts: ``TypeError``
    unless ``warn_only`` is a bool and ``cublas_workspace_config`` a str or None, ``ValueError``
    unless the latter has cuBLAS's form ``:SIZE:COUNT`` (one or more pairs, e.g. ``:4096:8``).
    """
    warn_only = check_bool(warn_only, "warn_only")
    if cublas_workspace_config is not None:
        check_str(cublas_workspace_config, "cublas_workspace_config")
        if not _CUBLAS_CONFIG.fullmatch(cublas_workspace_config):
            raise ValueError(
                "cublas_workspace_config must have cuBLAS's form ':SIZE:COUNT' such as ':4096:8' "
                f"(or several pairs, ':4096:2:16:8'), got {cublas_workspace_config!r}"
            )
    return _deterministic_mode(warn_only, cublas_workspace_config)


@contextlib.contextmanager
def _deterministic_mode(warn_only: bool, cublas_workspace_config: str | None) -> Iterator[dict[str, object]]:
    """:func:`deterministic_mode` once its arguments are checked."""
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
    state. Introduced in lesson 05.

    ``worker_id`` (the worker's number, which the DataLoader passes) must be an int >= 0; the seed
    comes from ``torch.initial_seed()``, which the DataLoader has already made distinct per worker.
    """
    check_int(worker_id, "worker_id", min=0)
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
    It lives in the package so that DataLoader workers can import it on every platform.
    Introduced in lesson 05.

    ``length`` and ``seed`` must be ints >= 0 (``TypeError``/``ValueError`` otherwise), ``length``
    at most ``sys.maxsize`` (``2**63 - 1``), the largest ``len()`` Python can return. An index
    must be an int (``TypeError``); one outside ``0..length-1`` raises ``IndexError``, as for a list.
    """

    def __init__(self, length: int = 8, seed: int = 0) -> None:
        self.length = check_int(length, "length", min=0, max=sys.maxsize)  # len() must fit a C ssize_t
        self.rng = np.random.default_rng(check_int(seed, "seed", min=0))

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> torch.Tensor:
        i = check_int(i, "i (the index)")
        if not 0 <= i < self.length:
            raise IndexError(f"i (the index) {i} is out of range for a NoisyDataset of length {self.length}")
        values = [float(i), torch.rand(()).item(), np.random.rand(), random.random(), self.rng.random()]
        return torch.tensor(values, dtype=torch.float64)


_MT_WORDS = 624  # the Mersenne Twister's state words, in Python's random and NumPy's legacy generator
_NUMPY_STATE_KEYS = ("name", "keys", "pos", "has_gauss", "cached_gaussian")
_STATE_DICT_KEYS = ("python", "numpy", "torch_cpu", "torch_cuda")


class _MissingKeyError(KeyError, ValueError):
    """A state dict without a key it needs: a ``KeyError`` (as before these checks), and a
    ``ValueError`` like every other malformed RNG state."""

    def __str__(self) -> str:  # KeyError's own shows the repr of its message
        return str(self.args[0])


def _check_keys(value: Mapping, name: str, expected: tuple[str, ...]) -> None:
    missing = [key for key in expected if key not in value]
    if missing:
        raise _MissingKeyError(f"{name} is missing {', '.join(map(repr, missing))}")
    extra = [key for key in value if key not in expected]
    if extra:
        raise ValueError(
            f"{name} has unknown key(s) {', '.join(describe(k) for k in extra)}; "
            f"expected only {', '.join(map(repr, expected))}"
        )


def _check_float(value: object, name: str) -> float:
    """A finite Python float (NumPy's float64 is one), as the generators' states hold."""
    if not isinstance(value, float):
        raise TypeError(f"{name} must be a float, got {describe(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def _check_python_state(value: object, name: str, *, lists: bool = False) -> tuple:
    """``random.getstate()``: ``(3, (624 words, position), gauss_next)``; lists too if ``lists``."""
    kinds, what = ((tuple, list), "a tuple or list") if lists else ((tuple,), "a tuple")
    if not isinstance(value, kinds):
        raise TypeError(f"{name} must be {what} as random.getstate() returns, got {describe(value)}")
    if len(value) != 3:
        raise ValueError(f"{name} must have 3 items (version, internal state, gauss_next), got {len(value)}")
    version, words, gauss_next = value
    if check_int(version, f"{name}[0]") != 3:
        raise ValueError(f"{name}[0] (the version) must be 3, got {version}")
    if not isinstance(words, kinds):
        raise TypeError(f"{name}[1] must be {what} of {_MT_WORDS + 1} ints, got {describe(words)}")
    if len(words) != _MT_WORDS + 1:
        raise ValueError(
            f"{name}[1] must hold {_MT_WORDS + 1} ints ({_MT_WORDS} state words and a position), "
            f"got {len(words)}"
        )
    checked = [check_int(word, f"{name}[1][{i}]", min=0, max=2**32 - 1) for i, word in enumerate(words[:-1])]
    checked.append(check_int(words[-1], f"{name}[1][{_MT_WORDS}]", min=0, max=_MT_WORDS))
    _check_mt_not_zero(checked, f"{name}[1]")
    if gauss_next is not None:
        gauss_next = _check_float(gauss_next, f"{name}[2]")
    return (3, tuple(checked), gauss_next)


def _check_mt_not_zero(words, name: str) -> None:
    """Refuse the one degenerate MT19937 state: all of its 19937 bits zero (the top bit of word 0
    and words 1 to 623), from which the generator returns 0 forever (``random.random() == 0.0``).
    No generator ever reaches it; ``random.setstate`` and ``numpy.random.set_state`` accept it."""
    if not int(words[0]) & 0x8000_0000 and not any(int(w) for w in words[1:_MT_WORDS]):
        raise ValueError(
            f"{name} is an all-zero MT19937 state (the top bit of word 0 and words 1 to "
            f"{_MT_WORDS - 1} are 0), from which the generator returns only zeros"
        )


def _check_numpy_keys(keys: np.ndarray, name: str) -> np.ndarray:
    if keys.shape != (_MT_WORDS,):
        raise ValueError(f"{name} must have shape ({_MT_WORDS},), got {keys.shape}")
    _check_mt_not_zero(keys.tolist(), name)
    return keys


def _check_numpy_state(value: object, name: str) -> tuple:
    """``numpy.random.get_state()``: ``("MT19937", keys, pos, has_gauss, cached_gaussian)``."""
    if not isinstance(value, tuple):
        raise TypeError(f"{name} must be a tuple as numpy.random.get_state() returns, got {describe(value)}")
    if len(value) != 5:
        raise ValueError(
            f"{name} must have 5 items (name, keys, pos, has_gauss, cached_gaussian), got {len(value)}"
        )
    kind, keys, pos, has_gauss, cached = value
    check_str(kind, f"{name}[0]", choices=["MT19937"])
    if not isinstance(keys, np.ndarray) or keys.dtype != np.uint32:
        raise TypeError(f"{name}[1] must be a NumPy array of uint32, got {describe(keys)}")
    return (
        kind,
        _check_numpy_keys(keys, f"{name}[1]"),
        check_int(pos, f"{name}[2]", min=0, max=_MT_WORDS),
        check_int(has_gauss, f"{name}[3]", min=0, max=1),
        _check_float(cached, f"{name}[4]"),
    )


def _check_numpy_state_dict(value: object, name: str) -> tuple:
    """The ``"numpy"`` entry of :meth:`RngSnapshot.state_dict`, as NumPy's state tuple."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, got {describe(value)}")
    _check_keys(value, name, _NUMPY_STATE_KEYS)
    check_str(value["name"], f"{name}['name']", choices=["MT19937"])
    keys = check_tensor(value["keys"], f"{name}['keys']", dtypes=[torch.int64], dim=1)
    _check_strided(keys, f"{name}['keys']")
    if keys.device.type != "cpu":
        raise ValueError(f"{name}['keys'] must be on the CPU, got {keys.device}")
    if not bool(((keys >= 0) & (keys < 2**32)).all()):
        raise ValueError(f"{name}['keys'] must hold 32-bit unsigned values (0 to 2**32 - 1)")
    return (
        "MT19937",
        _check_numpy_keys(keys.numpy().astype(np.uint32), f"{name}['keys']"),
        check_int(value["pos"], f"{name}['pos']", min=0, max=_MT_WORDS),
        check_int(value["has_gauss"], f"{name}['has_gauss']", min=0, max=1),
        _check_float(value["cached_gaussian"], f"{name}['cached_gaussian']"),
    )


def _check_strided(value: torch.Tensor, name: str) -> None:
    """Refuse a sparse (or other non-strided) tensor: the states a generator returns are dense."""
    if value.layout != torch.strided:
        raise ValueError(f"{name} must be a dense tensor, as states are, not one of layout {value.layout}")


def _check_generator_state(value: object, name: str, device: str | None) -> torch.Tensor:
    """A generator state (a 1-D uint8 CPU tensor); with ``device``, one that device's generator takes.

    The check sets it on a new generator of that device, never on the global ones.
    """
    check_tensor(value, name, dtypes=[torch.uint8], dim=1)
    _check_strided(value, name)
    if value.device.type != "cpu":
        raise ValueError(f"{name} must be on the CPU, as generator states are, got {value.device}")
    if device is not None:
        try:
            torch.Generator(device=device).set_state(value)
        except (RuntimeError, TypeError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(
                f"{name} is not a state of a {device} generator ({value.numel()} bytes): {reason}"
            ) from None
    return value


def _check_cuda_states(value: object, name: str, *, lists: bool = False, here: bool = True) -> tuple:
    """One generator state per CUDA device; with ``here``, as many as this process sees, each valid."""
    kinds, what = ((tuple, list), "a tuple or list") if lists else ((tuple,), "a tuple")
    if not isinstance(value, kinds):
        raise TypeError(f"{name} must be {what} of CUDA generator states, got {describe(value)}")
    if here:
        devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if len(value) != devices:
            raise ValueError(
                f"{name} holds {len(value)} CUDA generator states but this process sees "
                f"{devices} CUDA devices"
            )
    return tuple(
        _check_generator_state(state, f"{name}[{i}]", f"cuda:{i}" if here else None)
        for i, state in enumerate(value)
    )


def _check_snapshot(snapshot: object, name: str, *, here: bool = True) -> RngSnapshot:
    """Every field of an :class:`RngSnapshot`, named ``{name}.field[...]``; returns the checked copy.

    ``here``: also that it holds one CUDA state per device of this process, each valid there.
    """
    if not isinstance(snapshot, RngSnapshot):
        raise TypeError(f"{name} must be an RngSnapshot (from snapshot_rng()), got {describe(snapshot)}")
    return RngSnapshot(
        _check_python_state(snapshot.python, f"{name}.python"),
        _check_numpy_state(snapshot.numpy, f"{name}.numpy"),
        _check_generator_state(snapshot.torch_cpu, f"{name}.torch_cpu", "cpu"),
        _check_cuda_states(snapshot.torch_cuda, f"{name}.torch_cuda", here=here),
    )


@dataclass(frozen=True)
class RngSnapshot:
    """The state of every generator a training run draws from. Introduced in lesson 05.

    Building one checks nothing (it is a record, as :func:`snapshot_rng` fills it); its fields are
    checked where they are used: by :func:`restore_rng` (and :func:`resume_epoch`) before any
    generator changes, by :meth:`state_dict` and by :meth:`from_state_dict`.
    """

    python: tuple
    numpy: tuple
    torch_cpu: torch.Tensor
    torch_cuda: tuple[torch.Tensor, ...]

    def state_dict(self) -> dict[str, object]:
        """The snapshot as tensors, ints and tuples only, so ``torch.load(weights_only=True)`` reads it.

        Raises ``TypeError``/``ValueError`` naming the field (``snapshot.numpy[1]``) if one is malformed.
        """
        checked = _check_snapshot(self, "snapshot", here=False)
        name, keys, pos, has_gauss, cached = checked.numpy
        return {
            "python": checked.python,
            "numpy": {
                "name": name,
                "keys": torch.from_numpy(keys.astype(np.int64)),
                "pos": int(pos),
                "has_gauss": int(has_gauss),
                "cached_gaussian": float(cached),
            },
            "torch_cpu": checked.torch_cpu,
            "torch_cuda": list(checked.torch_cuda),
        }

    @staticmethod
    def from_state_dict(state: Mapping[str, object]) -> RngSnapshot:
        """The inverse of :meth:`state_dict`.

        Every entry is checked, and an error names the one at fault (``state['numpy']['keys']``):
        ``KeyError`` (which is also a ``ValueError``) for a missing key, ``ValueError`` for an
        unknown one, ``TypeError``/``ValueError`` for an entry of the wrong kind or value. How many
        CUDA states it holds is :func:`restore_rng`'s check: the machine that reads a checkpoint
        may differ from the one that restores it.
        """
        if not isinstance(state, Mapping):
            raise TypeError(
                f"state must be a dict as RngSnapshot.state_dict() returns, got {describe(state)}"
            )
        _check_keys(state, "state", _STATE_DICT_KEYS)
        return RngSnapshot(
            _check_python_state(state["python"], "state['python']", lists=True),
            _check_numpy_state_dict(state["numpy"], "state['numpy']"),
            _check_generator_state(state["torch_cpu"], "state['torch_cpu']", "cpu"),
            _check_cuda_states(state["torch_cuda"], "state['torch_cuda']", lists=True, here=False),
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

    Every field is checked before any generator changes, so a snapshot that is refused leaves
    them all as they were: ``TypeError`` unless ``snapshot`` is an :class:`RngSnapshot`, and
    ``TypeError``/``ValueError`` naming the field at fault (``snapshot.torch_cpu``,
    ``snapshot.python[1][5]``) for one of the wrong kind, size or value. That includes a snapshot
    holding a different number of CUDA generator states than this process sees CUDA devices (a
    checkpoint from a GPU machine restored on a CPU-only one, for example). Introduced in lesson 05.
    """
    snapshot = _check_snapshot(snapshot, "snapshot")
    before = snapshot_rng()
    try:
        _set_rng(snapshot)
    except BaseException:  # a failure the checks did not foresee: leave every generator as it was
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
    only ``loader.generator``: a ``RandomSampler`` without ``generator=`` seeds itself from the
    global generator as its epoch starts (``rng`` holds the global generators' state at the
    checkpoint, not at the epoch's start); one with a generator of its own would need that
    generator's state at the epoch's start; and samplers of other kinds (``WeightedRandomSampler``,
    ``SubsetRandomSampler``, your own) are refused even with ``generator=loader.generator``,
    because this function does not know what they draw. Also raises ``ValueError`` for an
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


def _check_resume_arguments(
    loader: object, epoch_start_state: object, batches_done: object, rng: object
) -> dict:
    """The checks of :func:`resume_epoch`, run first by ``checked_first``: lesson 05 prints its body."""
    if not isinstance(loader, torch.utils.data.DataLoader):
        raise TypeError(f"loader must be a torch.utils.data.DataLoader, got {describe(loader)}")
    generator = loader.generator if isinstance(loader.generator, torch.Generator) else None
    _check_generator_state(
        epoch_start_state, "epoch_start_state", None if generator is None else str(generator.device)
    )
    checked = {"batches_done": check_int(batches_done, "batches_done", min=0)}
    if rng is not None:
        checked["rng"] = _check_snapshot(rng, "rng")
    return checked


resume_epoch = checked_first(resume_epoch, _check_resume_arguments)


resume_epoch.__doc__ = (resume_epoch.__wrapped__.__doc__ or "") + """
    Its arguments are checked before anything changes: ``TypeError`` unless ``loader`` is a
    ``DataLoader``, ``epoch_start_state`` a 1-D uint8 CPU tensor (``loader.generator.get_state()``;
    ``ValueError`` if that generator cannot take it) and ``batches_done`` an int (``ValueError``
    if negative), and ``rng`` is checked as :func:`restore_rng` checks a snapshot, naming
    ``rng.<field>``.
    """


_PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # Philox4x32-10's multipliers and key increments
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # (curand_philox4x32_x.h; Salmon et al., SC11)


def _philox4x32_10(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
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
    bits = _philox4x32_10(counter, (seed & 0xFFFF_FFFF, seed >> 32))
    inv, inv_2pi = np.float32(2.3283064e-10), np.float32(2.3283064e-10) * np.float32(6.2831855)
    u = bits[:, 0].astype(np.float32) * inv + inv / np.float32(2)  # in (0, 1]: log(u) is finite
    v = bits[:, 1].astype(np.float32) * inv_2pi + inv_2pi / np.float32(2)
    radius = np.sqrt(-2.0 * np.log(u.astype(np.float64)))
    return torch.from_numpy((radius * np.sin(v.astype(np.float64))).astype(np.float32))

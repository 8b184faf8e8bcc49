"""The checkers of lesson 05's exercises (Seeds and random number generators).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
from collections.abc import Callable, Iterator

import numpy as np
import torch

from helpers._validate import describe
from helpers.exercises._common import as_number


@contextlib.contextmanager
def _global_rngs_kept() -> Iterator[None]:
    """Inside the block, anything may seed or draw from torch's, Python's and NumPy's global generators;
    after it, all three are as they were."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


# --- 05.1: fix a training function with planted reproducibility bugs

#: The parameters of the lesson's model, nn.Sequential(Linear(4, 16), ReLU(), Dropout(0.1), Linear(16, 1)).
_TRAIN_SHAPES = {"0.weight": (16, 4), "0.bias": (16,), "3.weight": (1, 16), "3.bias": (1,)}
_TRAIN_STEPS = 12  # 3 epochs of 64 items in batches of 16
#: Global generator seeds set before a call: the checker's stand-ins for "whatever the program drew before".
_BEFORE_A, _BEFORE_B = {"torch": 11, "random": 11, "numpy": 11}, {"torch": 22, "random": 22, "numpy": 22}
_SOURCES = {
    "torch": "torch's global generator",
    "random": "Python's random",
    "numpy": "NumPy's global generator",
}


def _run_train(fn: Callable, seed: int, before: dict[str, int]) -> tuple[object, list[float], dict]:
    """Call ``fn(seed)`` with the global generators in the state ``before`` names; read what it returned.

    Returns (error message or None, losses, parameters); the global generators are left as they were.
    """
    seen = _Seen()
    handle = torch.nn.modules.module.register_module_forward_hook(seen.hook)
    try:
        with _global_rngs_kept():
            torch.default_generator.manual_seed(before["torch"])  # CPU only: fork_rng restores only that
            random.seed(before["random"])
            np.random.seed(before["numpy"])
            result = fn(seed)
    finally:
        handle.remove()
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        return f"fit(seed) must return (model, losses), as the lesson's does, not {describe(result)}.", [], {}
    model, losses = result
    if not isinstance(model, torch.nn.Module):
        return f"the first thing fit returns must be the model (an nn.Module), not {describe(model)}.", [], {}
    try:
        params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    except Exception as exc:
        return f"reading the model's state_dict() failed: {type(exc).__name__}: {exc}", [], {}
    shapes = {k: tuple(v.shape) for k, v in params.items() if isinstance(v, torch.Tensor)}
    if shapes != _TRAIN_SHAPES or any(v.is_meta or v.dtype != torch.float32 for v in params.values()):
        return (
            f"the model's parameters are {shapes}; keep the lesson's model, whose parameters are "
            f"{_TRAIN_SHAPES} in float32.",
            [],
            {},
        )
    if not seen.dropout:
        return (
            "no dropout layer ran in training mode while it trained: keep the dropout layer and train in "
            "training mode; the task is to make the random parts repeatable, not to remove them.",
            [],
            {},
        )
    removed = seen.removed()
    if removed:
        return (
            f"the batches it trained on show no {removed}: keep it; the task is to make the random parts "
            "repeatable, not to remove them.",
            [],
            {},
        )
    if isinstance(losses, torch.Tensor) and losses.dim() == 1 and not losses.is_meta:
        losses = losses.tolist()  # a tensor of the losses will do as well as a list
    numbers = [as_number(v) for v in losses] if isinstance(losses, (list, tuple)) else None
    if numbers is None or len(numbers) != _TRAIN_STEPS or not all(_finite(n) for n in numbers):
        return (
            f"the second thing fit returns must be the list of its {_TRAIN_STEPS} losses (3 epochs of 4 "
            f"batches), finite numbers; it returned {describe(losses)}.",
            [],
            {},
        )
    return None, [float(n) for n in numbers], params


class _Seen:
    """What a call of fit ran, seen through a global forward hook: whether a dropout layer ran in training
    mode, and the batches that reached a Linear(4, ...) layer in training mode."""

    def __init__(self) -> None:
        self.dropout = False
        self.batches: list[torch.Tensor] = []

    def hook(self, module: torch.nn.Module, args: tuple, output: object) -> None:
        try:  # never disturb the learner's code
            if not module.training:
                return
            if isinstance(module, torch.nn.Dropout) and module.p > 0:
                self.dropout = True
            if isinstance(module, torch.nn.Linear) and module.in_features == 4 and args:
                x = args[0]
                if isinstance(x, torch.Tensor) and x.dim() == 2 and x.shape[1] == 4 and not x.is_meta:
                    self.batches.append(x.detach().to("cpu", torch.float64, copy=True))
        except Exception:
            pass

    def removed(self) -> str:
        """'shuffling' or 'mirroring' if the batches show none (the lesson's 3 epochs of 4 batches of 16),
        else ''; '' also where the batches are not the lesson's, since then nothing can be said."""
        batches = [b for b in self.batches if tuple(b.shape) == (16, 4)]
        if len(batches) != _TRAIN_STEPS:
            return ""
        rows = [[tuple(r) for r in b.tolist()] for b in batches]
        # an item, mirrored or not, is the smaller of its row and the reversed row
        items = [frozenset(min(r, r[::-1]) for r in b) for b in rows]
        if items[0:4] == items[4:8] == items[8:12]:
            return "shuffling (every epoch has the same batches)"
        faces: dict[tuple, set[tuple]] = {}
        for b in rows:
            for r in b:
                faces.setdefault(min(r, r[::-1]), set()).add(r)
        if all(len(f) == 1 for f in faces.values()):
            return "mirroring (no item ever arrives reversed)"
        return ""


def _finite(n: int | float | None) -> bool:
    try:
        return n is not None and math.isfinite(n)
    except OverflowError:  # an int too large for a float
        return False


def _same(a: tuple[list[float], dict], b: tuple[list[float], dict]) -> bool:
    return a[0] == b[0] and all(torch.equal(a[1][k], b[1][k]) for k in _TRAIN_SHAPES)


def _first_difference(a: tuple[list[float], dict], b: tuple[list[float], dict]) -> str:
    step = next((i for i, (x, y) in enumerate(zip(a[0], b[0], strict=True)) if x != y), None)
    if step is not None:
        values = f"{a[0][step]:.6g} and {b[0][step]:.6g}"
        return f"their losses first differ at step {step + 1} of {_TRAIN_STEPS} ({values})"
    name = next(k for k in _TRAIN_SHAPES if not torch.equal(a[1][k], b[1][k]))
    return f"their losses are the same but the trained parameter '{name}' differs"


def _ex_05_1(answer: object) -> tuple[bool, str]:
    if not callable(answer) or isinstance(answer, type):
        return False, "answer with your fixed function fit(seed), which returns (model, losses)."

    def run(seed: int, before: dict[str, int]) -> tuple[list[float], dict]:
        error, losses, params = _run_train(answer, seed, before)
        if error is not None:
            raise _Refused(error)
        return losses, params

    try:
        a, b = run(0, _BEFORE_A), run(0, _BEFORE_B)
        if not _same(a, b):
            where = _first_difference(a, b)
            if not _same(a, run(0, _BEFORE_A)):
                return False, (
                    f"two calls fit(0) differ even when every global generator is in the same state before "
                    f"each: {where}. Something keeps state from one call to the next."
                )
            leaks = [name for name in _SOURCES if not _same(a, run(0, {**_BEFORE_A, name: _BEFORE_B[name]}))]
            named = " and ".join(_SOURCES[name] for name in leaks) or "the global generators together"
            return False, (
                f"two calls fit(0) differ when the program drew other numbers before them: {where}. The "
                f"result depends on the state of {named} before the call: something draws from "
                f"{'them' if len(leaks) > 1 else 'it'} that your seed has not reset first (section 5.1)."
            )
        other = run(1, _BEFORE_A)
    except _Refused as refused:
        return False, str(refused)
    except Exception as exc:  # the learner's function: report any failure as a hint
        return False, f"calling fit(seed) failed: {type(exc).__name__}: {exc}"
    if _same(a, other):
        return False, "fit(0) and fit(1) give the same result: the seed must decide the run, not a constant."
    first, last = sum(a[0][:4]) / 4, sum(a[0][-4:]) / 4
    if not last < first:
        return False, (
            f"its loss does not fall (first four steps {first:.3g}, last four {last:.3g}): keep the training "
            "as it was."
        )
    return True, (
        "fit(0) repeats bit for bit whatever the program drew before, and fit(1) differs: every generator "
        "it draws from now starts from the seed."
    )


class _Refused(Exception):
    """What fit returned is not a result that can be compared; the message says why."""


# --- 05.2: decide what a checkpoint must hold to resume a training script exactly, mid-epoch

#: What exercise 05.2's checkpoint may hold: each name, and what it stands for in the lesson's script.
CHECKPOINT_PARTS: dict[str, str] = {
    "model": "model.state_dict()",
    "optimizer": "opt.state_dict()",
    "scheduler": "sched.state_dict()",
    "position": "(epoch, i + 1), from the loop's variables: the epoch, and how many of its batches are done",
    "loader_now": "loader.generator.get_state(), taken at the checkpoint",
    "loader_epoch_start": "epoch_start, the loader generator's state saved as the epoch began",
    "torch_rng": "torch.get_rng_state()",
    "numpy_rng": "np.random.get_state()",
    "python_rng": "random.getstate()",
    "noise_rng": "noise.bit_generator.state, the state of the script's own NumPy generator",
}
_EPOCHS, _BATCHES, _STOP = 3, 6, 9  # 3 epochs of 6 batches; the job is killed after step 9 (epoch 2, i = 2)
#: What the script draws from, and so what the checkpoint needs (checked by the tests, by simulation).
_NEEDED = frozenset(
    {"model", "optimizer", "scheduler", "position", "loader_epoch_start", "torch_rng", "noise_rng"}
)


def _script_setup() -> tuple:
    """The lines of exercise 05.2's script before its loop, as a fresh process runs them."""
    from torch.utils.data import DataLoader, TensorDataset

    random.seed(0)  # seed_everything(0)
    np.random.seed(0)
    torch.default_generator.manual_seed(0)
    x = torch.rand(_BATCHES * 4, 4, generator=torch.Generator().manual_seed(5))
    data = TensorDataset(x, x.sum(dim=1, keepdim=True))
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    loader = DataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    noise = np.random.default_rng(0)
    return model, opt, sched, loader, noise


def _script_steps(run: tuple, epoch: int, done: int, epoch_start: torch.Tensor | None, steps: int | None,
                  on_stop=None) -> list[float]:
    """The script's loop from (epoch, done): its losses. ``epoch_start`` is the loader generator's
    state at that epoch's start (None: its state now); ``on_stop(epoch, done, epoch_start)`` is
    called after step ``_STOP`` of an uninterrupted run, where the checkpoint is taken."""
    model, opt, sched, loader, noise = run
    losses: list[float] = []
    for e in range(epoch, _EPOCHS):
        if epoch_start is None or e > epoch:
            epoch_start = loader.generator.get_state()
        else:
            loader.generator.set_state(epoch_start)
        batches = iter(loader)
        for _ in range(done if e == epoch else 0):
            next(batches)  # the batches done before the checkpoint, loaded again and skipped
        for i, (x, y) in enumerate(batches, start=done if e == epoch else 0):
            y = y + torch.from_numpy(noise.normal(0, 0.1, tuple(y.shape))).float()
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            if on_stop is not None and e * _BATCHES + i + 1 == _STOP:
                on_stop(e, i + 1, epoch_start)
            if steps is not None and len(losses) == steps:
                return losses
    return losses


@functools.lru_cache(maxsize=1)
def _uninterrupted() -> tuple[list[float], dict[str, torch.Tensor], dict[str, object]]:
    """Exercise 05.2's script run to its end: its losses, its final weights, and everything a
    checkpoint after step ``_STOP`` could hold (a copy of each part of CHECKPOINT_PARTS)."""
    import copy

    checkpoint: dict[str, object] = {}
    with _global_rngs_kept():
        run = _script_setup()
        model, opt, sched, loader, noise = run

        def take(epoch: int, done: int, epoch_start: torch.Tensor) -> None:
            checkpoint.update(
                model=copy.deepcopy(model.state_dict()), optimizer=copy.deepcopy(opt.state_dict()),
                scheduler=copy.deepcopy(sched.state_dict()), position=(epoch, done),
                loader_now=loader.generator.get_state(), loader_epoch_start=epoch_start.clone(),
                torch_rng=torch.get_rng_state(), numpy_rng=np.random.get_state(),
                python_rng=random.getstate(), noise_rng=copy.deepcopy(noise.bit_generator.state),
            )

        losses = _script_steps(run, 0, 0, None, None, on_stop=take)
        final = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return losses, final, checkpoint


def resumed_run(saved: set[str] | frozenset[str]) -> str | None:
    """Exercise 05.2: kill the script after step 9, resume it from a checkpoint that holds only the
    parts named in ``saved`` (names of :data:`CHECKPOINT_PARTS`), and compare with the run that never
    stopped. None if the resumed run ends bitwise identical (every loss after the checkpoint and the
    final weights), else where it first differs. The global generators are left as they were.

    The resumed job runs the script's lines up to its loop (``seed_everything(0)`` included), puts
    back what the checkpoint holds (the loader's generator before ``iter(loader)``, as
    :func:`helpers.determinism.resume_epoch` does), skips the batches done and continues.
    """
    unknown = sorted(set(saved) - set(CHECKPOINT_PARTS))
    if unknown or {"loader_now", "loader_epoch_start"} <= set(saved):
        raise ValueError(
            f"names from {sorted(CHECKPOINT_PARTS)}, at most one loader state; got {sorted(saved)}"
        )
    import copy

    losses, final, kept = _uninterrupted()
    checkpoint = copy.deepcopy(kept)  # loading may alias: Adam's moments would change the kept copy
    with _global_rngs_kept():
        run = _script_setup()
        model, opt, sched, loader, noise = run
        if "model" in saved:
            model.load_state_dict(checkpoint["model"])
        if "optimizer" in saved:
            opt.load_state_dict(checkpoint["optimizer"])
        if "scheduler" in saved:
            sched.load_state_dict(checkpoint["scheduler"])
        if "noise_rng" in saved:
            noise.bit_generator.state = checkpoint["noise_rng"]
        if "torch_rng" in saved:
            torch.set_rng_state(checkpoint["torch_rng"])
        if "numpy_rng" in saved:
            np.random.set_state(checkpoint["numpy_rng"])
        if "python_rng" in saved:
            random.setstate(checkpoint["python_rng"])
        epoch, done = checkpoint["position"] if "position" in saved else (0, 0)
        state = next((checkpoint[k] for k in ("loader_now", "loader_epoch_start") if k in saved), None)
        if state is None:
            state = loader.generator.get_state()  # what the script's own line gave it
        resumed = _script_steps(run, epoch, done, state, None)
        weights = {k: v.detach() for k, v in model.state_dict().items()}
    after = losses[_STOP:]
    step = next((i for i, (a, b) in enumerate(zip(after, resumed, strict=False)) if a != b), None)
    if step is not None:
        return f"its loss first differs at step {_STOP + step + 1} of {len(losses)}"
    if len(resumed) != len(after):
        return f"it takes {len(resumed)} steps after the checkpoint, not {len(after)}"
    if not all(torch.equal(weights[k], final[k]) for k in final):
        return "every loss matches but the final weights differ"
    return None


def _names(answer: object) -> set[str] | None:
    if isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer):
        return {a.strip() for a in answer}
    return None


def _ex_05_2(answer: object) -> tuple[bool, str]:
    given = _names(answer)
    if given is None:
        return False, "answer with a set of names, for example {\"model\", \"optimizer\"}."
    unknown = sorted(given - set(CHECKPOINT_PARTS))
    if unknown:
        return False, f"{unknown[0]!r} is not one of the names: use only {sorted(CHECKPOINT_PARTS)}."
    if {"loader_now", "loader_epoch_start"} <= given:
        return False, (
            "loader_now and loader_epoch_start are two states of the same generator, and the resumed job "
            "can put back only one before iter(loader): which one does epoch 2 need?"
        )
    differs = resumed_run(given)
    if differs is not None:
        missing = _NEEDED - given
        if "position" in missing:
            why = "without the position, the resumed job starts again from the first batch of epoch 1"
        elif "model" in missing or "optimizer" in missing:
            why = "it starts from other weights or another optimizer state than the run had reached"
        elif "loader_now" in given:
            why = (
                "the batches after the checkpoint hold other items: at the checkpoint the loader's "
                "generator had already made epoch 2's draws (the timeline in section 5.4)"
            )
        elif "loader_epoch_start" in missing:
            why = "the batches after the checkpoint hold other items: what decides the order of epoch 2?"
        elif "scheduler" in missing:
            why = "the learning rate changes at other steps than in the run that never stopped"
        elif "noise_rng" in missing:
            why = (
                "the label noise after the checkpoint is not the one the run drew: which generator does "
                "noise.normal draw from?"
            )
        else:
            why = "the dropout masks after the checkpoint differ: which generator draws them (section 5.3)?"
        return False, f"resumed from that checkpoint, {differs}: {why}" + ("" if why.endswith("?") else ".")
    extra = sorted(given - _NEEDED)
    if extra:
        return False, (
            f"resumed from that checkpoint, the run is bitwise identical, but {' and '.join(extra)} "
            f"{'are' if len(extra) > 1 else 'is'} not needed: does the script's loop ever draw from "
            f"{'them' if len(extra) > 1 else 'it'}? Answer with the smallest set."
        )
    return True, (
        "the model, optimizer and scheduler, the position, the loader generator's state from when epoch 2 "
        "began, torch's global generator (dropout) and the script's own noise generator. seed_everything "
        "seeded NumPy's global generator and random, but the loop never draws from them; and the loader's "
        "state at the checkpoint is past epoch 2's draws."
    )


CHECKERS = {
    "05.1": ("your fixed function fit(seed), which returns (model, losses)", _ex_05_1),
    "05.2": ("the set of names of what the checkpoint must hold, and nothing more", _ex_05_2),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "05.1": "code",
    "05.2": "decide",
}

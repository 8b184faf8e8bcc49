"""The checkers of lesson 05's exercises (Seeds and random number generators).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import contextlib
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


# --- 05.1: predict whether a DataLoader without a generator repeats its order after torch.manual_seed


def shuffled_orders_repeat() -> bool:
    """Whether two ``shuffle=True`` DataLoaders without a ``generator``, each after ``torch.manual_seed(0)``,
    give the same order here (lesson 05, exercise 1). The global generators are left as they were."""
    from torch.utils.data import DataLoader

    orders = []
    with _global_rngs_kept():
        for _ in range(2):
            torch.default_generator.manual_seed(0)  # CPU only: fork_rng restores only that
            orders.append([batch.tolist() for batch in DataLoader(range(8), batch_size=4, shuffle=True)])
    return orders[0] == orders[1]


def _ex_05_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        if isinstance(answer, str) and answer.strip().lower() in ("true", "false"):
            return False, "answer with True or False without quotes."
        return False, "answer with True (the same order twice) or False (two different orders)."
    if answer != shuffled_orders_repeat():
        return False, (
            "a DataLoader given no generator still needs random numbers to shuffle: where does it take "
            "them from (section 5.5 says where its workers' base seed comes from)?"
        )
    return True, (
        "the same order: without a generator, the DataLoader and its RandomSampler draw their seeds from "
        "torch's global generator (torch/utils/data/sampler.py), which torch.manual_seed resets. Any "
        "other draw from that generator in between would change the order, hence a generator of its own."
    )


def _ex_05_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, torch.Generator):
        return False, "answer with a torch.Generator object, for example torch.Generator()."
    if answer.device.type != "cpu":
        return False, "make it a CPU generator (the default device)."
    if answer is torch.default_generator:
        return False, (
            "that is torch's global CPU generator, which every other piece of code draws from too: create a "
            "private one (section 5.3)."
        )
    if answer.initial_seed() != 42:
        return False, f"its seed is {answer.initial_seed()}: call .manual_seed(42) on it."
    if not torch.equal(answer.get_state(), torch.Generator().manual_seed(42).get_state()):
        return False, "it is seeded with 42 but something has already drawn from it."
    return True, "torch.Generator().manual_seed(42): pass it as generator= to any random function."


# --- 05.3: fix a training function with planted reproducibility bugs

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


def _ex_05_3(answer: object) -> tuple[bool, str]:
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


def _ex_05_4(answer: object) -> tuple[bool, str]:
    choices = {"rand(1000)", "randn(1000)", "randn(8)"}
    if not (isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a set of strings chosen from {sorted(choices)}."
    given = {a.strip().replace("torch.", "").replace(" ", "") for a in answer}
    if not given <= choices:
        return False, f"use only these names: {sorted(choices)}."
    if "rand(1000)" in given:
        return False, "torch.rand takes no log, sin or cos: it scales integers by 2**-24, exactly."
    if "randn(8)" in given:
        return False, (
            "fewer than 16 elements take the scalar path, which calls the C library's log1p, sin and cos "
            "with and without AVX2."
        )
    if given != {"randn(1000)"}:
        return False, "section 5.2 ran the same seeded draws in a second process: which one differed?"
    return True, (
        "randn of 16 or more float32 elements: with AVX2, PyTorch uses its own vectorised log, sin and "
        "cos; without AVX2, the C library's."
    )


CHECKERS = {
    "05.1": ("True or False: does the shuffled order repeat after the same torch.manual_seed", _ex_05_1),
    "05.2": ("a torch.Generator seeded with 42", _ex_05_2),
    "05.3": ("your fixed function fit(seed), which returns (model, losses)", _ex_05_3),
    "05.4": ("a set of the draws computed with other log, sin and cos without AVX2", _ex_05_4),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "05.1": "predict",
    "05.2": "code",
    "05.3": "code",
    "05.4": "recall",
}

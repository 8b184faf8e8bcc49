"""Lesson 05's exercise checkers accept right answers and reject wrong ones with a hint."""

import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from helpers import check

# Exercise 05.1: the lesson's fit(seed), with each planted bug switched on or off.
_DATA = TensorDataset(torch.rand(64, 4, generator=torch.Generator().manual_seed(0)))
_SHUFFLE_GEN = torch.Generator().manual_seed(0)  # seeded once, as in the lesson
_ALL_FIXES = frozenset({"torch", "random", "numpy", "generator"})


def _make_fit(
    fixes=_ALL_FIXES,
    *,
    constant_seed=False,
    seed_after_model=False,
    eval_mode=False,
    eval_after=False,
    shuffle=True,
    mirror=True,
    returns="both",
):
    def fit(seed):
        s = 0 if constant_seed else seed

        def seed_globals():
            if "torch" in fixes:
                torch.manual_seed(s)
            if "random" in fixes:
                random.seed(s)
            if "numpy" in fixes:
                np.random.seed(s)

        if not seed_after_model:
            seed_globals()
        gen = torch.Generator().manual_seed(s) if "generator" in fixes else _SHUFFLE_GEN
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1)
        )
        if seed_after_model:
            seed_globals()
        if eval_mode:
            model.eval()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(_DATA, batch_size=16, shuffle=shuffle, generator=gen)
        losses = []
        for _ in range(3):
            for (x,) in loader:
                noise = torch.from_numpy(np.random.normal(0, 0.1, (len(x), 1))).float()
                y = x.sum(dim=1, keepdim=True) + noise
                if random.random() < 0.5 and mirror:
                    x = x.flip(1)
                loss = F.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        if eval_after:
            model.eval()
            with torch.no_grad():
                model(_DATA.tensors[0])  # an evaluation after training, in eval mode
        return {"both": (model, losses), "model": model, "tensor": (model, torch.tensor(losses))}[returns]

    return fit


def _fit_untrained(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1)
    )
    return model, [1.0] * 12


def _fit_other_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Linear(4, 1), [float(12 - i) for i in range(12)]


RIGHT = {
    "05.1": _make_fit(),
    "05.2": {"model", "optimizer", "scheduler", "position", "loader_epoch_start", "torch_rng", "noise_rng"},
}
WRONG = {
    "05.1": [
        _make_fit(frozenset()),  # the lesson's fit, unchanged
        _make_fit(frozenset({"torch"})),  # torch.manual_seed only
        _make_fit(_ALL_FIXES - {"generator"}),
        _make_fit(_ALL_FIXES - {"numpy"}),
        _make_fit(_ALL_FIXES - {"random"}),
        _make_fit(seed_after_model=True),
        _make_fit(constant_seed=True),
        _make_fit(eval_mode=True),
        _make_fit(shuffle=False),
        _make_fit(mirror=False),
        _make_fit(returns="model"),
        _fit_untrained,
        _fit_other_model,
        lambda seed: (torch.nn.Linear(4, 1), None),
        "fit",
    ],
    "05.2": [
        RIGHT["05.2"] - {"loader_epoch_start"} | {"loader_now"},  # the state at the checkpoint
        RIGHT["05.2"] | {"loader_now"},  # both states of one generator
        RIGHT["05.2"] - {"noise_rng"} | {"numpy_rng"},  # the global generator, not the script's own
        RIGHT["05.2"] | {"numpy_rng", "python_rng"},  # seeded, but never drawn from
        RIGHT["05.2"] - {"scheduler"},
        RIGHT["05.2"] - {"torch_rng"},
        RIGHT["05.2"] - {"position"},
        {"model", "optimizer"},
        set(),
        {"model", "weights"},
        "model",
    ],
}


def _fit_private_generators(seed):
    """Another right answer: private generators for everything but the weights and dropout, which draw
    from torch's global generator inside fork_rng, so that the caller's generators are left alone."""
    rng_py, rng_np = random.Random(seed), np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1)
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(_DATA, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(seed))
        losses = []
        for _ in range(3):
            for (x,) in loader:
                y = x.sum(dim=1, keepdim=True) + torch.from_numpy(rng_np.normal(0, 0.1, (len(x), 1))).float()
                if rng_py.random() < 0.5:
                    x = x.flip(1)
                loss = F.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize(
    "right", [_make_fit(returns="tensor"), _make_fit(eval_after=True), _fit_private_generators]
)
def test_lesson_05_1_accepts_other_right_answers(right):
    verdict = check("05.1", right)
    assert verdict.ok is True, verdict


@pytest.mark.parametrize(
    "wrong, says",
    [
        (_make_fit(eval_mode=True), "dropout"),
        (_make_fit(shuffle=False), "shuffling"),
        (_make_fit(mirror=False), "mirroring"),
    ],
)
def test_lesson_05_1_refuses_removing_the_randomness(wrong, says):
    verdict = check("05.1", wrong)
    assert verdict.ok is False and says in verdict.message, verdict


def test_lesson_05_1_leaves_no_global_forward_hook():
    from torch.nn.modules import module

    hooks = dict(module._global_forward_hooks)
    for answer in (RIGHT["05.1"], _make_fit(frozenset()), lambda seed: 1 / 0):
        check("05.1", answer)
    assert dict(module._global_forward_hooks) == hooks


@pytest.mark.parametrize(
    "missing, says",
    [
        ("torch", "torch's global generator"),
        ("numpy", "NumPy's global generator"),
        ("random", "Python's random"),
        ("generator", "keeps state from one call to the next"),
    ],
)
def test_lesson_05_1_names_the_source_without_the_fix(missing, says):
    verdict = check("05.1", _make_fit(_ALL_FIXES - {missing}))
    assert verdict.ok is False and says in verdict.message, verdict
    assert "first differ at step" in verdict.message, verdict
    for fix in ("manual_seed", "seed_everything", "np.random.seed", "random.seed", "Generator()"):
        assert fix not in verdict.message, (fix, verdict)


@pytest.mark.parametrize("exercise", ["05.1", "05.2"])
def test_lesson_05_checkers_leave_the_global_generators_as_they_were(exercise):
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    before = torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()
    for answer in (RIGHT[exercise], *WRONG[exercise]):
        check(exercise, answer)
        assert torch.equal(torch.get_rng_state(), before[0]), answer
        assert random.getstate() == before[1], answer
        assert np.array_equal(np.random.get_state()[1], before[2]), answer


def test_lesson_05_2_every_part_of_the_answer_is_needed_and_nothing_else():
    """The checker's answer, by simulation: the resumed run matches with it, differs without any one
    part of it or with the loader's state at the checkpoint instead, and the other parts change nothing."""
    from helpers.exercises.lesson05 import CHECKPOINT_PARTS, resumed_run

    right = frozenset(RIGHT["05.2"])
    assert resumed_run(right) is None
    for part in right:
        assert resumed_run(right - {part}) is not None, part
    assert resumed_run(right - {"loader_epoch_start"} | {"loader_now"}) is not None
    for part in set(CHECKPOINT_PARTS) - right - {"loader_now"}:
        assert resumed_run(right | {part}) is None, part
    assert resumed_run(right) is None  # a resume leaves the kept checkpoint as it was


@pytest.mark.parametrize(
    "wrong, says",
    [
        (RIGHT["05.2"] - {"loader_epoch_start"} | {"loader_now"}, "already made epoch 2's draws"),
        (RIGHT["05.2"] - {"noise_rng"} | {"numpy_rng"}, "which generator does noise.normal draw from"),
        (RIGHT["05.2"] | {"python_rng"}, "bitwise identical, but python_rng is not needed"),
    ],
)
def test_lesson_05_2_says_what_goes_wrong_without_naming_the_answer(wrong, says):
    verdict = check("05.2", wrong)
    assert verdict.ok is False and says in verdict.message, verdict
    assert "loader_epoch_start" not in verdict.message and "noise_rng" not in verdict.message, verdict


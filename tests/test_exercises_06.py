"""Lesson 06's exercise checkers accept right answers and reject wrong ones with a hint."""

import inspect
import json
from pathlib import Path

import pytest
import torch

from helpers import check
from helpers.exercises.lesson06 import Smoother

LESSON = Path(__file__).resolve().parents[1] / "notebooks" / "06_moving_models.ipynb"


def _forward_tail(self, z):
    weights = torch.softmax(torch.ones_like(z), dim=-1)
    return self.linear(z * weights)


class _Fixed(Smoother):  # the ramp follows the input
    def forward(self, x):
        z = (x - self.mean) * self.gains[0] + self.eps
        return _forward_tail(self, z) + torch.linspace(0.0, 1.0, z.shape[-1], device=z.device)


class _MovedAfter(Smoother):  # made on the CPU, then moved: slower, but right
    def forward(self, x):
        z = (x - self.mean) * self.gains[0] + self.eps
        return _forward_tail(self, z) + torch.linspace(0.0, 1.0, z.shape[-1]).to(z.device)


class _UnsavedBuffer(Smoother):  # a non-persistent buffer: moved, not saved
    def __init__(self):
        super().__init__()
        self.register_buffer("ramp", torch.linspace(0.0, 1.0, 4), persistent=False)

    def forward(self, x):
        z = (x - self.mean) * self.gains[0] + self.eps
        return _forward_tail(self, z) + self.ramp


class _SavedBuffer(_UnsavedBuffer):  # moves, but the state_dict gains 'ramp'
    def __init__(self):
        super().__init__()
        self.register_buffer("ramp", torch.linspace(0.0, 1.0, 4))


class _Parameter(_UnsavedBuffer):  # moves, but is saved (and trained)
    def __init__(self):
        super().__init__()
        del self.ramp
        self.ramp = torch.nn.Parameter(torch.linspace(0.0, 1.0, 4))


class _PlainAttribute(_UnsavedBuffer):  # the ramp moved to a plain attribute: still left behind
    def __init__(self):
        super().__init__()
        del self.ramp
        self.ramp = torch.linspace(0.0, 1.0, 4)


class _Dropped(Smoother):  # no error any more, but another model
    def forward(self, x):
        return _forward_tail(self, (x - self.mean) * self.gains[0] + self.eps)


class _HardCodedMeta(Smoother):  # fixes meta, breaks the CPU
    def forward(self, x):
        z = (x - self.mean) * self.gains[0] + self.eps
        return _forward_tail(self, z) + torch.linspace(0.0, 1.0, z.shape[-1], device="meta")


class _Float64Ramp(Smoother):  # moves whole, but the output becomes float64
    def forward(self, x):
        z = (x - self.mean) * self.gains[0] + self.eps
        ramp = torch.linspace(0.0, 1.0, z.shape[-1], device=z.device, dtype=torch.float64)
        return _forward_tail(self, z) + ramp


class _InputToCpu(Smoother):  # moves the input back instead: a meta tensor has no data to copy
    def forward(self, x):
        return super().forward(x.cpu())


class _NeedsArguments(_Fixed):
    def __init__(self, n):
        super().__init__(n)


RIGHT = {
    "06.1": "ramp",
    "06.2": _Fixed,
}
WRONG = {
    "06.1": ["weights", "gains", "gains[0]", "eps", "mean", "linear.weight", "z", "x", "smoother", 3,
             ["ramp"]],
    "06.2": [Smoother, _SavedBuffer, _Parameter, _PlainAttribute, _Dropped, _HardCodedMeta, _NeedsArguments,
             _Float64Ramp, _InputToCpu, _Fixed(), torch.nn.Linear, int],
}


@pytest.mark.parametrize("answer", [_Fixed, _MovedAfter, _UnsavedBuffer])
def test_06_2_accepts_each_fix_that_keeps_the_keys_and_the_outputs(answer):
    assert check("06.2", answer).ok is True


@pytest.mark.parametrize("answer", ["ramp", " ramp ", "'ramp'", "self.ramp", "Ramp", "torch.linspace"])
def test_06_1_accepts_the_name_in_its_usual_spellings(answer):
    assert check("06.1", answer).ok is True


@pytest.mark.parametrize("wrong", WRONG["06.1"] + WRONG["06.2"][:7])
def test_06_1_and_06_2_hints_do_not_give_the_name_away(wrong):
    exercise = "06.1" if wrong in WRONG["06.1"] else "06.2"
    message = check(exercise, wrong).message
    assert "linspace" not in message and "device=" not in message
    if exercise == "06.1":
        assert "ramp" not in message


def test_06_2_hint_for_moving_the_input_names_the_copy_not_a_stray_tensor():
    message = check("06.2", _InputToCpu).message
    assert "no data to copy" in message and "still made on the CPU" not in message


def test_06_2_names_the_extra_key_of_a_saved_fix():
    assert "'ramp'" in check("06.2", _SavedBuffer).message
    assert "'ramp'" in check("06.2", _Parameter).message


def test_the_lessons_smoother_is_the_checkers_and_really_fails_as_the_exercise_says():
    cells = json.loads(LESSON.read_text())["cells"]
    shown = ["".join(c["source"]) for c in cells if "".join(c["source"]).startswith("class Smoother(")]
    assert len(shown) == 1 and shown[0].startswith(inspect.getsource(Smoother))
    moved = Smoother().to("meta")
    from helpers.moving import check_one_device, stray_tensors

    assert stray_tensors(moved) == [] and check_one_device(moved) == torch.device("meta")
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta"):
        moved(torch.ones(2, 4, device="meta"))
    # the cell that calls it prints the error in one line, and the line of Smoother's own code that raised it
    calls = [c for c in cells if 'Smoother().to("meta")(torch.ones(2, 4' in "".join(c["source"])]
    printed = ["".join(o["text"]) for c in calls for o in c["outputs"] if o["output_type"] == "stream"]
    assert printed == [
        "RuntimeError: Tensor on device cpu is not on the expected device meta!\n"
        "raised at this line of Smoother.forward: return self.linear(z * weights) + ramp\n"
    ]


class _DrawsInForward(_Fixed):  # right, and it draws from the global generator at every call
    def forward(self, x):
        torch.rand(3)
        return super().forward(x)


def test_06_checkers_leave_the_global_rng_alone():
    state = torch.get_rng_state()
    for answer in [_Fixed, _SavedBuffer, Smoother, _DrawsInForward]:
        check("06.2", answer)
    assert torch.equal(torch.get_rng_state(), state)

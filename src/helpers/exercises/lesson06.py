"""The checkers of lesson 06's exercises (Moving models and tensors between devices).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class Smoother(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.linear = nn.Linear(n, n)                                   # parameters
        self.register_buffer("mean", torch.zeros(n))                    # a buffer
        self.gains = nn.ParameterList([nn.Parameter(torch.ones(n))])    # a tensor in a list
        self.eps = 1e-5                                                 # a plain attribute

    def forward(self, x):
        z = (x - self.mean) * self.gains[0] + self.eps
        weights = torch.softmax(torch.ones_like(z), dim=-1)             # created in forward
        ramp = torch.linspace(0.0, 1.0, z.shape[-1])                    # created in forward
        return self.linear(z * weights) + ramp


Smoother.__doc__ = """The model of lesson 06's exercises 1 and 2, as the lesson shows it (a stray tensor)."""


def _reference() -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """A seeded Smoother's state_dict, an input, and its output on the CPU (global RNG untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(6)  # CPU only: fork_rng restores only that
        model = Smoother()
    with torch.no_grad():  # random, so that a fix that drops or reorders a term changes the output
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
        model.mean.copy_(torch.randn(4, generator=torch.Generator().manual_seed(7)))
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        out = model(x)
    return model.state_dict(), x, out


# The answers to exercise 1 that name a tensor which is not the stray one, with what each misses.
_NOT_STRAY = {
    "linear": "the Linear layer's weight and bias are parameters: .to('meta') moved them (section 6.3).",
    "mean": "mean is a registered buffer: .to('meta') moved it (section 6.3).",
    "gains": "gains is an nn.ParameterList: its tensors are registered parameters, so they moved.",
    "eps": "eps is a Python float, not a tensor: it combines with a tensor on any device.",
    "weights": "weights is built from torch.ones_like(z), and a *_like function puts its result on its "
    "argument's device.",
    "z": "z is computed from x, which the call created on meta, and from tensors that moved.",
    "x": "the input was created on meta in the call itself.",
}


def _ex_06_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the name of the tensor as the code calls it, as a string."
    name = answer.strip().strip("'\"").lower().removeprefix("self.")
    if name == "ramp" or "linspace" in name:
        return (
            True,
            "ramp = torch.linspace(...) is created in forward without a device, so at every call it is made "
            "on the default device, the CPU unless you changed it, whatever device the model was moved to; "
            "nothing holds it, so stray_tensors and check_one_device cannot see it: only the failing line "
            "points at it.",
        )
    for key, why in _NOT_STRAY.items():
        if name == key or name.startswith(key + ".") or name.startswith(key + "["):
            return False, why + " Of the tensors on the failing line, which one can be on the CPU?"
    return (
        False,
        "read the line of Smoother's own code that the cell printed: that operation raised, and the message "
        "says one of its operands is on the CPU. Where did each tensor on that line come from?",
    )


def _ex_06_2(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, type) and issubclass(answer, nn.Module)):
        return False, "answer with a subclass of torch.nn.Module (the class itself, not an instance)."
    with torch.random.fork_rng(devices=[]):  # the learner's __init__ and forward may draw random numbers
        return _check_fixed_smoother(answer)


def _check_fixed_smoother(answer: type[nn.Module]) -> tuple[bool, str]:
    state, x, expected = _reference()
    try:
        model = answer()
    except Exception as exc:  # the learner's code: report any failure as a hint
        return False, f"building it with no arguments failed: {type(exc).__name__}: {exc}"
    try:
        keys = list(model.state_dict())
    except Exception as exc:
        return False, f"calling its state_dict() failed: {type(exc).__name__}: {exc}"
    if sorted(keys) != sorted(state):
        extra, missing = sorted(set(keys) - set(state)), sorted(set(state) - set(keys))
        return (
            False,
            f"its state_dict has the keys {sorted(keys)} instead of {sorted(state)} "
            f"(new: {extra}, gone: {missing}): "
            "a checkpoint saved from the old class would no longer load strictly. Fix where the tensor "
            "is made, or register it so that it is not saved (section 6.3).",
        )
    try:
        model.load_state_dict(state)
        with torch.no_grad():
            out = model(x)
    except Exception as exc:
        return (
            False,
            f"loading the original weights and calling it on the CPU failed: {type(exc).__name__}: {exc}",
        )
    if not isinstance(out, torch.Tensor) or out.shape != expected.shape or out.is_meta:
        return False, "on the CPU it must return a tensor of the same shape as Smoother's."
    if out.dtype != expected.dtype:
        return (
            False,
            f"on the CPU its output is {out.dtype}, Smoother's is {expected.dtype}: the fix must change "
            "where a tensor is made, not what the model computes.",
        )
    if not torch.allclose(out.detach().float(), expected, rtol=1e-5, atol=1e-6):
        return (
            False,
            "with Smoother's weights, its output on the CPU is not Smoother's: the fix must change where a "
            "tensor is made, not what the model computes.",
        )
    try:
        model.to("meta")
        out = model(torch.ones(2, 4, device="meta"))
    except Exception as exc:
        if isinstance(exc, NotImplementedError) and "meta tensor" in str(exc):
            return (
                False,
                f"after .to('meta'), calling it on a meta input failed: {type(exc).__name__}: {exc}. "
                "forward copies a tensor off the model's device, and a meta tensor has no data to copy "
                "(on a GPU, the copy would undo the move): keep the computation where the model and its "
                "input are.",
            )
        return (
            False,
            f"after .to('meta'), calling it on a meta input failed: {type(exc).__name__}: {exc}. "
            "Some tensor is still made on the CPU: read the traceback's last line in forward.",
        )
    if not isinstance(out, torch.Tensor) or not out.is_meta or out.shape != (2, 4):
        return False, "after .to('meta'), a meta input of shape (2, 4) must give a meta output of that shape."
    return (
        True,
        "the ramp now follows the input's device (torch.linspace(..., device=z.device)), or is a buffer "
        "registered with persistent=False, so it moves and is not saved; the state_dict kept its keys, "
        "and checkpoints saved before the fix still load.",
    )


CHECKERS = {
    "06.1": ("the name of the stray tensor, as a string", _ex_06_1),
    "06.2": ("a fixed Smoother class: it moves whole, keeps its state_dict keys and its outputs", _ex_06_2),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "06.1": "decide",
    "06.2": "code",
}

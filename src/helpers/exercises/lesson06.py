"""The checkers of lesson 06's exercises (Moving models and tensors between devices): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import torch


def _ex_06_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer True or False."
    if answer is not True:
        return (
            False,
            "Tensor.to copies only when the device or dtype changes: run the line and test with `is`.",
        )
    return (
        True,
        "nothing changes, so Tensor.to returns the tensor itself; in-place edits show through both names.",
    )


def _ex_06_2(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, type) and issubclass(answer, torch.nn.Module)):
        return False, "answer with a subclass of torch.nn.Module (the class, not an instance)."
    try:
        module = answer().to("meta")
    except Exception as exc:  # the learner's code: report any failure as a hint
        return (
            False,
            f"building it with no arguments and moving it to 'meta' failed: {type(exc).__name__}: {exc}",
        )
    offset = getattr(module, "offset", None)
    if not isinstance(offset, torch.Tensor) or offset.shape != (3,):
        return False, "the module needs a tensor attribute `offset` of shape (3,)."
    if offset.device.type != "meta":
        return False, "offset did not move with the module: a plain attribute is invisible to .to()."
    if "offset" in module.state_dict():
        return False, "offset moves now, but it is saved in the state_dict: use persistent=False."
    return True, "self.register_buffer('offset', torch.zeros(3), persistent=False): moved, not saved."


def _ex_06_3(answer: object) -> tuple[bool, str]:
    steps = {"load weights", "move model", "build optimizer"}
    if not (isinstance(answer, (list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a list of the three steps: {sorted(steps)}."
    given = [a.strip().lower() for a in answer]
    if sorted(given) != sorted(steps):
        return False, f"use each of these once: {sorted(steps)}."
    if given[-1] != "build optimizer":
        return (
            False,
            "the optimizer's state is created on its parameters' device: what must be true before that?",
        )
    return (
        True,
        "the optimizer comes last (loading before or after the move both work, since loading copies in).",
    )


def _ex_06_4(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer with True or False (a bool, not a string or a number)."
    if not answer:
        return (
            False,
            "_apply assigns fn(buf) to every buffer, but is that a new tensor here? "
            "Look at num_batches_tracked's dtype and at which tensors .double() converts.",
        )
    return (
        True,
        "num_batches_tracked is int64 and .double() converts only floating-point tensors, "
        "so fn(buf) returns the buffer itself and `n` still names it.",
    )


CHECKERS = {
    "06.1": ("True or False", _ex_06_1),
    "06.2": ("a module class whose offset moves but is not saved", _ex_06_2),
    "06.3": ("the three steps in order", _ex_06_3),
    "06.4": ("True or False", _ex_06_4),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "06.1": "recall",
    "06.2": "code",
    "06.3": "recall",
    "06.4": "work",
}

"""The checkers of lesson 13's exercises (Myths and facts): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import torch


def _ex_13_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str) or answer.strip().lower() not in ("matmul", "conv", "convolution"):
        return False, 'answer "matmul" or "conv".'
    if answer.strip().lower() == "matmul":
        return False, "section 13.2: which TF32 setting is on by default, cuda.matmul's or cudnn.conv's?"
    return True, (
        "a convolution: torch.backends.cudnn.conv.fp32_precision is 'tf32' by default (cudnn.allow_tf32 "
        "in the older API), while float32 matrix products keep float32 unless TF32 is switched on."
    )


def _ex_13_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the argument's name, as a string."
    if answer.strip() == "weights_only":
        return False, "weights_only decides what may be unpickled, not where storages go."
    if answer.strip() != "map_location":
        return False, "section 13.12 (and lesson 07): the argument that redirects storages to another device."
    return True, "torch.load(path, map_location='cpu')."


def _ex_13_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer True or False."
    if answer:
        return (
            False,
            "deterministic mode fixes each kernel's order; "
            "does the thread count change the order (lesson 04)?",
        )
    return True, "no guarantee: the thread count decides how the sum is split, deterministic mode or not."


CHECKERS = {
    "13.1": ('"matmul" or "conv"', _ex_13_1),
    "13.2": ("the name of torch.load's argument, as a string", _ex_13_2),
    "13.3": ("True or False", _ex_13_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "13.1": "recall",
    "13.2": "recall",
    "13.3": "recall",
}

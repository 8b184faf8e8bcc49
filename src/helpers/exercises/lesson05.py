"""The checkers of lesson 05's exercises (Seeds and random number generators): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import torch

from helpers.exercises._common import equal


def _ex_05_1(answer: object) -> tuple[bool, str]:
    choices = {"torch cpu", "torch cuda", "python random", "numpy"}
    if not (isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a set of strings chosen from {sorted(choices)}."
    given = {a.strip().lower() for a in answer}
    if not given <= choices:
        return False, f"use only these names: {sorted(choices)}."
    if given & {"python random", "numpy"}:
        return False, "section 5.1 draws from random and NumPy after torch.manual_seed: did they repeat?"
    if given != {"torch cpu", "torch cuda"}:
        return (
            False,
            "torch.manual_seed reaches more than one of PyTorch's generators: read section 5.1 again.",
        )
    return True, "the CPU generator and every CUDA device's; random and NumPy need their own seeds."


def _ex_05_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, torch.Generator):
        return False, "answer with a torch.Generator object, for example torch.Generator()."
    if answer.device.type != "cpu":
        return False, "make it a CPU generator (the default device)."
    if answer.initial_seed() != 42:
        return False, f"its seed is {answer.initial_seed()}: call .manual_seed(42) on it."
    if not torch.equal(answer.get_state(), torch.Generator().manual_seed(42).get_state()):
        return False, "it is seeded with 42 but something has already drawn from it."
    return True, "torch.Generator().manual_seed(42): pass it as generator= to any random function."


def _ex_05_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool) or not 0 <= answer <= 4:
        return False, "answer with a column number from 0 to 4."
    if answer == 0:
        return False, "column 0 is the item's index, which is not random at all."
    if answer != 4:
        return (
            False,
            "the DataLoader seeds that source in every worker; "
            "which generator did the dataset create itself?",
        )
    return True, "column 4: the dataset's own numpy Generator, copied into every worker in the same state."


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
    "05.1": ("a set of the generators torch.manual_seed seeds", _ex_05_1),
    "05.2": ("a torch.Generator seeded with 42", _ex_05_2),
    "05.3": ("the column that repeats across DataLoader workers", _ex_05_3),
    "05.4": ("a set of the draws computed with other log, sin and cos without AVX2", _ex_05_4),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "05.1": "recall",
    "05.2": "code",
    "05.3": "recall",
    "05.4": "recall",
}

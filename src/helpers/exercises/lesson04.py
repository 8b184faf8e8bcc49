"""The checkers of lesson 04's exercises (Deterministic algorithms): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import math

import torch


def _ex_04_1(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str):
        return False, "answer with the class itself, without quotes (for example ValueError)."
    if not (isinstance(answer, type) and issubclass(answer, BaseException)):
        return False, "answer with an exception class, such as ValueError."
    if answer is not RuntimeError:
        return (
            False,
            "run Tensor.put_ under deterministic mode (section 4.4) and look at the exception's type.",
        )
    return True, "RuntimeError, whose message says '... does not have a deterministic implementation'."


def _ex_04_2(answer: object) -> tuple[bool, str]:
    import numbers

    if isinstance(answer, torch.Tensor) and answer.numel() == 1 and not answer.is_meta:
        answer = answer.item()  # a one-element tensor, such as torch.empty(1), stands for its value
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return False, "answer with a float (float('nan') and float('inf') are floats too)."
    try:
        value = float(answer)  # any real number: int, float, numpy.float32, Fraction
    except (OverflowError, ValueError, TypeError):
        return False, "that number does not fit in a float; look at torch.empty(4) in section 4.3."
    if not math.isnan(value):
        return False, "look at torch.empty(4) inside deterministic_mode() in section 4.3."
    return True, "NaN: reading it by mistake poisons every result, so the mistake shows instead of varying."


def _ex_04_3(answer: object) -> tuple[bool, str]:
    if not (
        isinstance(answer, (tuple, list)) and len(answer) == 2 and all(isinstance(a, str) for a in answer)
    ):
        return False, "answer with a tuple of two strings: (name, value)."
    name, value = answer[0].strip(), answer[1].strip()
    if name != "CUBLAS_WORKSPACE_CONFIG":
        return False, "the variable is named after the library it configures, in capitals (section 4.3)."
    if value in ("4096:8", "16:8"):
        return False, "the leading colon is part of the value (the check compares whole strings)."
    if value == ":16:8":
        return False, "':16:8' passes the check too, with less memory; the message names another value first."
    if value != ":4096:8":
        return False, (
            "the value is ':<size in KiB>:<number of buffers>'; which value does the message name first?"
        )
    return True, (
        "CUBLAS_WORKSPACE_CONFIG=:4096:8, in the environment before Python starts: those releases read it "
        "once, at the first CUDA matrix product; pull request #161749 removed the check (PyTorch 2.10 and "
        "later have none)."
    )


def _ex_04_4(answer: object) -> tuple[bool, str]:
    choices = {"one thread", "float64", "reseed"}
    if not (isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a set of strings chosen from {sorted(choices)}."
    given = {a.strip().lower() for a in answer}
    if not given <= choices:
        return False, f"use only these names: {sorted(choices)}."
    if "reseed" in given:
        return False, "the inputs are already the same tensors in every run: what would a seed change?"
    if given != {"one thread", "float64"}:
        return False, "section 4.1 names every condition under which the kernel adds atomically."
    return True, (
        "either one takes ATen's serial loop (atomics only for float32, on more than one thread, "
        "with 32,768 entries or more)."
    )


CHECKERS = {
    "04.1": ("the exception class raised where no deterministic implementation exists", _ex_04_1),
    "04.2": ("the float that fills torch.empty under deterministic mode", _ex_04_2),
    "04.3": ("a tuple (name, value) for deterministic cuBLAS", _ex_04_3),
    "04.4": ("a set of the changes that make the CPU sum repeat itself", _ex_04_4),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "04.1": "recall",
    "04.2": "recall",
    "04.3": "recall",
    "04.4": "recall",
}

"""The checkers of lesson 09's exercises (Fast CPU inference): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import torch

from helpers.exercises._common import is_number


def _ex_09_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of threads)."
    if answer == 4:
        return False, "both variables are set: which one takes precedence (section 9.2)?"
    if answer != 2:
        return False, "PyTorch reads the variables at start-up: look at the precedence table in section 9.2."
    return True, "2: MKL_NUM_THREADS takes precedence over OMP_NUM_THREADS; set_num_threads beats both."


def _ex_09_2(answer: object) -> tuple[bool, str]:
    if not is_number(answer):
        return False, "answer with a number."
    if answer == 0.25:
        return (
            False,
            "that is the size of the result relative to float32; "
            "the question asks by what factor it shrinks.",
        )
    if answer != 4:
        return False, "float32 takes 4 bytes per value, int8 one byte."
    return True, "4x: one byte per weight instead of four."


def _ex_09_3(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str):
        return False, "answer with the function itself, without quotes."
    if answer is torch.no_grad:
        return (
            False,
            "no_grad stops recording, but its results can enter autograd later; which one forbids that?",
        )
    if answer is not torch.inference_mode:
        return False, "section 9.3 compares two context managers: the answer is the stricter one."
    return (
        True,
        "torch.inference_mode: tensors made inside it are inference tensors, cheaper and autograd-proof.",
    )


def _ex_09_4(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of units)."
    if answer in (32640, 32512, -32640):
        return False, "that is one product; the instruction adds two of them before it stores the sum."
    if answer == -65280:
        return False, "the question asks for the magnitude: answer with a positive number."
    if answer != 65280:
        return False, "take the largest unsigned byte (255) and the largest magnitude of a signed byte (128)."
    return True, "65280 = 2 x 255 x 128, about twice the 32767 a signed 16-bit integer holds: it saturates."


def _ex_09_5(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of units)."
    if answer in (12224, 12033, -12224):
        return False, "that is one product; the instruction adds two of them before it stores the sum."
    if answer in (8192, 8064, 7938):
        return False, "torchao adds 128 to every activation first: which bytes can they become?"
    if answer == 24066:
        return False, "the weights reach -64 as well as 63: which gives the larger magnitude?"
    if answer == -24448:
        return False, "the question asks for the magnitude: answer with a positive number."
    if answer != 24448:
        return False, "shift -64...63 by 128 for the largest byte, and take the largest weight magnitude."
    return True, "24448 = 2 x 191 x 64, below 32767: the 16-bit sum cannot saturate."


CHECKERS = {
    "09.1": ("the number of intra-op threads", _ex_09_1),
    "09.2": ("the factor by which int8 shrinks float32 weights", _ex_09_2),
    "09.3": ("the context manager that also forbids later autograd use", _ex_09_3),
    "09.4": ("the largest magnitude of a pair of u8 x s8 products", _ex_09_4),
    "09.5": ("the largest magnitude of a pair of products with reduce_range", _ex_09_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "09.1": "recall",
    "09.2": "recall",
    "09.3": "recall",
    "09.4": "work",
    "09.5": "work",
}

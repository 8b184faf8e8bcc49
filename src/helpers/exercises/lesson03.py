"""The checkers of lesson 03's exercises (Reduced precision): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import math

import torch

from helpers.exercises._common import as_float, is_number


def _ex_03_1(answer: object) -> tuple[bool, str]:
    if not is_number(answer):
        return False, "answer with a number."
    if answer == 257:
        return False, "bfloat16 keeps 8 significant bits, and 257 = 0b100000001 needs 9."
    if answer == 258:
        return False, "257 lies exactly halfway between 256 and 258: which way do ties go in IEEE 754?"
    if answer != 256:
        return False, "round 257 to 8 significant bits (7 stored): the neighbours are 256 and 258."
    return True, "257 is a tie between 256 and 258, and ties go to the even mantissa: 256."


def _ex_03_2(answer: object) -> tuple[bool, str]:
    if not is_number(answer):
        return False, "answer with a number."
    if answer == 65535 or answer == 65536:
        return False, (
            "float16's exponent tops out at 2^15 and it keeps 11 significant bits: (2 - 2^-10) * 2^15."
        )
    if answer != 65504:
        return False, "look at torch.finfo(torch.float16).max, then explain it with the bit layout."
    return True, "(2 - 2^-10) * 2^15 = 65504: anything from 65520 up rounds to inf."


def _ex_03_3(answer: object) -> tuple[bool, str]:
    if not is_number(answer):
        return False, "answer with a positive number."
    answer = as_float(answer)
    if not math.isfinite(answer) or answer <= 0:
        return False, "answer with a positive, finite number."
    if abs(answer - 2.0**-10) <= 1e-12:
        return False, (
            "that is the gap between 1 and the next TF32 value (epsilon); the unit roundoff is half of it."
        )
    if abs(answer / 2.0**-11 - 1) > 1e-3:
        return False, (
            "TF32 stores 10 mantissa bits: the gap above 1.0 is 2^-10, and rounding to nearest "
            "errs by at most half a gap."
        )
    return True, "u = 2^-11 = 4.88e-4, the same as float16 and 8192 times float32's."


def _ex_03_4(answer: object) -> tuple[bool, str]:
    import numbers

    import numpy as np

    hint = "answer with a positive number: the relative error as a fraction (0.05 for 5%)."
    if isinstance(answer, (bool, str)):
        return False, hint
    if (
        (isinstance(answer, numbers.Complex) and not isinstance(answer, numbers.Real))
        or (isinstance(answer, torch.Tensor) and answer.is_complex())
        or (isinstance(answer, np.ndarray) and np.iscomplexobj(answer))
    ):  # float() would drop the imaginary part of a NumPy complex
        return False, "a relative error is a real number; " + hint
    try:
        value = float(answer)
    except (TypeError, ValueError, OverflowError, RuntimeError):  # RuntimeError: a tensor of many values
        return False, hint
    if not math.isfinite(value) or value <= 0:
        return False, hint
    allowed = (1e-5 + 1.3e-6 * 1e-4) / 1e-4  # (atol + rtol * |expected|) / |expected|, float32's defaults
    if abs(value / (100 * allowed) - 1) <= 0.01:
        return False, "that is a percentage; give the fraction (0.05 for 5%)."
    if abs(value / 1.3e-6 - 1) <= 0.01:
        return False, "that is rtol alone; at |expected| = 1e-4 the fixed atol = 1e-5 allows far more."
    if abs(value / 1e-5 - 1) <= 0.01:
        return False, "that is atol, an absolute error; divide what assert_close allows by |expected| = 1e-4."
    if abs(value / allowed - 1) > 0.01:
        return False, (
            "assert_close allows |actual - expected| <= atol + rtol * |expected|; with float32's defaults "
            "(rtol 1.3e-6, atol 1e-5), divide that by |expected| = 1e-4."
        )
    return True, (
        "(1e-5 + 1.3e-6 * 1e-4) / 1e-4 = 0.1000013: at |expected| = 1e-4 float32's defaults accept a 10% "
        "error, because below atol / rtol = 7.7 the fixed atol decides."
    )


CHECKERS = {
    "03.1": ("the value of 257 rounded to bfloat16", _ex_03_1),
    "03.2": ("the largest finite float16 value", _ex_03_2),
    "03.3": ("the unit roundoff of TF32 (a float)", _ex_03_3),
    "03.4": ("the relative error float32's defaults accept at |expected| = 1e-4 (a fraction)", _ex_03_4),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "03.1": "work",
    "03.2": "recall",
    "03.3": "work",
    "03.4": "work",
}

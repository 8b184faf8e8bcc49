"""The checkers of lesson 01's exercises (Floating-point numbers are not associative): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import math

import torch

from helpers.exercises._common import as_number, f32


def _ex_01_f32(value: int | float) -> torch.Tensor:
    """``value`` rounded once to float32 (an int of any size too: beyond float32's range it becomes inf)."""
    from helpers.floats import round_to_nearest

    return f32(round_to_nearest(value, torch.float32))


def _ex_01_triple(answer: object) -> tuple[list[int | float] | None, str]:
    """Three numbers from a tuple or list, or None and what is wrong with the answer."""
    if not (isinstance(answer, (tuple, list)) and len(answer) == 3):
        return None, "answer with a tuple of three numbers (a, b, c)."
    values = [as_number(v) for v in answer]
    if any(v is None for v in values):
        return None, "answer with a tuple of three numbers (Python numbers or one-element tensors)."
    return values, ""


def _ex_01_finite_f32(answer: object, why: str = "") -> tuple[list[torch.Tensor] | None, str]:
    """The three numbers of an answer as float32 scalars, or None and what is wrong with the answer."""
    values, problem = _ex_01_triple(answer)
    if values is None:
        return None, problem
    rounded = [_ex_01_f32(v) for v in values]
    if not all(bool(torch.isfinite(v)) for v in rounded):
        return None, f"use finite float32 values{why}."
    return rounded, ""


def _ex_01_1(answer: object) -> tuple[bool, str]:
    n = as_number(answer)
    if not isinstance(n, int) or n <= 0:
        return False, "answer with a positive Python int."
    if n > 2**24:
        shown = str(n) if n < 10**20 else f"that {len(str(n))}-digit number"
        return False, f"{shown} + 1 == {shown} in float32 indeed, but a smaller integer already does it."
    f = f32(float(n))  # exact: every positive int up to 2**24 is a float32
    if bool(f + 1 != f):
        return False, (
            f"float32 still tells {n} + 1 from {n}: the gap between neighbouring "
            f"floats there is {float(torch.nextafter(f, f32(float('inf'))) - f):g}. Look for the "
            "first integer where that gap reaches 2 (think of the 24-bit significand)."
        )
    return True, "2**24 = 16777216: from there on the gap between float32 neighbours is 2."


def _ex_01_2(answer: object) -> tuple[bool, str]:
    values, problem = _ex_01_finite_f32(answer, " (inf and NaN make the point for the wrong reason)")
    if values is None:
        return False, problem
    a, b, c = values
    if sorted(float(v) for v in (a, b, c)) == sorted([1e8, -1e8, 1.0]):
        return False, (
            "those are section 1.1's numbers (in some order); find three of your own. Try 1.0 and two "
            "values small enough that 1.0 + each one rounds back to 1.0."
        )
    left, right = (a + b) + c, a + (b + c)
    if bool(torch.isnan(left)) or bool(torch.isnan(right)):
        return False, "one grouping gives NaN (inf - inf); pick values that stay finite."
    if bool(left == right):
        return False, (
            f"both groupings give {float(left)!r}. Try one large value and two small ones whose "
            "sum survives only when they are added to each other first."
        )
    return True, f"(a+b)+c = {float(left)!r} but a+(b+c) = {float(right)!r} in float32."


def _ex_01_3(answer: object) -> tuple[bool, str]:
    value = as_number(answer)
    if value is None:
        return False, "answer with a Python float."
    if value == 2.0**-14:  # an exact comparison, also for ints of any size
        return True, "1000 lies in [512, 1024) = [2^9, 2^10), so its ULP is 2^(9-23) = 2^-14."
    return False, (
        "the ULP of a float32 in [2^e, 2^(e+1)) is 2^(e-23), a power of two; "
        "find e for 1000, or check with helpers.ulp(torch.tensor(1000.0))."
    )


def _ex_01_4(answer: object) -> tuple[bool, str]:
    choices = ("sequential", "pairwise", "kahan")
    if not isinstance(answer, str) or answer.strip().lower() not in choices:
        return False, f"answer with one of {', '.join(repr(c) for c in choices)}."
    if answer.strip().lower() == "kahan":
        return True, "Kahan's bound, (2u + O(n u^2)) * sum|x_i|, does not grow with n to first order."
    return False, (
        "that bound grows with n (n - 1 for sequential, log2 n for pairwise); "
        "which method carries the lost low-order bits along?"
    )


def _ex_01_5(answer: object) -> tuple[bool, str]:
    from fractions import Fraction

    from helpers.floats import round_to_nearest

    values, problem = _ex_01_finite_f32(answer)
    if values is None:
        return False, problem
    a, b, c = values
    if [float(v) for v in (a, b, c)] == [1 + 2**-12, 1 + 2**-12, -(1 + 2**-11)]:
        return False, (
            "that is section 1.7's example; find your own a, b, c. Section 1.7 explains which bits the "
            "product's rounding drops."
        )
    separate = (a * b + c).item()  # two roundings: the product, then the sum
    fused = round_to_nearest(Fraction(a.item()) * Fraction(b.item()) + Fraction(c.item()), torch.float32)
    if separate == fused:
        if math.isinf(fused):
            return False, "both overflow to inf; pick values whose exact a*b + c fits in float32's range."
        return False, (
            f"both give {separate!r}: rounding the product did not change the final result. Pick a and b "
            "whose exact product needs more than 24 significant bits, and c close to -(a * b), so that the "
            "bits the product's rounding drops decide the answer (section 1.7)."
        )
    if math.isinf(separate) or math.isinf(fused):
        return True, (
            f"a*b + c rounded twice gives {separate!r}, rounded once gives {fused!r}: one overflows where "
            "the other does not. A fused multiply-add has no rounded product in between that could overflow."
        )
    return True, (
        f"a*b + c rounded twice gives {separate!r}; rounded once, as a fused multiply-add does, "
        f"it gives {fused!r}."
    )


CHECKERS = {
    "01.1": ("the smallest positive integer n with float32(n) + 1 == float32(n)", _ex_01_1),
    "01.2": ("three float32 numbers (a, b, c) with (a + b) + c != a + (b + c)", _ex_01_2),
    "01.3": ("the float32 ULP of 1000.0", _ex_01_3),
    "01.4": ("the summation order whose error bound does not grow with n", _ex_01_4),
    "01.5": ("three float32 numbers (a, b, c) whose fused a*b + c differs from a * b + c", _ex_01_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "01.1": "recall",
    "01.2": "work",
    "01.3": "recall",
    "01.4": "recall",
    "01.5": "work",
}

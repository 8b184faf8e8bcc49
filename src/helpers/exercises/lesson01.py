"""The checkers of lesson 01's exercises (Floating-point numbers are not associative).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import math

import torch

from helpers.exercises._common import as_float, as_number, f32


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


#: Exercise 01.1: a float32 running total that starts at 2**24 and adds 3.0 this many times.
COUNTER_STEPS = 1000


def counter_increase(steps: int = COUNTER_STEPS, step: float = 3.0) -> float:
    """How much a float32 running total that starts at 2**24 grows when ``step`` is added ``steps`` times.

    Each addition is rounded to float32, so the total can grow by more or less than ``steps * step``.
    Exercise 01.1's truth, computed here by running the loop. Introduced in lesson 01.
    """
    total = f32(2.0**24)
    for _ in range(steps):
        total = total + step  # one float32 addition, rounded
    return (total - 2.0**24).item()  # exact: both are float32 values of one binade


def _ex_01_1(answer: object) -> tuple[bool, str]:
    guess = as_number(answer)
    if guess is None or not math.isfinite(as_float(guess)):
        return False, "answer with a number: your prediction of total - 2**24 after the loop."
    truth = counter_increase()
    if guess == truth:
        return True, (
            f"the total grew by {truth:g}, not {3 * COUNTER_STEPS}. From 2^24 to 2^25 float32 values are 2 "
            "apart, so each 2^24 + 4k + 3 is a tie between two neighbours, and ties go to the even "
            "significand, the upper one: every addition of 3 adds 4."
        )
    if guess == 3 * COUNTER_STEPS:
        return False, (
            "that is the exact arithmetic; float32 rounds every addition. From 2^24 to 2^25 the gap between "
            "float32 values is 2 (section 1.2), so 2^24 + 3 is not a float32. Work out by hand where the "
            "first addition lands, with section 1.2's rule for a result halfway between two floats, then "
            "the second from there."
        )
    if guess == 0:
        return False, (
            "a total that never moves is what adding 1.0 at 2^24 does; 3.0 is larger than the gap of 2. Run "
            "the next cell to see where each addition lands."
        )
    return False, (
        "not what float32 does here. From 2^24 to 2^25 the gap between float32 values is 2, and a result "
        "exactly halfway between two of them goes to the one with the even significand (section 1.2). Work "
        "out the first two additions by hand, or run the next cell to see the first few steps."
    )


def _ex_01_2(answer: object) -> tuple[bool, str]:
    values, problem = _ex_01_finite_f32(answer, " (inf and NaN make the point for the wrong reason)")
    if values is None:
        return False, problem
    a, b, c = values
    left, right = (a + b) + c, a + (b + c)
    if bool(torch.isnan(left)) or bool(torch.isnan(right)):
        return False, "one grouping gives NaN (inf - inf); pick values that stay finite."
    if bool(left == right):
        return False, (
            f"both groupings give {float(left)!r}. Try one large value and two small ones whose sum survives "
            "only when they are added to each other first."
        )
    if sorted(float(v) for v in (a, b, c)) == sorted([1e8, -1e8, 1.0]):
        same = [float(v) for v in (a, b, c)] == [1e8, -1e8, 1.0]
        opening = (
            "those are section 1.1's own three numbers. Whichever "
            if same
            else "those are section 1.1's three numbers, reordered. A new order is not a new example: "
            "whichever "
        )
        return False, opening + (
            "way you arrange them, a grouping that differs adds 1.0 to 1e8 or -1e8 first, where the gap "
            "between float32 values is 8, and loses it, just as in section 1.1. The exercise asks for "
            "numbers of your own. Section 1.3 says why grouping matters: look for values that are lost when "
            "each meets a larger one alone, but not when they meet each other first."
        )
    return True, f"(a+b)+c = {float(left)!r} but a+(b+c) = {float(right)!r} in float32."


def _ex_01_3(answer: object) -> tuple[bool, str]:
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
        f"a*b + c rounded twice gives {separate!r}; rounded once, as a fused multiply-add does, it gives "
        f"{fused!r}."
    )


CHECKERS = {
    "01.1": ("your prediction of total - 2**24 after the loop (a number)", _ex_01_1),
    "01.2": ("three float32 numbers (a, b, c) with (a + b) + c != a + (b + c)", _ex_01_2),
    "01.3": ("three float32 numbers (a, b, c) whose fused a*b + c differs from a * b + c", _ex_01_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "01.1": "predict",
    "01.2": "work",
    "01.3": "work",
}

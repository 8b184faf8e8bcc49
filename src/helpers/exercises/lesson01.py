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
    choices = ("sequential", "pairwise", "kahan")
    if not isinstance(answer, str) or answer.strip().lower() not in choices:
        return False, f"answer with one of {', '.join(repr(c) for c in choices)}."
    if answer.strip().lower() == "kahan":
        return True, (
            "Kahan's bound, (2u + O(n u^2)) * sum|x_i| (Higham, section 4.3), does not grow with n to first "
            "order; only its second-order term, O(n u^2), does."
        )
    return False, (
        "that bound grows with n (n - 1 for sequential, log2 n for pairwise); which method carries the lost "
        "low-order bits along?"
    )


def _ex_01_4(answer: object) -> tuple[bool, str]:
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


def _ex_01_5_cases() -> list[float]:
    """The float32 values 01.5's checker tries: normal, powers of two, negative, subnormal, zero, largest."""
    from helpers.floats import random_float32

    fi = torch.finfo(torch.float32)
    named = [1000.0, 3.0, 0.1, 1e8, 2.0**24 - 1, 1.5 * 2.0**-126, 1.3 * 2.0**-100]  # not powers of two
    named += [1.0, 2.0**24, 2.0**-126, 2.0**-20, 2.0**100]  # powers of two
    named += [-1000.0, -1.0, -(2.0**-149), -0.1]  # negative
    named += [0.0, -0.0, 2.0**-149, 3 * 2.0**-149, 2.0**-127, 1e-40, 2.0**-126 - 2.0**-149]  # zero, subnormal
    named += [fi.max, 2.0**127, 1.5 * 2.0**127]  # the top binade
    g = torch.Generator().manual_seed(1)
    spread = random_float32((40,), exponents=(-126, 127), generator=g).tolist()
    return [_ex_01_f32(v).item() for v in named] + spread


def _ex_01_5_truth(x: float) -> float:
    """The gap between |x| and the next larger float32 (at float32's largest value, the gap below it)."""
    a = f32(abs(x))
    if a.item() == torch.finfo(torch.float32).max:
        return (a - torch.nextafter(a, f32(0.0))).item()
    return (torch.nextafter(a, f32(math.inf)) - a).item()


def _ex_01_5_key(x: float) -> tuple[float, float]:
    """A dictionary key that tells -0.0 from 0.0."""
    return (x, math.copysign(1.0, x))


def _ex_01_5(answer: object) -> tuple[bool, str]:
    from helpers._validate import describe

    if not callable(answer):
        return False, "answer with a function ulp32(x) that takes a float and returns a float."
    cases = _ex_01_5_cases()
    # keyed by value and sign: 0.0 == -0.0, so a dict keyed by the float alone would keep one of them
    got: dict[tuple[float, float], float] = {}
    for x in cases:
        try:
            returned = answer(x)
        except Exception as exc:  # the learner's function: report any failure as a hint
            return False, f"calling ulp32({x!r}) failed: {type(exc).__name__}: {exc}"
        value = as_number(returned)
        if value is None:
            return False, f"ulp32({x!r}) must return a number; it returned {describe(returned)}."
        got[_ex_01_5_key(x)] = as_float(value)

    def at(x: float) -> float:
        return got[_ex_01_5_key(x)]

    wrong = [x for x in cases if at(x) != _ex_01_5_truth(x)]
    if not wrong:
        return True, (
            "right at every value tried: powers of two, negatives, zero and subnormals (where the gap stays "
            "2^-149) and float32's largest value."
        )
    eps = 2.0**-23
    normal = [x for x in cases if 2.0**-126 <= abs(x) <= torch.finfo(torch.float32).max]
    powers = [x for x in normal if x > 2.0**-126 and math.frexp(x)[0] == 0.5]  # 2^-126: same gap both sides
    others = [x for x in normal if x > 0 and x not in powers and x != torch.finfo(torch.float32).max]
    if all(math.isclose(at(x), eps * x, rel_tol=1e-6) for x in others[:5]):
        return False, (
            f"ulp32(1000.0) returned {at(1000.0):.6g}, eps * 1000. That is right only at powers of two: "
            "between 2^e and 2^(e+1) float32 values are evenly spaced, so every x in that interval has the "
            "same gap."
        )
    below = all(at(x) == _ex_01_5_truth(x) / 2 for x in powers)
    if below and all(at(x) == _ex_01_5_truth(x) for x in others):
        return False, (
            f"ulp32({powers[0]!r}) returned {at(powers[0])!r}: at a power of two you measured the gap below "
            "it. Below 2^e float32 values are twice as dense as above it; the gap asked for is the one "
            "above |x|."
        )
    if all(math.isclose(at(x), _ex_01_5_truth(x) * 2.0**-29, rel_tol=1e-9) for x in others[:5]):
        return False, (
            "your gaps are 2^29 times too small: that is the spacing of float64 (53 significant bits), the "
            "type of a Python float. Measure it in float32 (24 significant bits)."
        )
    first = wrong[0]
    mirror = -first
    mirror_right = _ex_01_5_key(mirror) in got and at(mirror) == _ex_01_5_truth(mirror)
    if math.copysign(1.0, first) < 0 and mirror_right:
        return False, (
            f"ulp32({first!r}) returned {at(first)!r}, but ulp32({mirror!r}) is right: the gap is measured "
            "from |x|, so it does not depend on the sign."
        )
    if abs(first) < 2.0**-126:
        return False, (
            f"ulp32({first!r}) returned {at(first)!r}. Below the smallest normal float32, 2^-126, the "
            "implicit leading 1 is gone (section 1.8, the subnormals): the gap stops shrinking "
            "there, down to 0 itself."
        )
    if first >= 2.0**127:
        return False, (
            f"ulp32({first!r}) returned {at(first)!r}. In float32's top binade the gap is finite; at the "
            "largest value the next one up is inf, so the exercise asks for the gap below it."
        )
    return False, (
        f"ulp32({first!r}) returned {at(first)!r}, which is not the gap between |x| and the next larger "
        "float32. Compare with torch.nextafter on a float32 tensor, and section 1.2's 2^(e-23)."
    )


CHECKERS = {
    "01.1": ("your prediction of total - 2**24 after the loop (a number)", _ex_01_1),
    "01.2": ("three float32 numbers (a, b, c) with (a + b) + c != a + (b + c)", _ex_01_2),
    "01.3": ("the summation order whose error bound does not grow with n", _ex_01_3),
    "01.4": ("three float32 numbers (a, b, c) whose fused a*b + c differs from a * b + c", _ex_01_4),
    "01.5": ("a function ulp32(x): the gap between |x| and the next larger float32", _ex_01_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "01.1": "predict",
    "01.2": "work",
    "01.3": "recall",
    "01.4": "work",
    "01.5": "code",
}

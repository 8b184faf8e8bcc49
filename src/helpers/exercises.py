"""Self-checking exercises: ``check("01.1", answer)`` says whether an answer is right, and why not.

A wrong answer gets a message that points at the idea to revisit, never just ``False``.
Introduced in lesson ``01_floating_point_non_associativity``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = ["Verdict", "check", "exercise_ids"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one answer: ``ok`` is True, False, or None (not answered yet)."""

    exercise: str
    ok: bool | None
    message: str

    def __str__(self) -> str:
        label = {True: "Correct", False: "Not yet", None: "Not answered yet"}[self.ok]
        return f"Exercise {self.exercise}: {label}. {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return bool(self.ok)


def _f32(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.float32)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _ex_01_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool) or answer <= 0:
        return False, "answer with a positive Python int."
    n = _f32(float(answer))
    if bool(n + 1 != n):
        return False, (
            f"float32 still tells {answer} + 1 from {answer}: the gap between neighbouring "
            f"floats there is {float(torch.nextafter(n, _f32(float('inf'))) - n):g}. Look for the "
            "first integer where that gap reaches 2 (think of the 24-bit significand)."
        )
    if answer > 2**24:
        return False, f"{answer} + 1 == {answer} in float32 indeed, but a smaller integer already does it."
    return True, "2**24 = 16777216: from there on the gap between float32 neighbours is 2."


def _ex_01_2(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, (tuple, list)) and len(answer) == 3 and all(_is_number(v) for v in answer)):
        return False, "answer with a tuple of three numbers (a, b, c)."
    a, b, c = (_f32(float(v)) for v in answer)
    if not all(bool(torch.isfinite(v)) for v in (a, b, c)):
        return False, "use finite float32 values (inf and NaN make the point for the wrong reason)."
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
    if not _is_number(answer):
        return False, "answer with a Python float."
    expected = 2.0**-14
    if float(answer) == expected:
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


_CHECKERS: dict[str, tuple[str, Callable[[object], tuple[bool, str]]]] = {
    "01.1": ("the smallest positive integer n with float32(n) + 1 == float32(n)", _ex_01_1),
    "01.2": ("three float32 numbers (a, b, c) with (a + b) + c != a + (b + c)", _ex_01_2),
    "01.3": ("the float32 ULP of 1000.0", _ex_01_3),
    "01.4": ("the summation order whose error bound does not grow with n", _ex_01_4),
}


def exercise_ids() -> list[str]:
    """Every exercise that :func:`check` knows."""
    return sorted(_CHECKERS)


def check(exercise: str, answer: object) -> Verdict:
    """Check ``answer`` to ``exercise`` (an id such as ``"01.1"``) and explain the verdict.

    ``None`` means not answered yet. Introduced in lesson 01.
    """
    if not isinstance(exercise, str):
        raise TypeError(f"exercise must be an id string such as '01.1', not {type(exercise).__name__}")
    if exercise not in _CHECKERS:
        raise ValueError(f"unknown exercise {exercise!r}; known: {', '.join(exercise_ids())}")
    question, checker = _CHECKERS[exercise]
    if answer is None:
        return Verdict(exercise, None, f"replace None with {question}.")
    ok, message = checker(answer)
    return Verdict(exercise, ok, message)

"""Lesson 01's exercise checkers accept right answers and reject wrong ones with a hint."""

import math

import numpy as np
import pytest
import torch

from helpers import check
from helpers.exercises import _CHECKERS


def ulp32(x):  # the gap between |x| and the next larger float32; at the largest one, the gap below it
    m, e = math.frexp(abs(x))
    return 2.0 ** max(e - 24, -149) if x != 0 else 2.0**-149


def ulp32_with_nextafter(x):
    a = torch.tensor(abs(x), dtype=torch.float32)
    if a.item() == torch.finfo(torch.float32).max:
        return (a - torch.nextafter(a, torch.tensor(0.0))).item()
    return (torch.nextafter(a, torch.tensor(math.inf)) - a).item()


def _toward_zero(x):  # the gap below |x|: wrong just at powers of two
    a = torch.tensor(abs(x), dtype=torch.float32)
    return (a - torch.nextafter(a, torch.tensor(0.0))).item()


def _no_abs(x):  # the gap above x itself: wrong for negative powers of two
    a = torch.tensor(x, dtype=torch.float32)
    return (torch.nextafter(a, torch.tensor(math.inf)) - a).item()


def _log2(x):  # math.log2(0.0) raises; wrong for subnormals
    return 2.0 ** (math.floor(math.log2(abs(x))) - 23)


def _nextafter_up(x):  # helpers.ulp's definition: inf at float32's largest value
    a = torch.tensor(abs(x), dtype=torch.float32)
    return (torch.nextafter(a, torch.tensor(math.inf)) - a).item()


RIGHT = {
    "01.1": 4000,  # each addition of 3.0 above 2**24 is a tie that rounds up to 4
    "01.2": (2.0**24, 1.0, 1.0),  # 1 + 1 survives only when added first: section 1.1's are rejected
    "01.3": "Kahan",
    "01.4": (24929.0, 673.0, 2.0**-40),  # 24929 * 673 = 2**24 + 1, a tie that c breaks only when fused
    "01.5": ulp32,
}
WRONG = {
    "01.1": [3000, 0, 2000, 4001, "4000", True, math.nan, 10**400, torch.empty((), device="meta")],
    "01.2": [
        (1.0, 2.0, 3.0),
        (1.0, 2.0),
        ("a", "b", "c"),
        (1e38, 1e38, -1e38),
        (float("inf"), 1.0, 1.0),
        (1e8, -1e8, 1.0),  # section 1.1's own numbers
        (-1e8, 1.0, 1e8),  # ... in another order (this one even gives 0.0 both ways)
        (1.0, 1e8, -1e8),  # ... reordered on purpose: still section 1.1's example
        (10**400, 1, 1),  # float() of this int would raise OverflowError
        (torch.ones(2), 1.0, 1.0),
        (torch.empty((), device="meta"), 1.0, 1.0),  # a meta tensor has no value
    ],
    "01.3": ["pairwise", "sequential", "fastest", 4],
    "01.4": [
        (1.0, 2.0, 3.0),
        (1 + 2**-12, 1 + 2**-12, 0.0),
        (1e30, 1e30, 0.0),
        (1.0, 2.0),
        (float("inf"), 1.0, 1.0),
        (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11)),  # section 1.7's own example
        (10**400, 1, 1),  # float() of this int would raise OverflowError
        (2.0**127 * 1.5, 2.0, 2.0**127),  # both roundings overflow
        (torch.empty((), device="meta"), 1.0, 1.0),
    ],
    "01.5": [
        lambda x: 2.0**-23 * abs(x),  # eps * |x|: right only at powers of two
        _toward_zero,
        _no_abs,
        _log2,
        _nextafter_up,
        math.ulp,  # float64's gap
        lambda x: 2.0**-14,  # the ULP of 1000 everywhere
        lambda x: torch.tensor([1.0, 2.0]),
        2.0**-14,  # a number, not a function
        "ulp32",
    ],
}


@pytest.mark.parametrize(
    "exercise, answer",
    [
        ("01.1", np.int64(4000)),
        ("01.2", (np.float32(1.0), np.float32(2.0**-24), np.float32(2.0**-24))),
        ("01.5", ulp32_with_nextafter),
        ("01.5", lambda x: torch.tensor(ulp32(x))),  # a 0-d tensor is a number
        ("01.1", torch.tensor(4000.0)),
        # section 1.7 builds a and c as 0-dim tensors: answers made the same way are accepted
        ("01.4", (torch.tensor(1 + 2**-20), torch.tensor(1 + 2**-20), torch.tensor(-(1 + 2**-19)))),
        ("01.4", (np.float32(1 + 2**-20), np.float32(1 + 2**-20), np.float32(-(1 + 2**-19)))),
        # a * b overflows when rounded on its own; the fused result, 2.6e38, is finite
        ("01.4", (3e38, 2.0, -3.4e38)),
    ],
)
def test_lesson_01_accepts_tensors_numpy_scalars_and_an_overflow_only_two_roundings_have(exercise, answer):
    verdict = check(exercise, answer)
    assert verdict.ok is True, verdict


def test_lesson_01_rejects_the_lessons_own_examples_with_a_hint():
    assert "section 1.1" in check("01.2", (1e8, -1e8, 1.0)).message
    reordered = check("01.2", (1.0, 1e8, -1e8)).message  # the order a learner may pick on purpose
    assert "reordered" in reordered and "not a new example" in reordered, reordered
    assert "both groupings give 0.0" in check("01.2", (-1e8, 1.0, 1e8)).message  # this order shows nothing
    assert "section 1.7" in check("01.4", (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11))).message
    assert "inf" in check("01.4", (2.0**127 * 1.5, 2.0, 2.0**127)).message


def test_01_1_the_truth_is_computed_by_running_the_loop():
    from helpers.exercises.lesson01 import counter_increase

    assert counter_increase() == 4000.0 and counter_increase(steps=10, step=1.0) == 0.0
    for wrong in (3000, 0, 2000, 4001):  # a wrong guess is told why, not the number or the first step
        message = check("01.1", wrong).message
        assert "4000" not in message and "2^24 + 4" not in message, message


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda x: 2.0**-23 * abs(x), "right only at powers of two"),
        (_toward_zero, "gap below"),
        (_no_abs, "does not depend on the sign"),
        (_log2, "math domain error"),
        (lambda x: _log2(x) if x != 0 else 2.0**-149, "subnormal"),
        (_nextafter_up, "largest"),
        (math.ulp, "float64"),
    ],
)
def test_01_5_names_the_mistake_without_the_answer(wrong, words):
    ok, message = _CHECKERS["01.5"][1](wrong)
    assert ok is False and words in message, message
    assert "frexp" not in message and "e - 24" not in message


def test_01_5_a_function_that_raises_is_reported():
    def broken(x):
        raise ZeroDivisionError("oops")

    assert "calling ulp32(1000.0) failed: ZeroDivisionError: oops" in check("01.5", broken).message


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_01_5_tells_plus_zero_from_minus_zero(zero):
    # 0.0 == -0.0: a function wrong at only one of them must still be caught
    def wrong_at_one_zero(x):
        if x == 0 and math.copysign(1.0, x) == math.copysign(1.0, zero):
            return 0.0
        return ulp32(x)

    ok, message = _CHECKERS["01.5"][1](wrong_at_one_zero)
    assert ok is False and f"ulp32({zero!r}) returned 0.0" in message, message

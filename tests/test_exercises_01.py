"""Lesson 01's exercise checkers accept right answers and reject wrong ones with a hint."""

import math

import numpy as np
import pytest
import torch

from helpers import check

RIGHT = {
    "01.1": 4000,  # each addition of 3.0 above 2**24 is a tie that rounds up to 4
    "01.2": (2.0**24, 1.0, 1.0),  # 1 + 1 survives only when added first: section 1.1's are rejected
    "01.3": (24929.0, 673.0, 2.0**-40),  # 24929 * 673 = 2**24 + 1, a tie that c breaks only when fused
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
    "01.3": [
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
}


@pytest.mark.parametrize(
    "exercise, answer",
    [
        ("01.1", np.int64(4000)),
        ("01.2", (np.float32(1.0), np.float32(2.0**-24), np.float32(2.0**-24))),
        ("01.1", torch.tensor(4000.0)),
        # section 1.7 builds a and c as 0-dim tensors: answers made the same way are accepted
        ("01.3", (torch.tensor(1 + 2**-20), torch.tensor(1 + 2**-20), torch.tensor(-(1 + 2**-19)))),
        ("01.3", (np.float32(1 + 2**-20), np.float32(1 + 2**-20), np.float32(-(1 + 2**-19)))),
        # a * b overflows when rounded on its own; the fused result, 2.6e38, is finite
        ("01.3", (3e38, 2.0, -3.4e38)),
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
    assert "section 1.7" in check("01.3", (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11))).message
    assert "inf" in check("01.3", (2.0**127 * 1.5, 2.0, 2.0**127)).message


def test_01_1_the_truth_is_computed_by_running_the_loop():
    from helpers.exercises.lesson01 import counter_increase

    assert counter_increase() == 4000.0 and counter_increase(steps=10, step=1.0) == 0.0
    for wrong in (3000, 0, 2000, 4001):  # a wrong guess is told why, not the number or the first step
        message = check("01.1", wrong).message
        assert "4000" not in message and "2^24 + 4" not in message, message

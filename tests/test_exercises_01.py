"""Lesson 01's exercise checkers accept right answers and reject wrong ones with a hint."""

import numpy as np
import pytest
import torch

from helpers import check


RIGHT = {
    "01.1": 2**24,
    "01.2": (2.0**24, 1.0, 1.0),  # 1 + 1 survives only when added first: section 1.3's are rejected
    "01.3": 2.0**-14,
    "01.4": "Kahan",
    "01.5": (24929.0, 673.0, 2.0**-40),  # 24929 * 673 = 2**24 + 1, a tie that c breaks only when fused
}
WRONG = {
    "01.1": [2**24 - 1, 2**24 + 2, -3, "16777216", 1.5, 10**400, torch.empty((), device="meta")],
    "01.2": [
        (1.0, 2.0, 3.0),
        (1.0, 2.0),
        ("a", "b", "c"),
        (1e38, 1e38, -1e38),
        (float("inf"), 1.0, 1.0),
        (1e8, -1e8, 1.0),  # section 1.3's own numbers
        (-1e8, 1.0, 1e8),  # ... in another order
        (10**400, 1, 1),  # float() of this int would raise OverflowError
        (torch.ones(2), 1.0, 1.0),
        (torch.empty((), device="meta"), 1.0, 1.0),  # a meta tensor has no value
    ],
    "01.3": [1000 * 2.0**-23, "x", 2.0**-13, 10**400, torch.ones(2), torch.empty((), device="meta")],
    "01.4": ["pairwise", "sequential", "fastest", 4],
    "01.5": [
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
        ("01.1", torch.tensor(2**24)),
        ("01.1", np.int64(2**24)),
        ("01.2", (np.float32(1.0), np.float32(2.0**-24), np.float32(2.0**-24))),
        ("01.3", torch.tensor(2.0**-14)),  # what helpers.ulp returns
        # section 1.7 builds a and c as 0-dim tensors: answers made the same way are accepted
        ("01.5", (torch.tensor(1 + 2**-20), torch.tensor(1 + 2**-20), torch.tensor(-(1 + 2**-19)))),
        ("01.5", (np.float32(1 + 2**-20), np.float32(1 + 2**-20), np.float32(-(1 + 2**-19)))),
        # a * b overflows when rounded on its own; the fused result, 2.6e38, is finite
        ("01.5", (3e38, 2.0, -3.4e38)),
    ],
)
def test_lesson_01_accepts_tensors_numpy_scalars_and_an_overflow_only_two_roundings_have(exercise, answer):
    verdict = check(exercise, answer)
    assert verdict.ok is True, verdict


def test_lesson_01_rejects_the_lessons_own_examples_with_a_hint():
    assert "section 1.1" in check("01.2", (1e8, -1e8, 1.0)).message
    assert "section 1.7" in check("01.5", (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11))).message
    assert "inf" in check("01.5", (2.0**127 * 1.5, 2.0, 2.0**127)).message

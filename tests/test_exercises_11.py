"""Lesson 11's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check


RIGHT = {
    "11.1": 3,
    "11.2": 0,
    "11.3": "set_epoch",
    "11.4": {3, 6},
    "11.5": "generator",
}
WRONG = {
    "11.1": [2, 4, "3", 2.5],
    "11.2": [1, "0", True],
    "11.3": ["shuffle", "set_seed", 1],
    "11.4": [{3}, {2, 3, 6}, {3, 6, 12}, [3.0, 6.0], "3, 6", {True, 3}],
    "11.5": ["worker_init_fn", "seed", torch.Generator(), "sampler"],
}


def test_lesson_11_4_names_the_condition_for_powers_of_two():
    # 2, 4 and 8 change the bits only at the ends of the range (overflow, subnormal numbers)
    assert "for normal numbers" in check("11.4", {2, 3, 6}).message
    assert "overflow" in check("11.4", {3, 6}).message

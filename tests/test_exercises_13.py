"""Lesson 13's exercise checkers accept right answers and reject wrong ones with a hint."""

import pytest

from helpers import check


RIGHT = {
    "13.1": "conv",
    "13.2": "map_location",
    "13.3": False,
}
WRONG = {
    "13.1": ["matmul", "dtype", "tf32", 1],
    "13.2": ["weights_only", "map-location", None.__class__],
    "13.3": [True, "False", 0],
}


@pytest.mark.parametrize("answer", ["conv", "convolution", " Convolution "])
def test_lesson_13_1_accepts_the_word_spelled_out(answer):
    verdict = check("13.1", answer)
    assert verdict.ok is True, verdict

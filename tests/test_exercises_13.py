"""Lesson 13's exercise checkers accept right answers and reject wrong ones with a hint."""

import pytest
import torch

from helpers import check
from helpers.exercises.lesson13 import SUM_LENGTHS, equal_sums_across_threads

_EQUAL = equal_sums_across_threads()
_TRUTH_13_2 = tuple(_EQUAL[n] == 32 for n in SUM_LENGTHS)  # measured here, as the checker does

RIGHT = {
    "13.1": "conv",
    "13.2": _TRUTH_13_2,
    "13.3": 1.0,
}
WRONG = {
    "13.1": ["matmul", "dtype", "tf32", 1],
    "13.2": [
        *[pair for pair in ((True, True), (False, False), (True, False), (False, True))
          if pair != _TRUTH_13_2],
        True,
        (1, 0),
        (True, False, True),
        "True, False",
    ],
    "13.3": [0.0, 0, 2.0, "1.0", True, torch.tensor(1.0)],
}


@pytest.mark.parametrize("answer", ["conv", "convolution", " Convolution "])
def test_lesson_13_1_accepts_the_word_spelled_out(answer):
    verdict = check("13.1", answer)
    assert verdict.ok is True, verdict


def test_lesson_13_2_short_sums_are_not_split_on_this_build():
    # below ATen's grain size (32,768 elements) a sum runs on one thread whatever the thread count
    assert _EQUAL[1000] == 32


def test_lesson_13_2_accepts_a_list_too():
    assert check("13.2", list(_TRUTH_13_2)).ok is True


def test_lesson_13_2_restores_threads_and_deterministic_mode():
    threads = torch.get_num_threads()
    mode = torch.are_deterministic_algorithms_enabled()
    for answer in ((True, True), (False, False)):
        check("13.2", answer)
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == mode


def test_predictions_are_explained_with_the_mechanism():
    assert "GRAIN_SIZE" in check("13.2", (not _TRUTH_13_2[0], _TRUTH_13_2[1])).message
    assert "copy=True" in check("13.3", 0.0).message


def test_lesson_13_2_restores_deterministic_mode_when_it_was_on():
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        check("13.2", (True, True))
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)

"""Lesson 04's exercise checkers accept right answers and reject wrong ones with a hint."""

import numpy as np
import pytest
import torch

from helpers import check


RIGHT = {
    "04.1": RuntimeError,
    "04.2": float("nan"),
    "04.3": ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
    "04.4": {"one thread", "float64"},
}
WRONG = {
    "04.1": ["RuntimeError", ValueError, Exception, 3],
    "04.2": [
        *(0.0, "nan", float("inf"), 10**400, -(10**400), np.float32(1.0), torch.zeros(2), 1 + 2j, True),
        torch.empty((), device="meta"),  # a meta tensor has no value to read
    ],
    "04.3": [
        ("CUBLAS_WORKSPACE_CONFIG", "4096:8"),
        ("CUBLAS_WORKSPACE_CONFIG", ":16:8"),
        ("CUDA_LAUNCH_BLOCKING", "1"),
        "x",
    ],
    "04.4": [{"one thread"}, {"one thread", "float64", "reseed"}, "float64", {"gpu"}, {1}],
}


@pytest.mark.parametrize(
    "answer",
    [np.float32("nan"), np.float64("nan"), torch.tensor(float("nan")), torch.full((1,), float("nan"))],
)
def test_lesson_04_2_accepts_any_real_nan(answer):
    verdict = check("04.2", answer)
    assert verdict.ok is True, verdict


@pytest.mark.parametrize("exercise", ["04.1", "04.2", "04.3", "04.4"])
@pytest.mark.parametrize(
    "answer",
    [
        *(10**400, -(10**400), np.float32("nan"), np.int64(3), 1 + 2j, b"x", torch.zeros(3), object(), {}),
        *(torch.empty((), device="meta"), torch.empty(1, device="meta")),
    ],
)
def test_lesson_04_checkers_never_raise(exercise, answer):
    verdict = check(exercise, answer)  # a checker answers every input with a verdict, never an exception
    assert verdict.ok in (True, False) and len(verdict.message) > 20

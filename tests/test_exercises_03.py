"""Lesson 03's exercise checkers accept right answers and reject wrong ones with a hint."""

import numpy as np
import torch

from helpers import check


RIGHT = {
    "03.1": 256.0,
    "03.2": 65504,
    "03.3": 2.0**-11,
    "03.4": (1e-5 + 1.3e-6 * 1e-4) / 1e-4,
}
WRONG = {
    "03.1": [257, 258, 255.0, "256"],
    "03.2": [65535, 65536, 65520, float("inf")],
    "03.3": [2.0**-10, 2.0**-24, -1.0, "2^-11", float("nan"), float("inf")],
    "03.4": [
        *(1e-5 / 1.3e-6, 10.0, 1.3e-6, 1e-5, "0.1", float("nan"), float("inf"), 10**400, True),
        # complex values whose real part is the right answer: float() of a NumPy complex drops the rest
        *(np.complex64(0.1000013 + 1j), np.complex128(0.1000013), torch.tensor(0.1000013 + 1j)),
    ],
}


def test_03_4_checker_rejects_what_is_not_a_positive_finite_number():
    from helpers.exercises import _CHECKERS

    checker = _CHECKERS["03.4"][1]
    # check() answers None with "not answered yet"; the checker itself must still reject it
    several = torch.tensor([0.1, 0.1])
    for answer in (None, float("nan"), float("-inf"), 10**400, -0.1, 0.0, 1j, [0.1], "0.1", False, several):
        ok, message = checker(answer)
        assert ok is False and "positive number" in message, (answer, message)
    assert checker(torch.tensor(0.1))[0] is True  # a 0-d tensor is a number

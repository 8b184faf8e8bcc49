"""Lesson 10's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check


def _tolerant_check(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    from helpers.compare import reduction_tolerances

    rtol, atol = reduction_tolerances(torch.float32, 256, scale=expected.abs().mean().item())
    return bool(torch.allclose(actual.double(), expected, rtol=rtol, atol=atol))


RIGHT = {
    "10.1": 4 * 2.0**-24 * 32,
    "10.2": "accuracies",
    "10.3": _tolerant_check,
}
WRONG = {
    "10.1": [1.3e-6, 2.0**-24, "7.6e-6"],
    "10.2": ["weights", "both", 1],
    "10.3": [
        lambda a, e: True,
        lambda a, e: torch.equal(a.double(), e),
        lambda a: True,
        3,
        lambda a, e: torch.allclose(a.double(), e, rtol=1e-3, atol=1e-3),  # rejects 1%, accepts 0.1%
        lambda a, e: torch.allclose(a, e),  # float32 against float64 raises
    ],
}


def test_10_3_says_why_a_fixed_1e_3_and_mixed_dtypes_fail():
    loose = check("10.3", lambda a, e: torch.allclose(a.double(), e, rtol=1e-3, atol=1e-3))
    assert "0.1%" in str(loose) and "1e-3" in str(loose)
    mixed = check("10.3", lambda a, e: torch.allclose(a, e))
    assert "one dtype" in str(mixed)

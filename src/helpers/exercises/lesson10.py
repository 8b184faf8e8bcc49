"""The checkers of lesson 10's exercises (Validating across devices): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import math

import torch

from helpers._validate import describe
from helpers.exercises._common import as_float, is_number, truth


def _ex_10_1(answer: object) -> tuple[bool, str]:
    from helpers.compare import reduction_tolerances

    if not is_number(answer):
        return False, "answer with a float, such as 1e-6."
    answer = as_float(answer)
    expected, _ = reduction_tolerances(torch.float32, 1024)
    if math.isclose(answer, 1.3e-6):
        return False, "that is the default; for K = 1024 the K-dependent term is larger."
    if not math.isclose(answer, expected, rel_tol=1e-3):
        return False, "rtol = max(1.3e-6, 4 * u * sqrt(K)) with u = 2**-24 for float32 and K = 1024."
    return True, f"4 * 2**-24 * 32 = {expected:.3g}: about six times the float32 default."


def _ex_10_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str) or answer.strip().lower() not in ("weights", "accuracies"):
        return False, 'answer "weights" or "accuracies".'
    if answer.strip().lower() == "weights":
        return (
            False,
            "look at the left plot of section 10.1: what happens to the distance between the weights?",
        )
    return True, "the weights drift apart exponentially; the metrics stay close, so compare runs by metrics."


def _ex_10_3(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function f(actual, expected) that returns True or False."
    g = torch.Generator().manual_seed(10)
    results = []
    for _ in range(3):
        a, b = torch.randn(32, 256, generator=g), torch.randn(256, 32, generator=g)
        expected = a.double() @ b.double()
        try:
            good = answer(a @ b, expected)
            bad, subtle = answer((a @ b) * 1.01, expected), answer((a @ b) * 1.001, expected)
        except Exception as exc:  # the learner's function: report any failure as a hint
            if "did not match" in str(exc):
                return False, (
                    f"calling f failed ({type(exc).__name__}: {exc}): actual is float32 and expected "
                    "float64, and torch.allclose wants one dtype; compare in float64."
                )
            return False, f"calling f failed: {type(exc).__name__}: {exc}"
        for returned in (good, bad, subtle):
            if truth(returned) is None:
                return False, f"f must return True or False (one per call); it returned {describe(returned)}."
        results.append((truth(good), truth(bad), truth(subtle)))
    if not all(good for good, _, _ in results):
        return (
            False,
            "f rejected a correct float32 result: is the tolerance built for K = 256 with the right scale?",
        )
    if any(bad for _, bad, _ in results):
        return False, "f accepted a result with a 1% error: the tolerance is too loose."
    if any(subtle for _, _, subtle in results):
        return False, (
            "f rejects a 1% error but accepts a 0.1% one: a fixed 1e-3 is far looser than rounding in a "
            "256-term float32 sum needs. Size the tolerance from K (section 10.2)."
        )
    return True, "it accepts every correct order and rejects errors of 1% and 0.1%: a test with teeth."


CHECKERS = {
    "10.1": ("the rtol for float32 and K = 1024", _ex_10_1),
    "10.2": ('"weights" or "accuracies"', _ex_10_2),
    "10.3": ("a function f(actual, expected) returning True or False", _ex_10_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "10.1": "work",
    "10.2": "recall",
    "10.3": "code",
}

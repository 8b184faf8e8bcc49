"""Lesson 02's exercise checkers accept right answers and reject wrong ones with a hint."""

from helpers import check
from helpers.exercises import batch_invariance_failures


RIGHT = {
    "02.1": 20,
    "02.2": [0, 2, 1],
    "02.3": batch_invariance_failures(),  # machine-dependent: the checker recomputes it here
}
WRONG = {
    "02.1": [2**20 - 1, 19, 0, "20"],
    "02.2": [[0, 1, 2], [1, 0, 2], [0, 1], "012", [0, 0, 1]],
    "02.3": [[0], "1, 2", [1.5], sorted(set(range(1, 17)) - set(batch_invariance_failures()))],
}


def test_batch_invariance_failures_is_a_sorted_sublist():
    found = batch_invariance_failures()
    assert found == sorted(set(found)) and set(found) <= set(range(1, 17))

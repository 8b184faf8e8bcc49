"""Lesson 02's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check
from helpers.exercises import batch_invariance_failures
from helpers.exercises.lesson02 import integer_sums_by_threads

RIGHT = {
    "02.1": 20,
    "02.2": [0, 2, 1],
    "02.3": batch_invariance_failures(),  # machine-dependent: the checker recomputes it here
    "02.4": True,  # every partial sum of these integers is exact in float32
}
WRONG = {
    "02.1": [2**20 - 1, 19, 0, "20"],
    "02.2": [[0, 1, 2], [1, 0, 2], [0, 1], "012", [0, 0, 1]],
    "02.3": [[0], "1, 2", [1.5], sorted(set(range(1, 17)) - set(batch_invariance_failures()))],
    "02.4": [False, "True", 1, 0, torch.tensor(True)],
}


def test_batch_invariance_failures_is_a_sorted_sublist():
    found = batch_invariance_failures()
    assert found == sorted(set(found)) and set(found) <= set(range(1, 17))


def test_02_4_measures_with_both_thread_counts_and_restores_the_setting():
    before = torch.get_num_threads()
    sums = integer_sums_by_threads()
    assert torch.get_num_threads() == before
    assert sorted(sums) == [1, 2] and torch.equal(sums[1], sums[2])
    x = torch.randint(0, 16, (2**20,), generator=torch.Generator().manual_seed(0))
    assert sums[1].item() == x.sum().item()  # the exact integer total
    assert check("02.4", False).ok is False and torch.get_num_threads() == before

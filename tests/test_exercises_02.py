"""Lesson 02's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check
from helpers.exercises import batch_invariance_failures
from helpers.exercises.lesson02 import CBWR_CHOICES, integer_sums_by_threads

RIGHT = {
    "02.1": True,  # every partial sum of these integers is exact in float32
    "02.2": batch_invariance_failures(),  # machine-dependent: the checker recomputes it here
    "02.3": "AVX2,STRICT",
}
WRONG = {
    "02.1": [False, "True", 1, 0, torch.tensor(True)],
    "02.2": [[0], "1, 2", [1.5], sorted(set(range(1, 17)) - set(batch_invariance_failures()))],
    "02.3": ["AUTO", "AVX2", "AVX512", "AVX512,STRICT", "STRICT", "COMPATIBLE", ["AVX2,STRICT"], 2],
}


def test_batch_invariance_failures_is_a_sorted_sublist():
    found = batch_invariance_failures()
    assert found == sorted(set(found)) and set(found) <= set(range(1, 17))


def test_02_1_measures_with_both_thread_counts_and_restores_the_setting():
    before = torch.get_num_threads()
    sums = integer_sums_by_threads()
    assert torch.get_num_threads() == before
    assert sorted(sums) == [1, 2] and torch.equal(sums[1], sums[2])
    x = torch.randint(0, 16, (2**20,), generator=torch.Generator().manual_seed(0))
    assert sums[1].item() == x.sum().item()  # the exact integer total
    assert check("02.1", False).ok is False and torch.get_num_threads() == before


def test_02_3_accepts_the_ways_oneMKL_spells_the_setting():
    for spelling in ("avx2,strict", "AVX2, STRICT", "BRANCH=AVX2,STRICT"):  # MKL_CBWR's two forms
        assert check("02.3", spelling).ok is True, spelling
    verdicts = {c: check("02.3", c).message for c in CBWR_CHOICES if c != "AVX2,STRICT"}
    assert len(set(verdicts.values())) >= 3  # each wrong branch is told apart from the others
    assert all("AVX2,STRICT" not in m for m in verdicts.values())  # no hint names the answer

"""The checkers of lesson 02's exercises (Parallel reductions).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for. The
exercises sit in the sections they practise: 02.1 in 2.2, 02.2 in 2.5, 02.3 in 2.6.
"""

from __future__ import annotations

import torch

from helpers.settings import threads


def integer_sums_by_threads() -> dict[int, torch.Tensor]:
    """``x.sum()`` of exercise 02.1's 2**20 random integers from 0 to 15 (float32), with 1 and with 2 threads.

    Returns ``{1: sum, 2: sum}``. The intra-op thread count is restored afterwards, even on an
    error (``helpers.threads``). Exercise 02.1's truth, measured here. Introduced in lesson 02.
    """
    x = torch.randint(0, 16, (2**20,), generator=torch.Generator().manual_seed(0)).float()
    sums = {}
    for n in (1, 2):
        with threads(n):
            sums[n] = x.sum()
    return sums


def _ex_02_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer True (the same bits with 1 and 2 threads) or False (different bits)."
    sums = integer_sums_by_threads()
    same = torch.equal(sums[1], sums[2])
    why = (
        "Every partial sum of these integers, in any order, is an integer of at most 15 * 2^20 < 2^24, and "
        "float32 holds every such integer exactly, so no addition rounds: any split between threads gives "
        "the exact total."
    )
    if same and answer:
        return True, "both thread counts give the same bits. " + why
    if same:
        return False, (
            "here the 1-thread and 2-thread sums have the same bits. The order changed, but order matters "
            "only when additions round: do they here? Look at the size of every partial sum (section 1.2 of "
            "lesson 01)."
        )
    if not answer:  # cannot happen where float32 addition is IEEE 754: kept so the checker never lies
        return True, "here the two sums differ, although every partial sum should be exact."
    return False, "here the 1-thread and 2-thread sums differ; print them (next cell) to see by how much."


def batch_invariance_failures(max_n: int = 16) -> list[int]:
    """The n in 1..max_n for which ``a[:n] @ b`` differs bitwise from ``(a @ b)[:n]`` here.

    ``a`` is 256 x 1024 and ``b`` 1024 x 1024, ``torch.rand`` with seed 0. Exercise 02.2's answer,
    which depends on the machine. ``max_n`` is at most 256 (``a``'s rows). Introduced in lesson 02.
    """
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(256, 1024, generator=g), torch.rand(1024, 1024, generator=g)
    full = a @ b
    return [n for n in range(1, max_n + 1) if not torch.equal(a[:n] @ b, full[:n])]


def _ex_02_2(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, (list, tuple)) and all(isinstance(n, int) for n in answer)):
        return False, "answer with a list of ints, for example [1, 2, 3]."
    expected = batch_invariance_failures()
    if sorted(answer) != expected:
        missing, extra = sorted(set(expected) - set(answer)), sorted(set(answer) - set(expected))
        return False, (
            f"on this machine the list differs (missing: {missing}, not failing here: {extra}). Compare with "
            "torch.equal, not with a tolerance, and use exactly the a and b given."
        )
    return True, f"on this machine a[:n] @ b differs from (a @ b)[:n] for n in {expected}."


#: The values of MKL_CBWR that exercise 02.3 offers.
CBWR_CHOICES = ("AUTO", "AVX2", "AVX512", "AVX2,STRICT", "AVX512,STRICT")


def _ex_02_3(answer: object) -> tuple[bool, str]:
    hint = "answer with one of the strings " + ", ".join(repr(c) for c in CBWR_CHOICES) + "."
    if not isinstance(answer, str):
        return False, hint
    value = answer.replace(" ", "").upper().removeprefix("BRANCH=")
    if value not in CBWR_CHOICES:
        return False, hint
    if value == "AVX2,STRICT":
        return True, (
            "AVX2 is the widest branch both CPUs have, so both run the same oneMKL code; STRICT lifts the "
            "fixed-thread-count condition for the matrix products (?gemm) on that branch, so the thread "
            "counts (16 and 8) may differ."
        )
    if value == "AUTO":
        return False, (
            "AUTO keeps the code path oneMKL picks for each CPU: each machine repeats its own results, but "
            "the two run different code. Which named branch can both of them run?"
        )
    if value.startswith("AVX512"):
        return False, (
            "the laptop has no AVX-512, and a named branch is available only on CPUs with its instructions "
            "(elsewhere oneMKL falls back to AUTO): the two machines would not run the same code."
        )
    return False, (  # "AVX2": the right branch, standard CNR
        "both machines run the same branch, but standard CNR promises the same bits only under a condition "
        "that these two machines do not meet. Which one (section 2.6)?"
    )


CHECKERS = {
    "02.1": ("your prediction, True or False: does x.sum() give the same bits with 1 and 2 threads",
             _ex_02_1),
    "02.2": ("the list of n in 1..16 for which a[:n] @ b != (a @ b)[:n] on this machine", _ex_02_2),
    "02.3": ("the MKL_CBWR value, as a string, that makes both machines' oneMKL products agree", _ex_02_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "02.1": "predict",
    "02.2": "measure",
    "02.3": "decide",
}

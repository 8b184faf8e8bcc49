"""The checkers of lesson 13's exercises (Myths and facts): ``CHECKERS`` maps ids to questions and checkers.

Exercises 13.2 and 13.3 are "predict, then run": each checker runs the experiment itself, here and now,
and compares the learner's prediction with what happened.
"""

from __future__ import annotations

import torch

#: The lengths of the sums of exercise 13.2: below and above ATen's grain size (32,768 elements).
SUM_LENGTHS = (1000, 100_000)


def _ex_13_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str) or answer.strip().lower() not in ("matmul", "conv", "convolution"):
        return False, 'answer "matmul" or "conv".'
    if answer.strip().lower() == "matmul":
        return False, "section 13.2: which TF32 setting is on by default, cuda.matmul's or cudnn.conv's?"
    return True, (
        "a convolution: torch.backends.cudnn.conv.fp32_precision is 'tf32' by default (cudnn.allow_tf32 "
        "in the older API; cuDNN's recurrent layers default to 'tf32' too), while float32 matrix products "
        "(torch.matmul, nn.Linear) keep float32 unless TF32 is switched on."
    )


def equal_sums_across_threads(rows: int = 32) -> dict[int, int]:
    """For each length in ``SUM_LENGTHS``: how many of ``rows`` float32 sums (``torch.sum`` of one row)
    give the same bits on 1 thread and on 2, under deterministic mode. Restores the thread count and
    the deterministic setting. Introduced in lesson 13 (exercise 13.2)."""
    g = torch.Generator().manual_seed(0)
    data = {n: torch.rand(rows, n, generator=g) for n in SUM_LENGTHS}
    threads = torch.get_num_threads()
    mode = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    sums: dict[int, dict[int, torch.Tensor]] = {}
    try:
        # ATen's switch alone: torch.use_deterministic_algorithms also sets torch.compile's, whose first
        # import takes seconds; an eager torch.sum reads only ATen's
        torch._C._set_deterministic_algorithms(True, warn_only=False)
        for count in (1, 2):
            torch.set_num_threads(count)
            sums[count] = {n: torch.stack([row.sum() for row in x]) for n, x in data.items()}
    finally:
        torch.set_num_threads(threads)
        torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)
    return {n: int((sums[1][n] == sums[2][n]).sum()) for n in SUM_LENGTHS}


def _bool_pair(answer: object) -> tuple[bool, bool] | None:
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and all(isinstance(a, bool) for a in answer):
        return answer[0], answer[1]
    return None


def _ex_13_2(answer: object) -> tuple[bool, str]:
    guess = _bool_pair(answer)
    if guess is None:
        return False, "answer with a pair of bools: (all sums of 1,000 equal?, all sums of 100,000 equal?)."
    rows = 32
    equal = equal_sums_across_threads(rows)
    truth = tuple(equal[n] == rows for n in SUM_LENGTHS)
    why = (
        "PyTorch's CPU sum is split between threads only when it has more than 32,768 elements "
        "(at::internal::GRAIN_SIZE), and deterministic mode leaves that split to the thread count."
    )
    if guess == truth:
        return True, f"that is what happened here. {why}"
    here = ", ".join(f"{equal[n]} of {rows} sums of {n:,} numbers" for n in SUM_LENGTHS)
    return False, f"here, 1 thread and 2 gave bitwise equal results for {here}. {why}"


def _ex_13_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, (int, float)) or isinstance(answer, bool) or answer not in (0, 1):
        return False, "answer with the number t[0] holds afterwards: 0.0 or 1.0."
    t = torch.zeros(3)
    moved = t.to("cpu")
    moved[0] = 1.0
    truth = t[0].item()
    why = (
        "Tensor.to returns the tensor itself when its dtype and device already match (its documentation); "
        "only a real conversion, or copy=True, makes a new tensor."
    )
    if answer == truth:
        return True, f"t[0] is {truth} here. {why}"
    return False, f"here t[0] became {truth}: moved is t. {why}"


CHECKERS = {
    "13.1": ('"matmul" or "conv"', _ex_13_1),
    "13.2": ("a pair of bools: (sums of 1,000 equal?, sums of 100,000 equal?)", _ex_13_2),
    "13.3": ("the value of t[0] afterwards, 0.0 or 1.0", _ex_13_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "13.1": "recall",
    "13.2": "predict",
    "13.3": "predict",
}

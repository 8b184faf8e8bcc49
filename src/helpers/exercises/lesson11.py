"""The checkers of lesson 11's exercises (Distributed data parallel): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import torch


def _ex_11_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of indices)."
    if answer == 2:
        return False, "that drops the remainder (drop_last=True); without it the sampler pads every share."
    if answer != 3:
        return False, "10 items over 4 ranks: each share is rounded up, and the missing indices are repeated."
    return True, "ceil(10 / 4) = 3 each, 12 in all: two samples are seen twice per epoch."


def _ex_11_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with a rank number (an int)."
    if answer != 0:
        return False, "section 11.5 checks which rank's parameters survive the wrapping."
    return True, "rank 0's: DDP broadcasts them (and the buffers) when it wraps the model."


def _ex_11_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the method's name as a string."
    if answer.strip().rstrip("()") != "set_epoch":
        return False, "section 11.5, rule 2: the method takes the epoch number."
    return True, "sampler.set_epoch(epoch): the shuffle is seeded with seed + epoch."


def _ex_11_4(answer: object) -> tuple[bool, str]:
    choices = {2, 3, 4, 6, 8}
    if not (
        isinstance(answer, (set, frozenset, list, tuple))
        and all(isinstance(a, int) and not isinstance(a, bool) for a in answer)
    ):
        return False, f"answer with a set of ints chosen from {sorted(choices)}."
    given = set(answer)
    if not given <= choices:
        return False, f"use only these world sizes: {sorted(choices)}."
    if given & {2, 4, 8}:
        return False, (
            "for normal numbers, multiplying by 1/2, 1/4 or 1/8 only changes the exponent: "
            "section 11.3 has 2 and 4 agree."
        )
    if given != {3, 6}:
        return False, "is 1/world_size a float32 number for every world size left? Try 1/6 = 1/2 * 1/3."
    return True, (
        "3 and 6: float32(1/3) and float32(1/6) are rounded, so dividing first rounds differently "
        "(near overflow or subnormal numbers, 2, 4 and 8 can differ too: section 11.3)."
    )


def _ex_11_5(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the argument's name as a string."
    name = answer.strip().rstrip("=").strip()
    if name == "worker_init_fn":
        return False, "it runs in each worker after seeding; which argument is the base seed drawn from?"
    if name != "generator":
        return False, (
            "section 11.5: the base seed comes from one DataLoader argument, or else the global generator."
        )
    return True, (
        "generator=torch.Generator().manual_seed(seed + rank): the base seed, so each worker's, differs."
    )


CHECKERS = {
    "11.1": ("the number of indices per rank", _ex_11_1),
    "11.2": ("the rank whose parameters DDP broadcasts", _ex_11_2),
    "11.3": ("the DistributedSampler method to call every epoch", _ex_11_3),
    "11.4": ("a set of the world sizes where dividing first can change the bits", _ex_11_4),
    "11.5": ("the DataLoader argument that sets the workers' base seed", _ex_11_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "11.1": "work",
    "11.2": "recall",
    "11.3": "recall",
    "11.4": "work",
    "11.5": "recall",
}

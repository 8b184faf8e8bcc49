"""Lesson 12's exercise checkers accept right answers, reject wrong ones with a hint, and never raise."""

from __future__ import annotations

import dataclasses

import torch

from helpers import check
from helpers.lessons import capstone

C = capstone.Config("C", threads=8, bf16=True, from_checkpoint=True, data_seed=1)
RIGHT = {
    "12.1": "pool",
    "12.2": torch.bfloat16,
    "12.3": dataclasses.replace(
        C, threads=1, bf16=False, deterministic=True, data_seed=0, stats_as_buffers=True, eval_after_load=True
    ),
}


WRONG = {
    "12.1": ["SumPerBag", "Standardise", "Linear", "Pool", "EMBED.0", "embed.0", "head", "drop",
             "standardise", "pooling", 4, ""],
    "12.2": [torch.float32, "float32", torch.float16, "half", torch.int8, "bf32", 16],
    "12.3": [
        C,
        dataclasses.replace(RIGHT["12.3"], data_seed=1),
        dataclasses.replace(RIGHT["12.3"], data_seed=None),
        dataclasses.replace(RIGHT["12.3"], threads=8),
        dataclasses.replace(RIGHT["12.3"], threads=8, deterministic=False),
        dataclasses.replace(RIGHT["12.3"], bf16=True),
        dataclasses.replace(RIGHT["12.3"], eval_after_load=False),
        dataclasses.replace(RIGHT["12.3"], stats_as_buffers=False),
        dataclasses.replace(RIGHT["12.3"], from_checkpoint=False),
        dataclasses.replace(RIGHT["12.3"], seed=1),
        dataclasses.replace(RIGHT["12.3"], steps=39),
        capstone.A,
        "C",
        {"threads": 1},
    ],
}


def test_right_answers_in_other_spellings():
    assert check("12.1", " pool ").ok is True
    assert check("12.2", "bfloat16").ok is True and check("12.2", "torch.bfloat16").ok is True
    # without deterministic mode one thread still adds serially: accepted, with that caveat
    verdict = check("12.3", dataclasses.replace(RIGHT["12.3"], deterministic=False))
    assert verdict.ok is True and "only because one thread" in verdict.message


def test_checker_1_names_classes_and_case_without_listing_the_modules():
    for cls in ("SumPerBag", "Standardise", "Sequential", "Linear", "ReLU", "Dropout", "Net"):
        assert "that is a class" in check("12.1", cls).message
    assert "lower-case" in check("12.1", "Pool").message
    assert "pool" not in check("12.1", "pooling").message


def test_checker_3_trains_other_thread_counts_under_deterministic_mode():
    verdict = check("12.3", dataclasses.replace(RIGHT["12.3"], threads=2))
    assert verdict.ok is False
    message = verdict.message
    assert "matches on this machine, but nothing promises it" in message or "bits differ here" in message


def test_wrong_answers_do_not_give_the_answer_away():
    for exercise, answers in WRONG.items():
        for answer in answers:
            message = check(exercise, answer).message
            if exercise == "12.1":
                assert "pool" not in message
            if exercise == "12.2":
                assert "bfloat16" not in message

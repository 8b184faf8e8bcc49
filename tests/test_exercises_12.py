"""Lesson 12's exercise checkers accept right answers, reject wrong ones with a hint, and never raise."""

from __future__ import annotations

import copy
import itertools
import re

import torch

from helpers import check
from helpers.lessons import capstone


def repair(model, state_dict):
    """The solution's repair: the reference's standardisation, and a strict load of every weight."""
    model.standardise = capstone.Standardise(as_buffers=True)
    model.load_state_dict(state_dict)


RIGHT = {
    "12.1": "default_dtype",
    "12.2": {"standardise": "other formula", "pool": "not loaded"},
    "12.3": repair,
}


def only_standardise(model, state_dict):
    model.standardise = capstone.Standardise(as_buffers=True)
    model.standardise.load_state_dict({k.split(".", 1)[1]: v for k, v in state_dict.items()
                                       if k.startswith("standardise.")})


def only_pool(model, state_dict):
    model.pool.weight.data.copy_(state_dict["pool.weight"])


def rebuild(model, state_dict):
    return capstone.load(state_dict)


def stats_only(model, state_dict):
    model.load_state_dict(state_dict)  # loads pool.weight, but standardise keeps the server's formula


def back_to_training(model, state_dict):
    repair(model, state_dict)
    model.train()


def fails(model, state_dict):
    raise RuntimeError("boom")


WRONG = {
    "12.1": ["threads.intra_op", "env.OMP_NUM_THREADS", "deterministic.algorithms", "float64", "dtype",
             "cpu_capability", "deterministic.cudnn_benchmark", "torch.backends.cudnn.benchmark", "", 3],
    "12.2": [
        {"standardise": "other formula"},                       # one found, the other hidden behind it
        {"pool": "not loaded"},
        {"standardise": "not saved", "pool": "not loaded"},     # the walkthrough's cause of standardise
        {"standardise": "not loaded", "pool": "not loaded"},
        {"standardise": "rounded", "pool": "not loaded"},
        {"standardise": "lower precision", "pool": "not loaded"},
        {"standardise": "other formula", "pool": "other formula"},
        {"standardise": "other formula", "pool": "rounded"},
        {"standardise": "other formula", "pool": "not saved"},
        {"standardise": "other formula", "pool": "training mode"},
        {"standardise": "other formula", "pool": "not loaded", "embed.0": "rounded"},
        {"standardise": "other formula", "pool": "not loaded", "head": "not loaded"},
        {"Standardise": "other formula", "pool": "not loaded"},
        {"standardise": "eps", "pool": "not loaded"},
        {"norm": "other formula"},
        {},
        "standardise",
        ["standardise", "pool"],
    ],
    "12.3": [only_standardise, only_pool, rebuild, stats_only, back_to_training, fails, "repair", 1],
}


def test_right_answers_pass():
    for exercise, answer in RIGHT.items():
        verdict = check(exercise, answer)
        assert verdict.ok is True, verdict


def test_right_answers_in_other_spellings():
    for spelling in (" default_dtype ", "torch.set_default_dtype", "set_default_dtype()", "Default dtype"):
        assert check("12.1", spelling).ok is True, spelling
    assert check("12.2", {" pool ": "Not_Loaded", "standardise": "Other-Formula"}).ok is True


def test_wrong_answers_fail_with_a_hint_that_gives_nothing_away():
    for exercise, answers in WRONG.items():
        for answer in answers:
            verdict = check(exercise, answer)
            assert verdict.ok is False, (exercise, answer)
            message = verdict.message
            assert message and "Correct" not in str(verdict)
            if exercise == "12.1":
                assert "default" not in message and "float64" not in message
            if exercise == "12.2":
                assert "sqrt" not in message and "scale" not in message and "strict" not in message
            if exercise == "12.3":
                assert "sqrt" not in message and "pool.weight" not in message


def test_hints_point_at_the_tool_to_use():
    assert "diff_fingerprints" in check("12.1", "threads.intra_op").message
    assert "first_divergence" in check("12.2", {"standardise": "other formula"}).message
    assert "state_dict()" in check("12.2", {"standardise": "not saved", "pool": "not loaded"}).message
    both_formula = {"standardise": "other formula", "pool": "other formula"}
    assert "load_state_dict" in check("12.2", both_formula).message
    assert "inherited" in check("12.2", {"standardise": "other formula", "pool": "not loaded",
                                         "head": "not loaded"}).message
    assert "torch.equal" in check("12.2", {"standardise": "other formula", "pool": "rounded"}).message
    assert "lower-case" in check("12.2", {"Standardise": "other formula"}).message
    assert "first_divergence" in check("12.3", only_standardise).message
    assert "keep the server's modules" in check("12.3", rebuild).message
    assert "confirm it" in check("12.1", "deterministic.cudnn_benchmark").message.lower()
    assert "eval mode" in check("12.3", back_to_training).message
    assert "repair raised RuntimeError: boom" in check("12.3", fails).message


def test_checker_3_does_not_change_the_checkpoint_it_trains_once():
    from helpers.exercises import lesson12

    state = copy.deepcopy(lesson12._checkpoint())

    def vandal(model, state_dict):
        for value in state_dict.values():
            value.zero_()

    assert check("12.3", vandal).ok is False
    assert all(torch.equal(state[k], v) for k, v in lesson12._checkpoint().items())


SERVED_MODULES = ("standardise", "embed", "embed.0", "embed.1", "pool", "drop", "head")


def test_a_wrong_answer_gets_a_reply_made_of_its_causes_only_naming_no_module():
    # a module not at fault and one at fault with a wrong cause, or the right set with a wrong cause:
    # the same reply for the same causes named, and it names no module
    groups = [
        [{"embed.0": "rounded"}, {"pool": "rounded"}, {"standardise": "rounded"},
         {"standardise": "rounded", "pool": "rounded"}, {"head": "rounded", "drop": "rounded"}],
        [{"standardise": "other formula"}, {"pool": "other formula"}, {"embed": "other formula"}],
        [{"standardise": "not loaded", "pool": "other formula"},
         {"head": "not loaded", "embed.1": "other formula"},
         {"standardise": "other formula", "pool": "not loaded", "drop": "not loaded"}],
    ]
    for answers in groups:
        replies = {check("12.2", answer).message for answer in answers}
        assert len(replies) == 1, answers
        (reply,) = replies
        assert "first_divergence" in reply
        assert not any(re.search(rf"\b{re.escape(name)}\b", reply) for name in SERVED_MODULES), reply


def test_a_search_over_sets_of_modules_learns_nothing():
    # without the tools: every set of one and two modules with one cause, in size order, as a blind
    # search would try them; for each cause every reply is the same, whether or not the set is right
    from helpers.exercises import lesson12

    sets = [(m,) for m in SERVED_MODULES] + list(itertools.combinations(SERVED_MODULES, 2))
    for cause in lesson12.CAUSES:
        replies = [check("12.2", {module: cause for module in modules}) for modules in sets]
        assert not any(reply.ok for reply in replies)
        assert len({reply.message for reply in replies}) == 1, cause


def test_checker_3_names_replaced_modules_only_once_the_bits_match():
    message = check("12.3", rebuild).message
    assert all(name in message for name in ("standardise", "embed", "pool", "drop", "head")), message

    def replace_pool(model, state_dict):  # with standardise left as the server has it: the bits differ
        model.pool = capstone.SumPerBag()
        model.load_state_dict(state_dict)

    def replace_embed(model, state_dict):
        model.embed = copy.deepcopy(capstone.load(state_dict).embed)

    assert check("12.3", replace_pool).message == check("12.3", replace_embed).message  # no clue which

    def replace_both(model, state_dict):  # the bits match, but pool was replaced rather than repaired
        reference = capstone.load(state_dict)
        model.standardise, model.pool = reference.standardise, reference.pool

    message = check("12.3", replace_both).message
    assert "you replaced standardise, pool" in message

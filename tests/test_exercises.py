"""Every lesson's exercises: each has right and wrong answers tested, and no answer makes a checker raise.

The cases of lesson NN live in ``tests/test_exercises_NN.py`` (``RIGHT``: one right answer per
exercise; ``WRONG``: wrong and malformed answers), next to ``helpers.exercises.lessonNN``.
"""

import importlib
import math

import numpy as np
import pytest
import torch

from helpers import check
from helpers.exercises import _CHECKERS, KINDS, LESSONS, exercise_ids, kind_of

CASES = {lesson: importlib.import_module(f"tests.test_exercises_{lesson}") for lesson in LESSONS}
RIGHT = {e: a for module in CASES.values() for e, a in module.RIGHT.items()}
WRONG = {e: a for module in CASES.values() for e, a in module.WRONG.items()}


def _raises(*args, **kwargs):
    raise RuntimeError("a bug in the learner's code")


#: Answers no exercise asks for; each checker must see that itself (not through check()'s safety net).
MALFORMED = [
    *(math.nan, math.inf, -math.inf, 10**400, -(10**400), 1 + 2j, b"x", "", object(), {}, [], (None, 1, 2)),
    *(np.float32("nan"), np.array([1.0, 2.0]), torch.zeros(3), torch.full((2, 2), math.nan), torch.empty(0)),
    *(torch.empty((), device="meta"), torch.empty(3, device="meta"), _raises, lambda *a: torch.zeros(1000)),
    *(lambda *a: None, lambda *a: math.nan, torch.nn.Module, type, print),
    *(torch.int64, torch.device("cpu"), {1, 2}, {"a": 1}, (0.5,), "abc", lambda *a, **k: {1, 2}),
]


def test_every_exercise_has_cases_in_its_lessons_test_module():
    assert sorted(RIGHT) == exercise_ids() == sorted(WRONG)
    for lesson, module in CASES.items():
        assert all(e.startswith(f"{lesson}.") for e in (*module.RIGHT, *module.WRONG)), lesson
        assert all(module.WRONG.values()), f"lesson {lesson} has an exercise without wrong answers"


@pytest.mark.parametrize("exercise", sorted(RIGHT))
def test_right_answers_pass(exercise):
    verdict = check(exercise, RIGHT[exercise])
    assert verdict.ok is True and bool(verdict), verdict
    assert str(verdict).startswith(f"Exercise {exercise}: Correct.")


@pytest.mark.parametrize("exercise, answer", [(e, a) for e, answers in WRONG.items() for a in answers])
def test_wrong_answers_explain_themselves(exercise, answer):
    verdict = check(exercise, answer)
    assert verdict.ok is False and not verdict, verdict
    assert "Not yet." in str(verdict) and len(verdict.message) > 20
    assert "could not be checked" not in verdict.message  # the checker foresaw this answer


@pytest.mark.parametrize("exercise", exercise_ids())
def test_malformed_answers_get_a_hint_from_the_checker_itself(exercise):
    checker = _CHECKERS[exercise][1]
    for answer in (None, *MALFORMED):
        ok, message = checker(answer)  # called directly: an exception here fails the test
        assert ok is False, (exercise, answer, message)
        assert isinstance(message, str) and len(message) > 20, (exercise, answer, message)


@pytest.mark.parametrize("exercise", exercise_ids())
def test_unanswered(exercise):
    verdict = check(exercise, None)
    assert verdict.ok is None and "replace None" in str(verdict)


#: An exercise id that is not one: (the id, the exception, a fragment of its message). Answers never raise.
BAD_IDS = [
    ("99.9", ValueError, "unknown exercise '99.9'"),
    ("1.1", ValueError, "did you mean '01.1'?"),
    (" 01.1", ValueError, "did you mean '01.1'?"),
    ("", ValueError, "known: 01.1, "),
    (1.1, TypeError, "exercise must be an id string such as '01.1', not 1.1"),
    (None, TypeError, "not None"),
]


@pytest.mark.parametrize("exercise, error, fragment", BAD_IDS)
def test_an_unknown_exercise_is_refused_and_named(exercise, error, fragment):
    with pytest.raises(error) as raised:
        check(exercise, 1)
    assert fragment in str(raised.value)


REAL_WORK = {"code", "decide", "predict"}  # code, a decision from data, or a committed guess


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lesson_has_an_exercise_that_practises_the_job(lesson):
    kinds = [kind_of(e) for e in exercise_ids() if e.startswith(f"{lesson}.")]
    assert REAL_WORK & set(kinds), f"lesson {lesson}'s exercises are all {sorted(set(kinds))}"
    assert kinds.count("recall") <= len(kinds) // 2, f"recall is the bulk of lesson {lesson}'s exercises"


def test_recall_is_a_few_questions_not_the_bulk():
    kinds = [kind_of(e) for e in exercise_ids()]
    assert kinds.count("recall") <= len(kinds) // 4, f"{kinds.count('recall')} of {len(kinds)} are recall"


def test_kind_of_refuses_what_is_not_an_exercise():
    assert set(map(kind_of, exercise_ids())) <= set(KINDS)
    with pytest.raises(ValueError, match="unknown exercise"):
        kind_of("99.9")


def test_a_verdict_shows_as_a_coloured_box_in_jupyter_and_escapes_the_message():
    from helpers.exercises._common import Verdict

    right, wrong = Verdict("01.1", True, "3 < 4"), Verdict("01.1", False, "<b>not</b> this")
    assert "Correct" in right._repr_html_() and "#d4edda" in right._repr_html_()
    assert "Not yet" in wrong._repr_html_() and "&lt;b&gt;not&lt;/b&gt;" in wrong._repr_html_()
    assert "Not answered yet" in Verdict("01.1", None, "")._repr_html_()

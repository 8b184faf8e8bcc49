"""Self-checking exercises: ``check("01.1", answer)`` says whether an answer is right, and why not.

A wrong answer gets a message that points at the idea to revisit, never just ``False``. An
answer is a learner's attempt, so anything at all may arrive (a wrong type, NaN, a tensor of
the wrong shape, a function that raises): :func:`check` answers it with a :class:`Verdict`,
never an exception. Only an unknown exercise id is an error. Introduced in lesson
``01_floating_point_non_associativity``.

Each lesson's checkers live in a module of their own, ``helpers.exercises.lessonNN``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable

from helpers._validate import describe
from helpers.exercises._common import Verdict
from helpers.exercises.lesson02 import batch_invariance_failures

__all__ = ["KINDS", "Verdict", "batch_invariance_failures", "check", "exercise_ids", "kind_of"]

LESSONS = tuple(f"{n:02d}" for n in range(1, 15))

#: The kinds of exercise, with the label a lesson prints before each one. Recall asks for a fact
#: the lesson states; the others are work: reasoning a value out, predicting a result before the
#: cell that shows it, writing code, deciding from measured data, measuring this machine.
KINDS = {
    "recall": "Recall",
    "work": "Work it out",
    "predict": "Predict, then run",
    "code": "Code",
    "decide": "Decide from data",
    "measure": "Measure",
}

#: Every exercise id mapped to (what an answer is, the checker), gathered from the lesson modules.
_CHECKERS: dict[str, tuple[str, Callable[[object], tuple[bool, str]]]] = {}
#: Every exercise id mapped to its kind, a key of KINDS.
_KIND_OF: dict[str, str] = {}
for _lesson in LESSONS:
    _module = importlib.import_module(f"helpers.exercises.lesson{_lesson}")
    for _id, _entry in _module.CHECKERS.items():
        if not _id.startswith(f"{_lesson}.") or _id in _CHECKERS:
            raise ImportError(f"exercise {_id!r} of lesson{_lesson} is misplaced or repeated")
        _CHECKERS[_id] = _entry
    if sorted(_module.KINDS) != sorted(_module.CHECKERS) or not set(_module.KINDS.values()) <= set(KINDS):
        raise ImportError(f"lesson{_lesson}.KINDS must give one of {sorted(KINDS)} per exercise")
    _KIND_OF.update(_module.KINDS)


def kind_of(exercise: str) -> str:
    """What ``exercise`` asks for: a key of :data:`KINDS` (``"recall"``, ``"code"``, ``"predict"`` ...)."""
    if not isinstance(exercise, str):
        raise TypeError(f"exercise must be an id string such as '01.1', not {describe(exercise)}")
    if exercise not in _KIND_OF:
        raise ValueError(f"unknown exercise {exercise!r}; known: {', '.join(exercise_ids())}")
    return _KIND_OF[exercise]


def exercise_ids() -> list[str]:
    """Every exercise that :func:`check` knows."""
    return sorted(_CHECKERS)


def check(exercise: str, answer: object) -> Verdict:
    """Check ``answer`` to ``exercise`` (an id such as ``"01.1"``) and explain the verdict.

    ``None`` means not answered yet. ``answer`` may be anything a learner tries: whatever it is,
    the result is a :class:`Verdict` (``ok=False`` with a hint for anything that is not a right
    answer, including a function that raises when the checker calls it). Introduced in lesson 01.

    Raises:
        TypeError: ``exercise`` is not a str.
        ValueError: ``exercise`` is not a known id; the message lists the known ones.
    """
    if not isinstance(exercise, str):
        raise TypeError(f"exercise must be an id string such as '01.1', not {describe(exercise)}")
    if exercise not in _CHECKERS:
        close = difflib.get_close_matches(exercise.strip().zfill(4), exercise_ids(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown exercise {exercise!r}{hint}; known: {', '.join(exercise_ids())}")
    question, checker = _CHECKERS[exercise]
    if answer is None:
        return Verdict(exercise, None, f"replace None with {question}.")
    try:
        ok, message = checker(answer)
    except Exception as exc:  # an answer no checker foresaw: still a verdict, never a crash
        return Verdict(
            exercise,
            False,
            f"this answer could not be checked ({type(exc).__name__}: {exc}); answer with {question}.",
        )
    return Verdict(exercise, ok, message)

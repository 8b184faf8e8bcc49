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

__all__ = ["Verdict", "batch_invariance_failures", "check", "exercise_ids"]

LESSONS = tuple(f"{n:02d}" for n in range(1, 14))

#: Every exercise id mapped to (what an answer is, the checker), gathered from the lesson modules.
_CHECKERS: dict[str, tuple[str, Callable[[object], tuple[bool, str]]]] = {}
for _lesson in LESSONS:
    _module = importlib.import_module(f"helpers.exercises.lesson{_lesson}")
    for _id, _entry in _module.CHECKERS.items():
        if not _id.startswith(f"{_lesson}.") or _id in _CHECKERS:
            raise ImportError(f"exercise {_id!r} of helpers.exercises.lesson{_lesson} is misplaced or repeated")
        _CHECKERS[_id] = _entry


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

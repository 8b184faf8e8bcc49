"""The checkers of lesson 09's exercises (Fast CPU inference).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import contextlib
import copy
import io

from helpers._validate import describe


def _row(lever: str, ms: float, error: float) -> dict:
    return {"lever": lever, "ms": ms, "error": error}


#: Hypothetical rows (not measurements), each with error budgets and the right pick; together they
#: catch the fastest lever regardless of error, the most accurate one, the first that fits, the
#: slowest, and a strict comparison with the budget.
_LEVER_CASES = (
    (
        [_row("float32", 10.0, 0.0), _row("bfloat16 autocast", 4.5, 4e-3),
         _row("int8 dynamic", 4.75, 1.5e-2)],
        {1e-2: "bfloat16 autocast", 5e-2: "bfloat16 autocast", 1e-3: "float32", 0.0: "float32"},
    ),
    (
        [_row("bfloat16 autocast", 6.0, 4e-3), _row("float32", 10.0, 0.0), _row("int8 dynamic", 3.0, 1.5e-2),
         _row("int8, reduce_range", 3.5, 3e-2)],
        {2e-2: "int8 dynamic", 1e-2: "bfloat16 autocast", 1.5e-2: "int8 dynamic", 5e-2: "int8 dynamic"},
    ),
    (
        [_row("int8 dynamic", 3.0, 1.5e-2), _row("bfloat16 autocast", 4.0, 4e-3)],
        {1e-3: None, 4e-3: "bfloat16 autocast"},
    ),
)


def _within(rows: list, max_error: float) -> list:
    return [r for r in rows if r["error"] <= max_error]


def _below(rows: list, max_error: float) -> list:
    return [r for r in rows if r["error"] < max_error]


#: Common wrong picks, as functions of (rows, max_error), with the hint for each.
_LEVER_MISTAKES = {
    (lambda rows, e: next((r["lever"] for r in _within(rows, e)), None)): (
        "it took the first lever within the budget: the rows come in no particular order, so look at "
        "every row's ms."
    ),
    (lambda rows, e: min(_below(rows, e), key=lambda r: r["ms"])["lever"] if _below(rows, e) else None): (
        "an error equal to the budget is within it: compare with <=."
    ),
    (lambda rows, e: max(_within(rows, e), key=lambda r: r["ms"])["lever"] if _within(rows, e) else None): (
        "it picked the slowest lever within the budget: ms is the time per call, so smaller is faster."
    ),
}


def _ex_09_1(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function pick(rows, max_error) that returns a lever's name or None."
    found = []  # (what it returned, the right pick, the rows, the budget)
    for rows, budgets in _LEVER_CASES:
        for max_error, right in budgets.items():
            given = copy.deepcopy(rows)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    returned = answer(given, max_error)
            except Exception as exc:  # the learner's function: report any failure as a hint
                return False, f"calling it failed: {type(exc).__name__}: {exc}"
            if given != rows:
                return False, (
                    "pick changed the rows it was given (sorted or edited them): "
                    "leave the caller's data alone."
                )
            if isinstance(returned, dict):
                return False, 'return the lever\'s name (the row\'s "lever"), not the whole row.'
            if not (returned is None or isinstance(returned, str)):
                return False, f"pick must return a lever's name or None; it returned {describe(returned)}."
            found.append((returned, right, rows, max_error))
    wrong = [case for case in found if case[0] != case[1]]
    if not wrong:
        return True, "it keeps the levers within the error budget and takes the fastest of them."
    for mistake, hint in _LEVER_MISTAKES.items():
        if all(returned == mistake(rows, max_error) for returned, _, rows, max_error in found):
            return False, hint
    by_name = lambda rows, name: next((r for r in rows if r["lever"] == name), None)  # noqa: E731
    for returned, right, rows, max_error in wrong:
        chosen = by_name(rows, returned) if returned is not None else None
        if returned is not None and chosen is None:
            return False, (
                f'it returned {returned!r}, which names no row: return the "lever" of the row you pick.'
            )
        if right is None:
            return False, "where no lever is within the error budget, there is nothing to pick: return None."
        if chosen is None:
            if any(r["error"] == max_error for r in rows):
                return False, "an error equal to the budget is within it: compare with <=."
            return False, "it returned None although a lever is within the error budget."
        if chosen["error"] > max_error:
            return False, (
                "it picked a lever whose error is over the budget: "
                "speed counts only among the levers within it."
            )
        if chosen["ms"] > by_name(rows, right)["ms"]:
            if chosen["error"] < by_name(rows, right)["error"]:
                return False, (
                    "it picked a more accurate lever than needed: within the budget, a smaller error buys "
                    "nothing, and the faster lever wins."
                )
            return False, (
                "it picked a lever within the budget, but not the fastest of them (smaller ms is faster)."
            )
    return False, "it picked wrongly in some of the checker's cases."  # not reached


def _ex_09_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of units)."
    if answer in (32640, 32512, -32640):
        return False, "that is one product; the instruction adds two of them before it stores the sum."
    if answer == -65280:
        return False, "the question asks for the magnitude: answer with a positive number."
    if answer != 65280:
        return False, "take the largest unsigned byte (255) and the largest magnitude of a signed byte (128)."
    return True, "65280 = 2 x 255 x 128, about twice the 32767 a signed 16-bit integer holds: it saturates."


def _ex_09_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of units)."
    if answer in (12224, 12033, -12224):
        return False, "that is one product; the instruction adds two of them before it stores the sum."
    if answer in (8192, 8064, 7938):
        return False, "torchao adds 128 to every activation first: which bytes can they become?"
    if answer == 24066:
        return False, "the weights reach -64 as well as 63: which gives the larger magnitude?"
    if answer == -24448:
        return False, "the question asks for the magnitude: answer with a positive number."
    if answer != 24448:
        return False, "shift -64...63 by 128 for the largest byte, and take the largest weight magnitude."
    return True, "24448 = 2 x 191 x 64, below 32767: the 16-bit sum cannot saturate."


CHECKERS = {
    "09.1": ("a function pick(rows, max_error) returning a lever's name or None", _ex_09_1),
    "09.2": ("the largest magnitude of a pair of u8 x s8 products", _ex_09_2),
    "09.3": ("the largest magnitude of a pair of products with reduce_range", _ex_09_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "09.1": "decide",
    "09.2": "work",
    "09.3": "work",
}

"""Lesson 09's exercise checkers accept right answers and reject wrong ones with a hint."""

from helpers import check
from helpers.exercises.lesson09 import _LEVER_CASES


def _pick(rows, max_error):
    within = [row for row in rows if row["error"] <= max_error]
    return min(within, key=lambda row: row["ms"])["lever"] if within else None


def _fastest(rows, max_error):
    return min(rows, key=lambda row: row["ms"])["lever"]


def _most_accurate(rows, max_error):
    return min(rows, key=lambda row: row["error"])["lever"]


def _first_within(rows, max_error):
    return next((row["lever"] for row in rows if row["error"] <= max_error), None)


def _strict(rows, max_error):
    within = [row for row in rows if row["error"] < max_error]
    return min(within, key=lambda row: row["ms"])["lever"] if within else None


def _slowest(rows, max_error):
    within = [row for row in rows if row["error"] <= max_error]
    return max(within, key=lambda row: row["ms"])["lever"] if within else None


def _sorts_in_place(rows, max_error):
    rows.sort(key=lambda row: row["ms"])
    return _pick(rows, max_error)


def _no_none(rows, max_error):
    return min([row for row in rows if row["error"] <= max_error], key=lambda row: row["ms"])["lever"]


def _returns_row(rows, max_error):
    within = [row for row in rows if row["error"] <= max_error]
    return min(within, key=lambda row: row["ms"]) if within else None


RIGHT = {
    "09.1": _pick,
    "09.2": 65280,
    "09.3": 24448,
}
WRONG = {
    "09.1": [
        _fastest, _most_accurate, _first_within, _strict, _slowest, _sorts_in_place, _no_none, _returns_row,
        lambda rows, e: "float32", lambda rows, e: 0, lambda rows: None, "bfloat16 autocast", 4,
    ],
    "09.2": [32640, -65280, 32767, 2 * 255 * 127, "65280", 65280.0],
    "09.3": [12224, 12033, 8192, 24066, -24448, 32767, "24448", 24448.0],
}


def test_09_1_cases_agree_with_the_rule_the_prompt_states():
    assert all(_pick(rows, e) == right for rows, budgets in _LEVER_CASES for e, right in budgets.items())


def test_09_1_names_each_common_mistake():
    hints = {
        _fastest: "over the budget",
        _most_accurate: "more accurate",
        _first_within: "no particular order",
        _strict: "<=",
        _slowest: "smaller is faster",
        _sorts_in_place: "leave the caller's data alone",
        _no_none: "calling it failed",
        _returns_row: "not the whole row",
    }
    for answer, hint in hints.items():
        verdict = check("09.1", answer)
        assert verdict.ok is False and hint in verdict.message, verdict


def test_09_1_hints_name_no_lever():
    for answer in WRONG["09.1"]:
        message = check("09.1", answer).message
        assert "bfloat16" not in message and "int8 dynamic" not in message, message


def test_09_1_names_a_strict_comparison_with_the_budget():
    assert "<=" in check("09.1", _strict).message

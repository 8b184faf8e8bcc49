"""Lesson 08's exercise checkers accept right answers and reject wrong ones with a hint."""

from helpers import check


RIGHT = {
    "08.1": lambda n: 2 * n**3,
    "08.2": 1 / 12,
    "08.3": 1,
    "08.4": 16384,
    "08.5": 8,
}
WRONG = {
    "08.1": [lambda n: n**3, lambda n: 2 * n**2, lambda: 1, 2],
    "08.2": [1 / 8, 1 / 4, 12, "1/12"],
    "08.3": [2, 0, "1", True],
    "08.4": [2**24, 3 * 16384, 4096, 16385, 16384.0, "16384", True],
    "08.5": [12, 4, 16, 8.0, "8", True],
}


def test_08_1_accepts_the_exact_count_too():
    verdict = check("08.1", lambda n: 2 * n**3 - n**2)
    assert verdict.ok is True and "exact count" in str(verdict)

"""The checkers of lesson 08's exercises (CPU vs GPU performance): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import math

import torch

from helpers._validate import describe
from helpers.exercises._common import as_float, as_number, equal, is_number


def _ex_08_1(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function of n, for example lambda n: n**2."
    try:
        values = {n: answer(n) for n in (1, 2, 10, 512)}
    except Exception as exc:  # the learner's function: report any failure as a hint
        return False, f"calling it failed: {type(exc).__name__}: {exc}"
    if all(equal(v, 2 * n**3) for n, v in values.items()):
        return True, "2 n^3: n^2 dot products of n multiply-adds each."
    if all(equal(v, 2 * n**3 - n**2) for n, v in values.items()):
        return True, (
            "2 n^3 - n^2 is the exact count (n multiplications and n - 1 additions per dot product); "
            "FLOP counts round it to 2 n^3, the figure the lesson's rates use."
        )
    if all(equal(v, n**3) for n, v in values.items()):
        return False, "n**3 counts the multiplications only; each term is also added."
    odd = [v for v in values.values() if as_number(v) is None]
    if odd:
        return False, f"the function must return a number of FLOPs; it returned {describe(odd[0])}."
    return (
        False,
        "each of the n*n results is a dot product of n terms: n multiplications and about n additions.",
    )


def _ex_08_2(answer: object) -> tuple[bool, str]:
    if not is_number(answer):
        return False, "answer with a number."
    answer = as_float(answer)
    if math.isclose(answer, 1 / 8) or math.isclose(answer, 1 / 4):
        return False, "count every byte moved: two float32 reads and one float32 write."
    if not math.isclose(answer, 1 / 12, rel_tol=1e-3):
        return False, "one FLOP per element; bytes per element = 3 values x 4 bytes."
    return True, "1/12 FLOP per byte: far below any machine's ridge point, so memory-bound everywhere."


def _ex_08_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of threads)."
    if answer != 1:
        return False, "see section 8.1: Timer does not use torch.get_num_threads() by default."
    return (
        True,
        "one thread, so that results compare across machines; pass num_threads to measure your setting.",
    )


def _ex_08_4(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of page faults)."
    if answer == 2**24:
        return False, "that counts elements: a page holds 4096 bytes, and each float32 takes 4 of them."
    if answer == 3 * 2**24 * 4 // 4096:
        return False, "only the result is new memory: a and b were written when they were created."
    if answer == 2**24 * 4 // 4096 + 1:
        return False, (
            "that is what section 8.3 counted, with the result starting 64 bytes into a page: "
            "the least is asked."
        )
    if answer != 2**24 * 4 // 4096:
        return False, "divide the bytes of the new result by the bytes of a page."
    return True, (
        "16384: 64 MiB of new result in 4 KiB pages, each faulting on its first write "
        "when no huge pages are used."
    )


def _ex_08_5(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of bytes)."
    if answer == 12:
        return False, "a appears twice in the expression but is one tensor: it is read once."
    if answer == 4:
        return False, "the result c is written to memory too."
    if answer != 8:
        return False, "count the distinct float32 tensors (4 bytes each) that are read or written."
    return True, "8: a read once, c written once; counting 12 makes the GB/s 1.5 times too high."


CHECKERS = {
    "08.1": ("a function of n giving the FLOPs of an n x n matrix product", _ex_08_1),
    "08.2": ("the arithmetic intensity of a + b in float32", _ex_08_2),
    "08.3": ("the number of threads Timer uses by default", _ex_08_3),
    "08.4": ("the least number of page faults of one call, in 4 KiB pages", _ex_08_4),
    "08.5": ("the bytes per element that c = a + a moves", _ex_08_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "08.1": "code",
    "08.2": "work",
    "08.3": "recall",
    "08.4": "work",
    "08.5": "work",
}

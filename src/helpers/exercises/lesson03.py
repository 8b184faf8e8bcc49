"""The checkers of lesson 03's exercises (Reduced precision).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import math

import torch

from helpers.exercises._common import as_float, as_number


def _ex_03_1(answer: object) -> tuple[bool, str]:
    answer = as_number(answer)  # a one-element tensor, as torch.tensor(...).bfloat16() gives, is a number too
    if answer is None:
        return False, "answer with a number."
    if answer == 257:
        return False, "bfloat16 keeps 8 significant bits, and 257 = 0b100000001 needs 9."
    if answer == 258:
        return False, "257 lies exactly halfway between 256 and 258: which way do ties go in IEEE 754?"
    if answer != 256:
        return False, "round 257 to 8 significant bits (7 stored): the neighbours are 256 and 258."
    return True, "257 is a tie between 256 and 258, and ties go to the even mantissa: 256."


def _ex_03_2(answer: object) -> tuple[bool, str]:
    answer = as_number(answer)  # a one-element tensor, as torch.tensor(...).bfloat16() gives, is a number too
    if answer is None:
        return False, "answer with a number."
    if answer == 65535 or answer == 65536:
        return False, (
            "float16's exponent tops out at 2^15 and it keeps 11 significant bits: (2 - 2^-10) * 2^15."
        )
    if answer != 65504:
        return False, "look at torch.finfo(torch.float16).max, then explain it with the bit layout."
    return True, "(2 - 2^-10) * 2^15 = 65504: anything from 65520 up rounds to inf."


def _ex_03_3(answer: object) -> tuple[bool, str]:
    number = as_number(answer)
    if number is None:
        return False, "answer with a positive number."
    answer = as_float(number)
    if not math.isfinite(answer) or answer <= 0:
        return False, "answer with a positive, finite number."
    if abs(answer - 2.0**-10) <= 1e-12:
        return False, (
            "that is the gap between 1 and the next TF32 value (epsilon); the unit roundoff is half of it."
        )
    if abs(answer / 2.0**-11 - 1) > 1e-3:
        return False, (
            "TF32 stores 10 mantissa bits: the gap above 1.0 is 2^-10, and rounding to nearest errs by at "
            "most half a gap."
        )
    return True, "u = 2^-11 = 4.88e-4, the same as float16 and 8192 times float32's."


def _ex_03_4(answer: object) -> tuple[bool, str]:
    import numbers

    import numpy as np

    hint = "answer with a positive number: the relative error as a fraction (0.05 for 5%)."
    if isinstance(answer, (bool, str)):
        return False, hint
    if (
        (isinstance(answer, numbers.Complex) and not isinstance(answer, numbers.Real))
        or (isinstance(answer, torch.Tensor) and answer.is_complex())
        or (isinstance(answer, np.ndarray) and np.iscomplexobj(answer))
    ):  # float() would drop the imaginary part of a NumPy complex
        return False, "a relative error is a real number; " + hint
    try:
        value = float(answer)
    except (TypeError, ValueError, OverflowError, RuntimeError):  # RuntimeError: a tensor of many values
        return False, hint
    if not math.isfinite(value) or value <= 0:
        return False, hint
    allowed = (1e-5 + 1.3e-6 * 1e-4) / 1e-4  # (atol + rtol * |expected|) / |expected|, float32's defaults
    if abs(value / (100 * allowed) - 1) <= 0.01:
        return False, "that is a percentage; give the fraction (0.05 for 5%)."
    if abs(value / 1.3e-6 - 1) <= 0.01:
        return False, "that is rtol alone; at |expected| = 1e-4 the fixed atol = 1e-5 allows far more."
    if abs(value / 1e-5 - 1) <= 0.01:
        return False, "that is atol, an absolute error; divide what assert_close allows by |expected| = 1e-4."
    if abs(value / allowed - 1) > 0.01:
        return False, (
            "assert_close allows |actual - expected| <= atol + rtol * |expected|; with float32's defaults "
            "(rtol 1.3e-6, atol 1e-5), divide that by |expected| = 1e-4."
        )
    return True, (
        "(1e-5 + 1.3e-6 * 1e-4) / 1e-4 = 0.1000013: at |expected| = 1e-4 float32's defaults accept a 10% "
        "error, because below atol / rtol = 7.7 the fixed atol decides."
    )


def _ex_03_5_cases() -> dict[str, torch.Tensor]:
    """Exercise 03.5's inputs: 1-D float16 tensors whose running sums stay below float16's largest value."""
    g = torch.Generator().manual_seed(5)
    tiny_after_large = torch.full((32769,), 2.0**-9, dtype=torch.float16)
    tiny_after_large[0] = 32768.0  # 2^-9 is half float32's gap at 32768: a float32 accumulator drops it
    return {
        "10,000 numbers in [0, 1)": torch.rand(10_000, generator=g).half(),
        "32768 followed by 32,768 values of 2^-9": tiny_after_large,
        "5,000 numbers of both signs": (100 * torch.randn(5_000, generator=g, dtype=torch.float64)).half(),
        "one number": torch.tensor([3.0], dtype=torch.float16),
    }


def _ex_03_5(answer: object) -> tuple[bool, str]:
    import numpy as np

    from helpers._validate import describe
    from helpers.floats import ulp_distance

    if not callable(answer):
        return False, "answer with a function running_total(x) that returns a float16 tensor shaped like x."
    for name, x in _ex_03_5_cases().items():
        exact = x.double().cumsum(0)  # exact: multiples of 2^-24 that stay below 2^29
        rounded = torch.from_numpy(exact.numpy().astype(np.float16))  # NumPy rounds float64 to float16 once
        given = x.clone()
        try:
            result = answer(given)
        except Exception as exc:  # the learner's function: report any failure as a hint
            return False, f"calling running_total on {name} failed: {type(exc).__name__}: {exc}"
        if not isinstance(result, torch.Tensor) or result.is_meta:
            return False, f"running_total must return a float16 tensor; it returned {describe(result)}."
        if result.layout != torch.strided:
            return False, f"running_total must return a dense tensor; it returned a {result.layout} one."
        if result.shape != x.shape:
            return False, (
                f"for {name} (shape {tuple(x.shape)}) it returned shape {tuple(result.shape)}: a running "
                "total has one value per element, the sum of that element and all before it."
            )
        if result.dtype != torch.float16:
            return False, (
                f"it returned {str(result.dtype).replace('torch.', '')}: the caller expects float16 values, "
                "so round the finished running sums once to float16 at the end."
            )
        if not torch.equal(given, x):
            return False, "it changed its input in place; leave x as it was and return a new tensor."
        distance = ulp_distance(result.detach().cpu(), rounded) if not result.isnan().any() else None
        if distance is None or int(distance.max()) > 1:
            last = result[-1].item()
            if name.startswith("10,000") and last == 2048.0:  # where a float16 running sum stalls
                return False, (
                    f"for {name} your last running sum is {last:g}, the exact one {exact[-1].item():.2f}: "
                    "the running sum stops growing at 2048. Where is it kept while it is summed (section "
                    "3.7)?"
                )
            if name.startswith("32768") and last == 32768.0:  # what a float32 accumulator ends at
                return False, (
                    f"for {name} your last running sum is {last:g}, the exact one {exact[-1].item():g}, two "
                    "float16 gaps away. Each 2^-9 is half of float32's gap at 32768 and rounds away in a "
                    "float32 accumulator, but 32,768 of them add up to 64. The accumulator needs more "
                    "significant bits than that (torch.cumsum of a float16 tensor accumulates in float32 on "
                    "the CPU)."
                )
            worst = int(distance.argmax()) if distance is not None else int(result.isnan().nonzero()[0])
            return False, (
                f"for {name} some running sums are more than one float16 value away from the exact ones "
                f"rounded to float16: at element {worst} yours is {result[worst].item():g}, the exact one "
                f"{exact[worst].item():g}. Is element i the sum x[0] + ... + x[i], is every addition made in "
                "a type with enough bits, and is the result rounded to float16 only at the end?"
            )
    return True, (
        "at most one float16 value away from the exact running sums rounded to float16, on every input, "
        "including one where a float32 accumulator falls two float16 values behind. (If you converted x to "
        "float32 and called torch.cumsum, it passed because on the CPU a float32 cumsum accumulates in "
        "float64, its CPU accumulate type.)"
    )


CHECKERS = {
    "03.1": ("the value of 257 rounded to bfloat16", _ex_03_1),
    "03.2": ("the largest finite float16 value", _ex_03_2),
    "03.3": ("the unit roundoff of TF32 (a float)", _ex_03_3),
    "03.4": ("the relative error float32's defaults accept at |expected| = 1e-4 (a fraction)", _ex_03_4),
    "03.5": ("a function running_total(x) returning x's running sums as float16, accurate", _ex_03_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "03.1": "work",
    "03.2": "recall",
    "03.3": "work",
    "03.4": "work",
    "03.5": "code",
}

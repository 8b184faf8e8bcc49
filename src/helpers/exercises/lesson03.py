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
    number = as_number(answer)  # a one-element tensor or a NumPy scalar is a number too
    if number is None:
        return False, "answer with a positive number: how many times TF32's error bfloat16's is."
    ratio = as_float(number)
    if not math.isfinite(ratio) or ratio <= 0:
        return False, "answer with a positive, finite number: how many times TF32's error bfloat16's is."
    if abs(ratio - 3) <= 0.05:
        return False, (
            "3 is how many mantissa bits bfloat16 has fewer than TF32. The question asks for the ratio of "
            "the errors: what does one mantissa bit fewer do to the gap between neighbouring values?"
        )
    if abs(ratio - 0.9) <= 0.05:
        return False, "that is the difference in decimal digits; the question asks how many times larger."
    if abs(ratio * 8 - 1) <= 0.05:
        return False, "that is TF32's error relative to bfloat16's; the question asks the other way round."
    if abs(ratio - 10 / 7) <= 0.05 or abs(ratio - 1) <= 0.05:
        return False, (
            "the rounding error of an input is proportional to its format's unit roundoff u, not to the "
            "number of bits: compare u for TF32 and bfloat16 (section 3.1's table)."
        )
    if abs(ratio - 64) <= 1:
        return False, (
            "each product adds the two inputs' rounding errors, and the entry adds K such terms: the error "
            "scales with u itself, not with u squared."
        )
    if abs(ratio - 8) > 0.5:
        return False, (
            "the error of such a product is about 0.6 u for either format (this section's opening): "
            "how many times bfloat16's u is TF32's?"
        )
    return True, (
        "u is 2^-8 for bfloat16 and 2^-11 for TF32, so the error is 2^3 = 8 times larger: 3 bits, about "
        "0.9 of a decimal digit. The input rounding decides the error, and it scales with u."
    )


def _ex_03_3(answer: object) -> tuple[bool, str]:
    ask = 'answer with a pair of numbers, (float16 result, float32 result); write infinity as float("inf").'
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return False, ask
    in_half, in_float = (as_number(v) for v in answer)  # one-element tensors are numbers too
    too_large = [v for v in (in_half, in_float) if isinstance(v, int) and abs(v) >= 2**1024]
    if in_half is None or in_float is None or too_large:
        return False, ask  # an integer too large for a float is not float16's inf
    in_half, in_float = as_float(in_half), as_float(in_float)
    exact = (300.0**2 + 999) / 1000  # 90.999, which float16 and float32 both hold to their precision
    if math.isnan(in_half) or math.isnan(in_float):
        return False, (
            "no step here is 0/0 or inf - inf, so no NaN appears. Square each element first: which of "
            "the squares does each format hold?"
        )
    if in_half != math.inf:
        if in_half == -math.inf:
            return False, "every square is positive, so the float16 mean cannot be negative."
        if abs(in_half - exact) <= 0.1:
            return False, (
                "for float16 that is the exact mean, and float16 could hold it. But the mean is taken of "
                "the squares, computed one by one in float16: what is 300 * 300 there?"
            )
        if in_half == 65504:
            return False, (
                "float16 does not stop at its largest value: what does it do with a result beyond it? "
                "Section 3.5's first cell shows one."
            )
        return False, (
            "for float16, square each element in float16 first: which of the squares fits (section 3.1's "
            "table), and what does the mean of the squares become?"
        )
    if not math.isfinite(in_float):
        return False, "float32's largest value is about 3.4e38: do the squares overflow there?"
    if abs(in_float - exact) > 0.01:
        return False, "in float32 every square fits: the mean is (300^2 + 999 * 1^2) / 1000."
    return True, (
        "300 * 300 = 90000 is beyond float16's largest value, 65504, so that square rounds to inf, and the "
        "mean of numbers that include inf is inf, although the true mean, 90.999, fits in float16 easily. "
        "Only the intermediate overflowed: in float32 the same code gives 90.999."
    )


def _ex_03_4_cases() -> dict[str, torch.Tensor]:
    """Exercise 03.4's inputs: 1-D float16 tensors whose running sums stay below float16's largest value."""
    g = torch.Generator().manual_seed(5)
    tiny_after_large = torch.full((32769,), 2.0**-9, dtype=torch.float16)
    tiny_after_large[0] = 32768.0  # 2^-9 is half float32's gap at 32768: a float32 accumulator drops it
    return {
        "10,000 numbers in [0, 1)": torch.rand(10_000, generator=g).half(),
        "32768 followed by 32,768 values of 2^-9": tiny_after_large,
        "5,000 numbers of both signs": (100 * torch.randn(5_000, generator=g, dtype=torch.float64)).half(),
        "one number": torch.tensor([3.0], dtype=torch.float16),
    }


def _ex_03_4(answer: object) -> tuple[bool, str]:
    import numpy as np

    from helpers._validate import describe
    from helpers.floats import ulp_distance

    if not callable(answer):
        return False, "answer with a function running_total(x) that returns a float16 tensor shaped like x."
    for name, x in _ex_03_4_cases().items():
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


def _ex_03_5(answer: object) -> tuple[bool, str]:
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


CHECKERS = {
    "03.1": ("the value of 257 rounded to bfloat16", _ex_03_1),
    "03.2": ("how many times TF32's error bfloat16's is, for the same product (a number)", _ex_03_2),
    "03.3": ("(v * v).mean() for 999 ones and one 300, in float16 and in float32 (a pair)", _ex_03_3),
    "03.4": ("a function running_total(x) returning x's running sums as float16, accurate", _ex_03_4),
    "03.5": ("the relative error float32's defaults accept at |expected| = 1e-4 (a fraction)", _ex_03_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "03.1": "work",
    "03.2": "predict",
    "03.3": "predict",
    "03.4": "code",
    "03.5": "work",
}

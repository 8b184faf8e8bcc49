"""The checkers of lesson 03's exercises (Reduced precision).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import math

import torch

from helpers.exercises._common import as_float, as_number


def _ex_03_1(answer: object) -> tuple[bool, str]:
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


def _ex_03_2_cases() -> dict[str, torch.Tensor]:
    """Exercise 03.2's inputs: 1-D float16 tensors whose running sums stay below float16's largest value."""
    g = torch.Generator().manual_seed(5)
    tiny_after_large = torch.full((32769,), 2.0**-9, dtype=torch.float16)
    tiny_after_large[0] = 32768.0  # 2^-9 is half float32's gap at 32768: a float32 accumulator drops it
    return {
        "10,000 numbers in [0, 1)": torch.rand(10_000, generator=g).half(),
        "32768 followed by 32,768 values of 2^-9": tiny_after_large,
        "5,000 numbers of both signs": (100 * torch.randn(5_000, generator=g, dtype=torch.float64)).half(),
        "one number": torch.tensor([3.0], dtype=torch.float16),
    }


def _ex_03_2(answer: object) -> tuple[bool, str]:
    import numpy as np

    from helpers._validate import describe
    from helpers.floats import ulp_distance

    if not callable(answer):
        return False, "answer with a function running_total(x) that returns a float16 tensor shaped like x."
    for name, x in _ex_03_2_cases().items():
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
    "03.1": ("(v * v).mean() for 999 ones and one 300, in float16 and in float32 (a pair)", _ex_03_1),
    "03.2": ("a function running_total(x) returning x's running sums as float16, accurate", _ex_03_2),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "03.1": "predict",
    "03.2": "code",
}

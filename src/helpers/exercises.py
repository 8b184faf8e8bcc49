"""Self-checking exercises: ``check("01.1", answer)`` says whether an answer is right, and why not.

A wrong answer gets a message that points at the idea to revisit, never just ``False``. An
answer is a learner's attempt, so anything at all may arrive (a wrong type, NaN, a tensor of
the wrong shape, a function that raises): :func:`check` answers it with a :class:`Verdict`,
never an exception. Only an unknown exercise id is an error. Introduced in lesson
``01_floating_point_non_associativity``.
"""

from __future__ import annotations

import difflib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch

from helpers._validate import check_int, check_str, describe

__all__ = ["Verdict", "batch_invariance_failures", "check", "exercise_ids"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one answer: ``ok`` is True, False, or None (not answered yet)."""

    exercise: str
    ok: bool | None
    message: str

    def __post_init__(self) -> None:
        check_str(self.exercise, "exercise")
        if self.ok is not None and not isinstance(self.ok, bool):
            raise TypeError(f"ok must be True, False or None, got {describe(self.ok)}")
        check_str(self.message, "message")

    def __str__(self) -> str:
        label = {True: "Correct", False: "Not yet", None: "Not answered yet"}[self.ok]
        return f"Exercise {self.exercise}: {label}. {self.message}"

    __repr__ = __str__

    def __bool__(self) -> bool:
        return bool(self.ok)


def _f32(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.float32)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _as_float(value: int | float) -> float:
    """A Python number as a float; an int too large for one becomes +-inf (never OverflowError)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _truth(value: object) -> bool | None:
    """``bool(value)`` for what a learner's function returned; None where it has no single truth value."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # bool(NotImplemented) is deprecated: no truth value either
            return bool(value)
    except Exception:  # a tensor of many values, an object whose __bool__ raises
        return None


def _equal(value: object, expected: object) -> bool:
    """``value == expected`` as a bool; False where the comparison raises or has no single truth value."""
    try:
        return bool(value == expected)
    except Exception:
        return False


def _ex_01_number(value: object) -> int | float | None:
    """A Python int or float for a number, a NumPy scalar or a one-element real tensor; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, torch.Tensor):
        # a meta tensor has a shape and a dtype but no values
        if value.numel() != 1 or value.dtype == torch.bool or value.is_complex() or value.is_meta:
            return None
        return value.item()
    import numpy as np

    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return None


def _ex_01_f32(value: int | float) -> torch.Tensor:
    """``value`` rounded once to float32 (an int of any size too: beyond float32's range it becomes inf)."""
    from helpers.floats import round_to_nearest

    return _f32(round_to_nearest(value, torch.float32))


def _ex_01_triple(answer: object) -> tuple[list[int | float] | None, str]:
    """Three numbers from a tuple or list, or None and what is wrong with the answer."""
    if not (isinstance(answer, (tuple, list)) and len(answer) == 3):
        return None, "answer with a tuple of three numbers (a, b, c)."
    values = [_ex_01_number(v) for v in answer]
    if any(v is None for v in values):
        return None, "answer with a tuple of three numbers (Python numbers or one-element tensors)."
    return values, ""


def _ex_01_finite_f32(answer: object, why: str = "") -> tuple[list[torch.Tensor] | None, str]:
    """The three numbers of an answer as float32 scalars, or None and what is wrong with the answer."""
    values, problem = _ex_01_triple(answer)
    if values is None:
        return None, problem
    rounded = [_ex_01_f32(v) for v in values]
    if not all(bool(torch.isfinite(v)) for v in rounded):
        return None, f"use finite float32 values{why}."
    return rounded, ""


def _ex_01_1(answer: object) -> tuple[bool, str]:
    n = _ex_01_number(answer)
    if not isinstance(n, int) or n <= 0:
        return False, "answer with a positive Python int."
    if n > 2**24:
        shown = str(n) if n < 10**20 else f"that {len(str(n))}-digit number"
        return False, f"{shown} + 1 == {shown} in float32 indeed, but a smaller integer already does it."
    f = _f32(float(n))  # exact: every positive int up to 2**24 is a float32
    if bool(f + 1 != f):
        return False, (
            f"float32 still tells {n} + 1 from {n}: the gap between neighbouring "
            f"floats there is {float(torch.nextafter(f, _f32(float('inf'))) - f):g}. Look for the "
            "first integer where that gap reaches 2 (think of the 24-bit significand)."
        )
    return True, "2**24 = 16777216: from there on the gap between float32 neighbours is 2."


def _ex_01_2(answer: object) -> tuple[bool, str]:
    values, problem = _ex_01_finite_f32(answer, " (inf and NaN make the point for the wrong reason)")
    if values is None:
        return False, problem
    a, b, c = values
    if sorted(float(v) for v in (a, b, c)) == sorted([1e8, -1e8, 1.0]):
        return False, (
            "those are section 1.1's numbers (in some order); find three of your own. Try 1.0 and two "
            "values small enough that 1.0 + each one rounds back to 1.0."
        )
    left, right = (a + b) + c, a + (b + c)
    if bool(torch.isnan(left)) or bool(torch.isnan(right)):
        return False, "one grouping gives NaN (inf - inf); pick values that stay finite."
    if bool(left == right):
        return False, (
            f"both groupings give {float(left)!r}. Try one large value and two small ones whose "
            "sum survives only when they are added to each other first."
        )
    return True, f"(a+b)+c = {float(left)!r} but a+(b+c) = {float(right)!r} in float32."


def _ex_01_3(answer: object) -> tuple[bool, str]:
    value = _ex_01_number(answer)
    if value is None:
        return False, "answer with a Python float."
    if value == 2.0**-14:  # an exact comparison, also for ints of any size
        return True, "1000 lies in [512, 1024) = [2^9, 2^10), so its ULP is 2^(9-23) = 2^-14."
    return False, (
        "the ULP of a float32 in [2^e, 2^(e+1)) is 2^(e-23), a power of two; "
        "find e for 1000, or check with helpers.ulp(torch.tensor(1000.0))."
    )


def _ex_01_4(answer: object) -> tuple[bool, str]:
    choices = ("sequential", "pairwise", "kahan")
    if not isinstance(answer, str) or answer.strip().lower() not in choices:
        return False, f"answer with one of {', '.join(repr(c) for c in choices)}."
    if answer.strip().lower() == "kahan":
        return True, "Kahan's bound, (2u + O(n u^2)) * sum|x_i|, does not grow with n to first order."
    return False, (
        "that bound grows with n (n - 1 for sequential, log2 n for pairwise); "
        "which method carries the lost low-order bits along?"
    )


def _ex_01_5(answer: object) -> tuple[bool, str]:
    from fractions import Fraction

    from helpers.floats import round_to_nearest

    values, problem = _ex_01_finite_f32(answer)
    if values is None:
        return False, problem
    a, b, c = values
    if [float(v) for v in (a, b, c)] == [1 + 2**-12, 1 + 2**-12, -(1 + 2**-11)]:
        return False, (
            "that is section 1.7's example; find your own a, b, c. Section 1.7 explains which bits the "
            "product's rounding drops."
        )
    separate = (a * b + c).item()  # two roundings: the product, then the sum
    fused = round_to_nearest(Fraction(a.item()) * Fraction(b.item()) + Fraction(c.item()), torch.float32)
    if separate == fused:
        if math.isinf(fused):
            return False, "both overflow to inf; pick values whose exact a*b + c fits in float32's range."
        return False, (
            f"both give {separate!r}: rounding the product did not change the final result. Pick a and b "
            "whose exact product needs more than 24 significant bits, and c close to -(a * b), so that the "
            "bits the product's rounding drops decide the answer (section 1.7)."
        )
    if math.isinf(separate) or math.isinf(fused):
        return True, (
            f"a*b + c rounded twice gives {separate!r}, rounded once gives {fused!r}: one overflows where "
            "the other does not. A fused multiply-add has no rounded product in between that could overflow."
        )
    return True, (
        f"a*b + c rounded twice gives {separate!r}; rounded once, as a fused multiply-add does, "
        f"it gives {fused!r}."
    )


def _ex_02_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool) or answer <= 0:
        return False, "answer with a positive Python int."
    if answer == 2**20 - 1:
        return False, (
            "that is the chain of a loop, one addition after another; a tree halves the count at each level."
        )
    if answer != 20:
        return False, (
            "each level of the tree adds neighbours in pairs and halves the count: "
            "how many halvings from 2^20 to 1?"
        )
    return True, "20 levels: a tree's longest chain grows like log2(n), a loop's like n - 1."


def _ex_02_2(answer: object) -> tuple[bool, str]:
    hint = "answer with the three indices 0, 1 and 2 in some order, as a list."
    if not (isinstance(answer, (list, tuple)) and len(answer) == 3):
        return False, hint
    values = [_ex_01_number(v) for v in answer]  # ints, or numbers and one-element tensors equal to them
    if any(v is None for v in values) or sorted(values) != [0, 1, 2]:
        return False, hint
    x = torch.tensor([1e8, 1.0, -1e8])[[int(v) for v in values]]
    total = ((x[0] + x[1]) + x[2]).item()  # float32 additions, left to right
    if total != 1.0:
        return False, (
            f"that order gives {total}: the 1.0 is lost when it meets 1e8 first (the ULP of 1e8 is 8)."
        )
    return True, "adding the two large values first cancels them exactly, and the 1.0 survives."


def batch_invariance_failures(max_n: int = 16) -> list[int]:
    """The n in 1..max_n for which ``a[:n] @ b`` differs bitwise from ``(a @ b)[:n]`` here.

    ``a`` is 256 x 1024 and ``b`` 1024 x 1024, ``torch.rand`` with seed 0. Exercise 02.3's answer,
    which depends on the machine. ``max_n`` is an int from 1 to 256 (``a``'s rows). Introduced
    in lesson 02.
    """
    check_int(max_n, "max_n", min=1, max=256)
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(256, 1024, generator=g), torch.rand(1024, 1024, generator=g)
    full = a @ b
    return [n for n in range(1, max_n + 1) if not torch.equal(a[:n] @ b, full[:n])]


def _ex_02_3(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, (list, tuple)) and all(isinstance(n, int) for n in answer)):
        return False, "answer with a list of ints, for example [1, 2, 3]."
    expected = batch_invariance_failures()
    if sorted(answer) != expected:
        missing, extra = sorted(set(expected) - set(answer)), sorted(set(answer) - set(expected))
        return False, (
            f"on this machine the list differs (missing: {missing}, not failing here: {extra}). "
            "Compare with torch.equal, not with a tolerance, and use exactly the a and b given."
        )
    return True, f"on this machine a[:n] @ b differs from (a @ b)[:n] for n in {expected}."


def _ex_03_1(answer: object) -> tuple[bool, str]:
    if not _is_number(answer):
        return False, "answer with a number."
    if answer == 257:
        return False, "bfloat16 keeps 8 significant bits, and 257 = 0b100000001 needs 9."
    if answer == 258:
        return False, "257 lies exactly halfway between 256 and 258: which way do ties go in IEEE 754?"
    if answer != 256:
        return False, "round 257 to 8 significant bits (7 stored): the neighbours are 256 and 258."
    return True, "257 is a tie between 256 and 258, and ties go to the even mantissa: 256."


def _ex_03_2(answer: object) -> tuple[bool, str]:
    if not _is_number(answer):
        return False, "answer with a number."
    if answer == 65535 or answer == 65536:
        return False, (
            "float16's exponent tops out at 2^15 and it keeps 11 significant bits: (2 - 2^-10) * 2^15."
        )
    if answer != 65504:
        return False, "look at torch.finfo(torch.float16).max, then explain it with the bit layout."
    return True, "(2 - 2^-10) * 2^15 = 65504: anything from 65520 up rounds to inf."


def _ex_03_3(answer: object) -> tuple[bool, str]:
    if not _is_number(answer):
        return False, "answer with a positive number."
    answer = _as_float(answer)
    if not math.isfinite(answer) or answer <= 0:
        return False, "answer with a positive, finite number."
    if abs(answer - 2.0**-10) <= 1e-12:
        return False, (
            "that is the gap between 1 and the next TF32 value (epsilon); the unit roundoff is half of it."
        )
    if abs(answer / 2.0**-11 - 1) > 1e-3:
        return False, (
            "TF32 stores 10 mantissa bits: the gap above 1.0 is 2^-10, and rounding to nearest "
            "errs by at most half a gap."
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


def _ex_04_1(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str):
        return False, "answer with the class itself, without quotes (for example ValueError)."
    if not (isinstance(answer, type) and issubclass(answer, BaseException)):
        return False, "answer with an exception class, such as ValueError."
    if answer is not RuntimeError:
        return (
            False,
            "run Tensor.put_ under deterministic mode (section 4.4) and look at the exception's type.",
        )
    return True, "RuntimeError, whose message says '... does not have a deterministic implementation'."


def _ex_04_2(answer: object) -> tuple[bool, str]:
    import numbers

    if isinstance(answer, torch.Tensor) and answer.numel() == 1 and not answer.is_meta:
        answer = answer.item()  # a one-element tensor, such as torch.empty(1), stands for its value
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return False, "answer with a float (float('nan') and float('inf') are floats too)."
    try:
        value = float(answer)  # any real number: int, float, numpy.float32, Fraction
    except (OverflowError, ValueError, TypeError):
        return False, "that number does not fit in a float; look at torch.empty(4) in section 4.3."
    if not math.isnan(value):
        return False, "look at torch.empty(4) inside deterministic_mode() in section 4.3."
    return True, "NaN: reading it by mistake poisons every result, so the mistake shows instead of varying."


def _ex_04_3(answer: object) -> tuple[bool, str]:
    if not (
        isinstance(answer, (tuple, list)) and len(answer) == 2 and all(isinstance(a, str) for a in answer)
    ):
        return False, "answer with a tuple of two strings: (name, value)."
    name, value = answer[0].strip(), answer[1].strip()
    if name != "CUBLAS_WORKSPACE_CONFIG":
        return False, "the variable is named after the library it configures, in capitals (section 4.3)."
    if value in ("4096:8", "16:8"):
        return False, "the leading colon is part of the value (the check compares whole strings)."
    if value == ":16:8":
        return False, "':16:8' passes the check too, with less memory; the message names another value first."
    if value != ":4096:8":
        return False, (
            "the value is ':<size in KiB>:<number of buffers>'; which value does the message name first?"
        )
    return True, (
        "CUBLAS_WORKSPACE_CONFIG=:4096:8, in the environment before Python starts: those releases read it "
        "once, at the first CUDA matrix product; pull request #161749 removed the check (PyTorch 2.10 and "
        "later have none)."
    )


def _ex_04_4(answer: object) -> tuple[bool, str]:
    choices = {"one thread", "float64", "reseed"}
    if not (isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a set of strings chosen from {sorted(choices)}."
    given = {a.strip().lower() for a in answer}
    if not given <= choices:
        return False, f"use only these names: {sorted(choices)}."
    if "reseed" in given:
        return False, "the inputs are already the same tensors in every run: what would a seed change?"
    if given != {"one thread", "float64"}:
        return False, "section 4.1 names every condition under which the kernel adds atomically."
    return True, (
        "either one takes ATen's serial loop (atomics only for float32, on more than one thread, "
        "with 32,768 entries or more)."
    )


def _ex_05_1(answer: object) -> tuple[bool, str]:
    choices = {"torch cpu", "torch cuda", "python random", "numpy"}
    if not (isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a set of strings chosen from {sorted(choices)}."
    given = {a.strip().lower() for a in answer}
    if not given <= choices:
        return False, f"use only these names: {sorted(choices)}."
    if given & {"python random", "numpy"}:
        return False, "section 5.1 draws from random and NumPy after torch.manual_seed: did they repeat?"
    if given != {"torch cpu", "torch cuda"}:
        return (
            False,
            "torch.manual_seed reaches more than one of PyTorch's generators: read section 5.1 again.",
        )
    return True, "the CPU generator and every CUDA device's; random and NumPy need their own seeds."


def _ex_05_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, torch.Generator):
        return False, "answer with a torch.Generator object, for example torch.Generator()."
    if answer.device.type != "cpu":
        return False, "make it a CPU generator (the default device)."
    if answer.initial_seed() != 42:
        return False, f"its seed is {answer.initial_seed()}: call .manual_seed(42) on it."
    if not torch.equal(answer.get_state(), torch.Generator().manual_seed(42).get_state()):
        return False, "it is seeded with 42 but something has already drawn from it."
    return True, "torch.Generator().manual_seed(42): pass it as generator= to any random function."


def _ex_05_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool) or not 0 <= answer <= 4:
        return False, "answer with a column number from 0 to 4."
    if answer == 0:
        return False, "column 0 is the item's index, which is not random at all."
    if answer != 4:
        return (
            False,
            "the DataLoader seeds that source in every worker; "
            "which generator did the dataset create itself?",
        )
    return True, "column 4: the dataset's own numpy Generator, copied into every worker in the same state."


def _ex_05_4(answer: object) -> tuple[bool, str]:
    choices = {"rand(1000)", "randn(1000)", "randn(8)"}
    if not (isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a set of strings chosen from {sorted(choices)}."
    given = {a.strip().replace("torch.", "").replace(" ", "") for a in answer}
    if not given <= choices:
        return False, f"use only these names: {sorted(choices)}."
    if "rand(1000)" in given:
        return False, "torch.rand takes no log, sin or cos: it scales integers by 2**-24, exactly."
    if "randn(8)" in given:
        return False, (
            "fewer than 16 elements take the scalar path, which calls the C library's log1p, sin and cos "
            "with and without AVX2."
        )
    if given != {"randn(1000)"}:
        return False, "section 5.2 ran the same seeded draws in a second process: which one differed?"
    return True, (
        "randn of 16 or more float32 elements: with AVX2, PyTorch uses its own vectorised log, sin and "
        "cos; without AVX2, the C library's."
    )


def _ex_06_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer True or False."
    if answer is not True:
        return (
            False,
            "Tensor.to copies only when the device or dtype changes: run the line and test with `is`.",
        )
    return (
        True,
        "nothing changes, so Tensor.to returns the tensor itself; in-place edits show through both names.",
    )


def _ex_06_2(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, type) and issubclass(answer, torch.nn.Module)):
        return False, "answer with a subclass of torch.nn.Module (the class, not an instance)."
    try:
        module = answer().to("meta")
    except Exception as exc:  # the learner's code: report any failure as a hint
        return (
            False,
            f"building it with no arguments and moving it to 'meta' failed: {type(exc).__name__}: {exc}",
        )
    offset = getattr(module, "offset", None)
    if not isinstance(offset, torch.Tensor) or offset.shape != (3,):
        return False, "the module needs a tensor attribute `offset` of shape (3,)."
    if offset.device.type != "meta":
        return False, "offset did not move with the module: a plain attribute is invisible to .to()."
    if "offset" in module.state_dict():
        return False, "offset moves now, but it is saved in the state_dict: use persistent=False."
    return True, "self.register_buffer('offset', torch.zeros(3), persistent=False): moved, not saved."


def _ex_06_3(answer: object) -> tuple[bool, str]:
    steps = {"load weights", "move model", "build optimizer"}
    if not (isinstance(answer, (list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a list of the three steps: {sorted(steps)}."
    given = [a.strip().lower() for a in answer]
    if sorted(given) != sorted(steps):
        return False, f"use each of these once: {sorted(steps)}."
    if given[-1] != "build optimizer":
        return (
            False,
            "the optimizer's state is created on its parameters' device: what must be true before that?",
        )
    return (
        True,
        "the optimizer comes last (loading before or after the move both work, since loading copies in).",
    )


def _ex_06_4(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer with True or False (a bool, not a string or a number)."
    if not answer:
        return (
            False,
            "_apply assigns fn(buf) to every buffer, but is that a new tensor here? "
            "Look at num_batches_tracked's dtype and at which tensors .double() converts.",
        )
    return (
        True,
        "num_batches_tracked is int64 and .double() converts only floating-point tensors, "
        "so fn(buf) returns the buffer itself and `n` still names it.",
    )


def _ex_07_1(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str) and answer.strip().lower() == "cpu":
        return True, "map_location='cpu' (or torch.device('cpu')): every storage goes to the CPU."
    if isinstance(answer, torch.device) and answer.type == "cpu":
        return True, "torch.device('cpu') (or just 'cpu'): every storage goes to the CPU."
    if isinstance(answer, str) and answer.strip().lower().startswith("cuda"):
        return False, "that is where the storages already want to go; redirect them to the other device."
    return False, "answer with a device: a string such as 'cuda:0', or a torch.device."


def _ex_07_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with a string."
    if answer == "_orig_mod":
        return False, "almost: the dot that joins it to the next name is part of the prefix."
    if answer == "module.":
        return False, "that is the DataParallel/DDP prefix; torch.compile uses another one."
    if answer != "_orig_mod.":
        return (
            False,
            "print the keys of compiled.state_dict() in section 7.4 and compare them with the plain model's.",
        )
    return True, "consume_prefix_in_state_dict_if_present(state, '_orig_mod.') strips it in place."


def _ex_07_3(answer: object) -> tuple[bool, str]:
    import torch.serialization as ser

    if isinstance(answer, str):
        return (
            False,
            "answer with the function itself, for example torch.serialization.some_name, without quotes.",
        )
    if answer is ser.add_safe_globals:
        return (
            False,
            "that one allows the class for the rest of the process; "
            "the question asks for the context manager.",
        )
    if answer is not ser.safe_globals:
        return (
            False,
            "look at section 7.3: the function takes a list of classes and is used in a with statement.",
        )
    return True, "with torch.serialization.safe_globals([RunConfig]): torch.load(path)."


def _ex_07_4(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the keyword argument's name, as a string (in quotes)."
    name = answer.strip()
    if name == "assign":
        return (
            True,
            "load_state_dict(state, assign=True): the loaded tensors become the parameters, "
            "so build the optimizer afterwards.",
        )
    if name.replace(" ", "") == "assign=True":
        return False, "almost: answer with the name alone, without =True."
    if name == "strict":
        return False, "strict decides whether every key must match; here all keys matched and nothing loaded."
    if name in ("mmap", "map_location", "weights_only"):
        return False, "that is an argument of torch.load; the fix is an argument of load_state_dict."
    return (
        False,
        "look at section 7.5: the argument that replaces each parameter instead of copying into it.",
    )


def _ex_07_5(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer with True or False (a bool, not a string or a number)."
    if answer:
        return (
            False,
            "look at section 7.3: what do PyTorch's own serialization notes say weights_only=True "
            "does not guard against, even in releases with every published fix?",
        )
    return (
        True,
        "PyTorch's serialization notes say weights_only=True narrows the surface of remote code execution "
        "but does not guard against denial of service, and memory corruption might still be possible; "
        "for untrusted files use a format without code, such as safetensors.",
    )


def _ex_08_1(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function of n, for example lambda n: n**2."
    try:
        values = {n: answer(n) for n in (1, 2, 10, 512)}
    except Exception as exc:  # the learner's function: report any failure as a hint
        return False, f"calling it failed: {type(exc).__name__}: {exc}"
    if all(_equal(v, 2 * n**3) for n, v in values.items()):
        return True, "2 n^3: n^2 dot products of n multiply-adds each."
    if all(_equal(v, 2 * n**3 - n**2) for n, v in values.items()):
        return True, (
            "2 n^3 - n^2 is the exact count (n multiplications and n - 1 additions per dot product); "
            "FLOP counts round it to 2 n^3, the figure the lesson's rates use."
        )
    if all(_equal(v, n**3) for n, v in values.items()):
        return False, "n**3 counts the multiplications only; each term is also added."
    odd = [v for v in values.values() if _ex_01_number(v) is None]
    if odd:
        return False, f"the function must return a number of FLOPs; it returned {describe(odd[0])}."
    return (
        False,
        "each of the n*n results is a dot product of n terms: n multiplications and about n additions.",
    )


def _ex_08_2(answer: object) -> tuple[bool, str]:
    if not _is_number(answer):
        return False, "answer with a number."
    answer = _as_float(answer)
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


def _ex_09_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of threads)."
    if answer == 4:
        return False, "both variables are set: which one takes precedence (section 9.2)?"
    if answer != 2:
        return False, "PyTorch reads the variables at start-up: look at the precedence table in section 9.2."
    return True, "2: MKL_NUM_THREADS takes precedence over OMP_NUM_THREADS; set_num_threads beats both."


def _ex_09_2(answer: object) -> tuple[bool, str]:
    if not _is_number(answer):
        return False, "answer with a number."
    if answer == 0.25:
        return (
            False,
            "that is the size of the result relative to float32; "
            "the question asks by what factor it shrinks.",
        )
    if answer != 4:
        return False, "float32 takes 4 bytes per value, int8 one byte."
    return True, "4x: one byte per weight instead of four."


def _ex_09_3(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str):
        return False, "answer with the function itself, without quotes."
    if answer is torch.no_grad:
        return (
            False,
            "no_grad stops recording, but its results can enter autograd later; which one forbids that?",
        )
    if answer is not torch.inference_mode:
        return False, "section 9.3 compares two context managers: the answer is the stricter one."
    return (
        True,
        "torch.inference_mode: tensors made inside it are inference tensors, cheaper and autograd-proof.",
    )


def _ex_09_4(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of units)."
    if answer in (32640, 32512, -32640):
        return False, "that is one product; the instruction adds two of them before it stores the sum."
    if answer == -65280:
        return False, "the question asks for the magnitude: answer with a positive number."
    if answer != 65280:
        return False, "take the largest unsigned byte (255) and the largest magnitude of a signed byte (128)."
    return True, "65280 = 2 x 255 x 128, about twice the 32767 a signed 16-bit integer holds: it saturates."


def _ex_09_5(answer: object) -> tuple[bool, str]:
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


def _ex_10_1(answer: object) -> tuple[bool, str]:
    from helpers.compare import reduction_tolerances

    if not _is_number(answer):
        return False, "answer with a float, such as 1e-6."
    answer = _as_float(answer)
    expected, _ = reduction_tolerances(torch.float32, 1024)
    if math.isclose(answer, 1.3e-6):
        return False, "that is the default; for K = 1024 the K-dependent term is larger."
    if not math.isclose(answer, expected, rel_tol=1e-3):
        return False, "rtol = max(1.3e-6, 4 * u * sqrt(K)) with u = 2**-24 for float32 and K = 1024."
    return True, f"4 * 2**-24 * 32 = {expected:.3g}: about six times the float32 default."


def _ex_10_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str) or answer.strip().lower() not in ("weights", "accuracies"):
        return False, 'answer "weights" or "accuracies".'
    if answer.strip().lower() == "weights":
        return (
            False,
            "look at the left plot of section 10.1: what happens to the distance between the weights?",
        )
    return True, "the weights drift apart exponentially; the metrics stay close, so compare runs by metrics."


def _ex_10_3(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function f(actual, expected) that returns True or False."
    g = torch.Generator().manual_seed(10)
    results = []
    for _ in range(3):
        a, b = torch.randn(32, 256, generator=g), torch.randn(256, 32, generator=g)
        expected = a.double() @ b.double()
        try:
            good = answer(a @ b, expected)
            bad, subtle = answer((a @ b) * 1.01, expected), answer((a @ b) * 1.001, expected)
        except Exception as exc:  # the learner's function: report any failure as a hint
            if "did not match" in str(exc):
                return False, (
                    f"calling f failed ({type(exc).__name__}: {exc}): actual is float32 and expected "
                    "float64, and torch.allclose wants one dtype; compare in float64."
                )
            return False, f"calling f failed: {type(exc).__name__}: {exc}"
        for returned in (good, bad, subtle):
            if _truth(returned) is None:
                return False, f"f must return True or False (one per call); it returned {describe(returned)}."
        results.append((_truth(good), _truth(bad), _truth(subtle)))
    if not all(good for good, _, _ in results):
        return (
            False,
            "f rejected a correct float32 result: is the tolerance built for K = 256 with the right scale?",
        )
    if any(bad for _, bad, _ in results):
        return False, "f accepted a result with a 1% error: the tolerance is too loose."
    if any(subtle for _, _, subtle in results):
        return False, (
            "f rejects a 1% error but accepts a 0.1% one: a fixed 1e-3 is far looser than rounding in a "
            "256-term float32 sum needs. Size the tolerance from K (section 10.2)."
        )
    return True, "it accepts every correct order and rejects errors of 1% and 0.1%: a test with teeth."


def _ex_13_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str) or answer.strip().lower() not in ("matmul", "conv", "convolution"):
        return False, 'answer "matmul" or "conv".'
    if answer.strip().lower() == "matmul":
        return False, "section 13.2: which TF32 setting is on by default, cuda.matmul's or cudnn.conv's?"
    return True, (
        "a convolution: torch.backends.cudnn.conv.fp32_precision is 'tf32' by default (cudnn.allow_tf32 "
        "in the older API), while float32 matrix products keep float32 unless TF32 is switched on."
    )


def _ex_13_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the argument's name, as a string."
    if answer.strip() == "weights_only":
        return False, "weights_only decides what may be unpickled, not where storages go."
    if answer.strip() != "map_location":
        return False, "section 13.12 (and lesson 07): the argument that redirects storages to another device."
    return True, "torch.load(path, map_location='cpu')."


def _ex_13_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer True or False."
    if answer:
        return (
            False,
            "deterministic mode fixes each kernel's order; "
            "does the thread count change the order (lesson 04)?",
        )
    return True, "no guarantee: the thread count decides how the sum is split, deterministic mode or not."


def _ex_11_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of indices)."
    if answer == 2:
        return False, "that drops the remainder (drop_last=True); without it the sampler pads every share."
    if answer != 3:
        return False, "10 items over 4 ranks: each share is rounded up, and the missing indices are repeated."
    return True, "ceil(10 / 4) = 3 each, 12 in all: two samples are seen twice per epoch."


def _ex_11_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with a rank number (an int)."
    if answer != 0:
        return False, "section 11.5 checks which rank's parameters survive the wrapping."
    return True, "rank 0's: DDP broadcasts them (and the buffers) when it wraps the model."


def _ex_11_3(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the method's name as a string."
    if answer.strip().rstrip("()") != "set_epoch":
        return False, "section 11.5, rule 2: the method takes the epoch number."
    return True, "sampler.set_epoch(epoch): the shuffle is seeded with seed + epoch."


def _ex_11_4(answer: object) -> tuple[bool, str]:
    choices = {2, 3, 4, 6, 8}
    if not (
        isinstance(answer, (set, frozenset, list, tuple))
        and all(isinstance(a, int) and not isinstance(a, bool) for a in answer)
    ):
        return False, f"answer with a set of ints chosen from {sorted(choices)}."
    given = set(answer)
    if not given <= choices:
        return False, f"use only these world sizes: {sorted(choices)}."
    if given & {2, 4, 8}:
        return False, (
            "for normal numbers, multiplying by 1/2, 1/4 or 1/8 only changes the exponent: "
            "section 11.3 has 2 and 4 agree."
        )
    if given != {3, 6}:
        return False, "is 1/world_size a float32 number for every world size left? Try 1/6 = 1/2 * 1/3."
    return True, (
        "3 and 6: float32(1/3) and float32(1/6) are rounded, so dividing first rounds differently "
        "(near overflow or subnormal numbers, 2, 4 and 8 can differ too: section 11.3)."
    )


def _ex_11_5(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the argument's name as a string."
    name = answer.strip().rstrip("=").strip()
    if name == "worker_init_fn":
        return False, "it runs in each worker after seeding; which argument is the base seed drawn from?"
    if name != "generator":
        return False, (
            "section 11.5: the base seed comes from one DataLoader argument, or else the global generator."
        )
    return True, (
        "generator=torch.Generator().manual_seed(seed + rank): the base seed, so each worker's, differs."
    )


_NET_MODULES = ("standardise", "embed", "embed.0", "embed.1", "pool", "drop", "head")
_NET_CLASSES = ("SumPerBag", "Standardise", "Sequential", "Linear", "ReLU", "Dropout", "Net")


def _ex_12_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with a module's name in capstone.Net, as a string (as named_modules() gives it)."
    name = answer.strip()
    if name == "pool":
        return True, (
            "pool (SumPerBag): index_put_(accumulate=True) on float32 adds atomically from several "
            "threads (lesson 04), so its result depends on the thread count, and on timing."
        )
    if name not in _NET_MODULES and name.lower() in (c.lower() for c in _NET_CLASSES):
        return False, "that is a class, give the module's name as named_modules() prints it."
    if name.lower() in _NET_MODULES and name not in _NET_MODULES:
        return False, "names are lower-case, as named_modules() prints them."
    if name in ("embed", "embed.0", "head"):
        return False, (
            "a Linear layer's matrix product may depend on the thread count with some BLAS libraries, "
            "but the source in section 12.1 has a kernel that adds from several threads at once (lesson 04)."
        )
    if name in ("standardise", "embed.1", "drop"):
        return False, "that module works element by element: no output is a sum, so no thread count changes an order."
    return False, "capstone.Net has no module of that name; list them with capstone.Net(capstone.A).named_modules()."


def _ex_12_2(answer: object) -> tuple[bool, str]:
    from helpers.capstone import NoisyBags

    if not callable(answer):
        return False, "answer with a function make_dataset(seed) that returns a capstone.NoisyBags."
    with torch.random.fork_rng(devices=[]):  # whatever the function draws, the caller's generator is untouched
        try:
            torch.manual_seed(1)
            before = torch.get_rng_state()
            first = answer(7)
            reseeds = not torch.equal(torch.get_rng_state(), before)
            torch.manual_seed(2)
            torch.rand(5)  # something else draws before the second call
            again, other = answer(7), answer(8)
        except Exception as exc:  # the learner's function: report any failure as a hint
            return False, f"calling make_dataset(7) failed: {type(exc).__name__}: {exc}"
    for dataset in (first, again, other):
        if not isinstance(dataset, NoisyBags) or not isinstance(getattr(dataset, "items", None), torch.Tensor):
            return False, f"make_dataset must return a capstone.NoisyBags; it returned {describe(dataset)}."
    if reseeds:
        return False, (
            "it draws from, or reseeds, the global generator: every later draw of the program (initial "
            "weights, dropout) then depends on the dataset. Give the dataset a generator of its own."
        )
    if not _equal(first.items.shape, again.items.shape) or not torch.equal(first.items, again.items):
        return False, (
            "two datasets built with seed 7 differ once something else drew in between: "
            "their noise still depends on the global generator (section 12.3)."
        )
    if torch.equal(first.items, other.items):
        return False, "seeds 7 and 8 give the same noise: the seed must reach the dataset's generator."
    return True, "NoisyBags(torch.Generator().manual_seed(seed)): the noise depends on the seed alone."


def _ex_12_3(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str):
        name = answer.strip().lower().removeprefix("torch.")
    elif isinstance(answer, torch.dtype):
        name = str(answer).removeprefix("torch.")
    else:
        return False, "answer with a torch.dtype, such as torch.float32."
    if name in ("bfloat16", "bf16"):
        return True, (
            "bfloat16: B's forward runs under autocast, and first_divergence judges each module against "
            "the rounding of the coarser of the two dtypes, so an error that bfloat16 explains passes."
        )
    if name in ("float32", "float"):
        return False, (
            "float32's tolerance for K = 8 is near 1e-6, as in the rows that differ by nothing; "
            "embed.0's tolerance is far larger. Which dtype does a Linear return under Net.forward's autocast?"
        )
    if name in ("float16", "half"):
        return False, (
            "compare embed.0's tolerance with 4·sqrt(K)·u for K = 8 and float16's unit roundoff u "
            "(lesson 03): they do not match. Which dtype's u gives the row's tolerance?"
        )
    return False, "answer with the torch.dtype whose rounding the tolerance of embed.0 allows for."


def _ex_12_4(answer: object) -> tuple[bool, str]:
    import dataclasses

    from helpers import capstone

    if not isinstance(answer, capstone.Config):
        return False, "answer with a capstone.Config, for example dataclasses.replace(C, ...)."
    a_fixed = dataclasses.replace(
        capstone.A, deterministic=True, data_seed=0, stats_as_buffers=True, eval_after_load=True
    )
    if answer.from_checkpoint is not True:
        return False, "the server must keep loading the checkpoint (from_checkpoint=True): fix what goes wrong there."
    if not (_equal(answer.seed, a_fixed.seed) and _equal(answer.steps, a_fixed.steps)):
        return False, "the seed of the initial weights and the number of steps must be A_fixed's too."
    if answer.data_seed is None:
        return False, "section 12.3: C's noise still comes from the global generator."
    if not _equal(answer.data_seed, a_fixed.data_seed):
        return False, "a generator of its own is right, but seeded unlike A_fixed's, so C's data differ from A's."
    if answer.stats_as_buffers is not True or answer.eval_after_load is not True:
        return False, "section 12.4: first_divergence would still name a module of C's reloaded model."
    if answer.bf16 is not False:
        return False, "section 12.4: one part of C's forward pass still runs in another precision."
    same_threads = _equal(answer.threads, a_fixed.threads)
    if not same_threads and answer.deterministic is not True:
        return False, (
            "section 12.3: on several threads without deterministic mode, the pool's atomic additions "
            "land in an order that can change from run to run."
        )
    ours, theirs = capstone.train(a_fixed), capstone.train(answer)
    equal = ours.losses == theirs.losses and torch.equal(ours.predictions, theirs.predictions)
    if not same_threads:
        if equal:
            return False, (
                "it matches on this machine, but nothing promises it across thread counts: deterministic "
                "mode fixes each kernel's order for one thread count (section 12.5). Use A_fixed's."
            )
        return False, (
            "section 12.2's fingerprint diff would still have rows: with another thread count, "
            "the order of some sums differs, and the bits differ here (section 12.5)."
        )
    if not equal:
        return False, "every setting matches, yet the bits differ here: please report this."
    if answer.deterministic is not True:
        return True, (
            "the same bits, but deterministic=False matches here only because one thread adds serially; "
            "set deterministic=True, as A_fixed does, so that the order does not rest on that."
        )
    return True, "the same code, seed, data and settings as A_fixed: the same bits, served from the checkpoint."


_CHECKERS: dict[str, tuple[str, Callable[[object], tuple[bool, str]]]] = {
    "01.1": ("the smallest positive integer n with float32(n) + 1 == float32(n)", _ex_01_1),
    "01.2": ("three float32 numbers (a, b, c) with (a + b) + c != a + (b + c)", _ex_01_2),
    "01.3": ("the float32 ULP of 1000.0", _ex_01_3),
    "01.4": ("the summation order whose error bound does not grow with n", _ex_01_4),
    "01.5": ("three float32 numbers (a, b, c) whose fused a*b + c differs from a * b + c", _ex_01_5),
    "02.1": ("the number of levels of a tree reduction of 2**20 numbers", _ex_02_1),
    "02.2": ("a list of indices that orders [1e8, 1.0, -1e8] so that a loop gives exactly 1.0", _ex_02_2),
    "02.3": ("the list of n in 1..16 for which a[:n] @ b != (a @ b)[:n] on this machine", _ex_02_3),
    "03.1": ("the value of 257 rounded to bfloat16", _ex_03_1),
    "03.2": ("the largest finite float16 value", _ex_03_2),
    "03.3": ("the unit roundoff of TF32 (a float)", _ex_03_3),
    "03.4": ("the relative error float32's defaults accept at |expected| = 1e-4 (a fraction)", _ex_03_4),
    "04.1": ("the exception class raised where no deterministic implementation exists", _ex_04_1),
    "04.2": ("the float that fills torch.empty under deterministic mode", _ex_04_2),
    "04.3": ("a tuple (name, value) for deterministic cuBLAS", _ex_04_3),
    "04.4": ("a set of the changes that make the CPU sum repeat itself", _ex_04_4),
    "05.1": ("a set of the generators torch.manual_seed seeds", _ex_05_1),
    "05.2": ("a torch.Generator seeded with 42", _ex_05_2),
    "05.3": ("the column that repeats across DataLoader workers", _ex_05_3),
    "05.4": ("a set of the draws computed with other log, sin and cos without AVX2", _ex_05_4),
    "06.1": ("True or False", _ex_06_1),
    "06.2": ("a module class whose offset moves but is not saved", _ex_06_2),
    "06.3": ("the three steps in order", _ex_06_3),
    "06.4": ("True or False", _ex_06_4),
    "07.1": ("the map_location that loads onto the CPU", _ex_07_1),
    "07.2": ("the prefix torch.compile adds to state_dict keys", _ex_07_2),
    "07.3": ("the torch.serialization function that allows a class within a with block", _ex_07_3),
    "07.4": ("the name of load_state_dict's keyword argument, as a string", _ex_07_4),
    "07.5": ("True or False", _ex_07_5),
    "08.1": ("a function of n giving the FLOPs of an n x n matrix product", _ex_08_1),
    "08.2": ("the arithmetic intensity of a + b in float32", _ex_08_2),
    "08.3": ("the number of threads Timer uses by default", _ex_08_3),
    "08.4": ("the least number of page faults of one call, in 4 KiB pages", _ex_08_4),
    "08.5": ("the bytes per element that c = a + a moves", _ex_08_5),
    "09.1": ("the number of intra-op threads", _ex_09_1),
    "09.2": ("the factor by which int8 shrinks float32 weights", _ex_09_2),
    "09.3": ("the context manager that also forbids later autograd use", _ex_09_3),
    "09.4": ("the largest magnitude of a pair of u8 x s8 products", _ex_09_4),
    "09.5": ("the largest magnitude of a pair of products with reduce_range", _ex_09_5),
    "10.1": ("the rtol for float32 and K = 1024", _ex_10_1),
    "10.2": ('"weights" or "accuracies"', _ex_10_2),
    "10.3": ("a function f(actual, expected) returning True or False", _ex_10_3),
    "11.1": ("the number of indices per rank", _ex_11_1),
    "11.2": ("the rank whose parameters DDP broadcasts", _ex_11_2),
    "11.3": ("the DistributedSampler method to call every epoch", _ex_11_3),
    "11.4": ("a set of the world sizes where dividing first can change the bits", _ex_11_4),
    "11.5": ("the DataLoader argument that sets the workers' base seed", _ex_11_5),
    "13.1": ('"matmul" or "conv"', _ex_13_1),
    "13.2": ("the name of torch.load's argument, as a string", _ex_13_2),
    "13.3": ("True or False", _ex_13_3),
    "12.1": ("the name of the module whose result depends on the thread count", _ex_12_1),
    "12.2": ("a function make_dataset(seed) returning a capstone.NoisyBags", _ex_12_2),
    "12.3": ("the torch.dtype whose tolerance first_divergence used for embed.0", _ex_12_3),
    "12.4": ("a capstone.Config for the server C", _ex_12_4),
}


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

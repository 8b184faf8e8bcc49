"""The exercise checkers accept right answers, reject wrong ones with a useful message."""

import numpy as np
import pytest
import torch

from helpers import check
from helpers.exercises import batch_invariance_failures, exercise_ids


def _drawn_from(g: torch.Generator) -> torch.Generator:
    torch.rand(1, generator=g)
    return g


class _OffsetBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.zeros(3), persistent=False)


class _OffsetSaved(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.zeros(3))


class _OffsetAttribute(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.offset = torch.zeros(3)


def _tolerant_check(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    from helpers.compare import reduction_tolerances

    rtol, atol = reduction_tolerances(torch.float32, 256, scale=expected.abs().mean().item())
    return bool(torch.allclose(actual.double(), expected, rtol=rtol, atol=atol))


RIGHT = {
    "01.1": 2**24,
    "01.2": (2.0**24, 1.0, 1.0),  # 1 + 1 survives only when added first: section 1.3's are rejected
    "01.3": 2.0**-14,
    "01.4": "Kahan",
    "01.5": (24929.0, 673.0, 2.0**-40),  # 24929 * 673 = 2**24 + 1, a tie that c breaks only when fused
    "02.1": 20,
    "02.2": [0, 2, 1],
    "02.3": batch_invariance_failures(),  # machine-dependent: the checker recomputes it here
    "03.1": 256.0,
    "03.2": 65504,
    "03.3": 2.0**-11,
    "03.4": (1e-5 + 1.3e-6 * 1e-4) / 1e-4,
    "04.1": RuntimeError,
    "04.2": float("nan"),
    "04.3": ("CUBLAS_WORKSPACE_CONFIG", ":4096:8"),
    "04.4": {"one thread", "float64"},
    "05.1": {"torch cpu", "torch cuda"},
    "05.2": torch.Generator().manual_seed(42),
    "05.3": 4,
    "05.4": {"randn(1000)"},
    "06.1": True,
    "06.2": _OffsetBuffer,
    "06.3": ["load weights", "move model", "build optimizer"],
    "06.4": True,
    "07.1": "cpu",
    "07.2": "_orig_mod.",
    "07.3": torch.serialization.safe_globals,
    "07.4": "assign",
    "07.5": False,
    "08.1": lambda n: 2 * n**3,
    "08.2": 1 / 12,
    "08.3": 1,
    "08.4": 16384,
    "08.5": 8,
    "09.1": 2,
    "09.2": 4,
    "09.3": torch.inference_mode,
    "09.4": 65280,
    "09.5": 24448,
    "10.1": 4 * 2.0**-24 * 32,
    "10.2": "accuracies",
    "10.3": _tolerant_check,
    "13.1": "conv",
    "13.2": "map_location",
    "13.3": False,
    "11.1": 3,
    "11.2": 0,
    "11.3": "set_epoch",
    "11.4": {3, 6},
    "11.5": "generator",
}
WRONG = {
    "01.1": [2**24 - 1, 2**24 + 2, -3, "16777216", 1.5, 10**400, torch.empty((), device="meta")],
    "01.2": [
        (1.0, 2.0, 3.0),
        (1.0, 2.0),
        ("a", "b", "c"),
        (1e38, 1e38, -1e38),
        (float("inf"), 1.0, 1.0),
        (1e8, -1e8, 1.0),  # section 1.3's own numbers
        (-1e8, 1.0, 1e8),  # ... in another order
        (10**400, 1, 1),  # float() of this int would raise OverflowError
        (torch.ones(2), 1.0, 1.0),
        (torch.empty((), device="meta"), 1.0, 1.0),  # a meta tensor has no value
    ],
    "01.3": [1000 * 2.0**-23, "x", 2.0**-13, 10**400, torch.ones(2), torch.empty((), device="meta")],
    "01.4": ["pairwise", "sequential", "fastest", 4],
    "01.5": [
        (1.0, 2.0, 3.0),
        (1 + 2**-12, 1 + 2**-12, 0.0),
        (1e30, 1e30, 0.0),
        (1.0, 2.0),
        (float("inf"), 1.0, 1.0),
        (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11)),  # section 1.7's own example
        (10**400, 1, 1),  # float() of this int would raise OverflowError
        (2.0**127 * 1.5, 2.0, 2.0**127),  # both roundings overflow
        (torch.empty((), device="meta"), 1.0, 1.0),
    ],
    "02.1": [2**20 - 1, 19, 0, "20"],
    "02.2": [[0, 1, 2], [1, 0, 2], [0, 1], "012", [0, 0, 1]],
    "02.3": [[0], "1, 2", [1.5], sorted(set(range(1, 17)) - set(batch_invariance_failures()))],
    "03.1": [257, 258, 255.0, "256"],
    "03.2": [65535, 65536, 65520, float("inf")],
    "03.3": [2.0**-10, 2.0**-24, -1.0, "2^-11", float("nan"), float("inf")],
    "03.4": [
        *(1e-5 / 1.3e-6, 10.0, 1.3e-6, 1e-5, "0.1", float("nan"), float("inf"), 10**400, True),
        # complex values whose real part is the right answer: float() of a NumPy complex drops the rest
        *(np.complex64(0.1000013 + 1j), np.complex128(0.1000013), torch.tensor(0.1000013 + 1j)),
    ],
    "04.1": ["RuntimeError", ValueError, Exception, 3],
    "04.2": [
        *(0.0, "nan", float("inf"), 10**400, -(10**400), np.float32(1.0), torch.zeros(2), 1 + 2j, True),
        torch.empty((), device="meta"),  # a meta tensor has no value to read
    ],
    "04.4": [{"one thread"}, {"one thread", "float64", "reseed"}, "float64", {"gpu"}, {1}],
    "05.1": [{"torch cpu"}, {"torch cpu", "torch cuda", "numpy"}, "torch cpu", {"jax"}],
    "05.2": [torch.Generator().manual_seed(41), 42, _drawn_from(torch.Generator().manual_seed(42))],
    "05.3": [0, 1, 2, 3, 5, "4"],
    "05.4": [{"rand(1000)", "randn(1000)"}, {"randn(1000)", "randn(8)"}, set(), "randn(1000)", {"randn(16)"}],
    "06.1": [False, "True", 1],
    "06.2": [_OffsetAttribute, _OffsetSaved, _OffsetBuffer(), torch.nn.Linear, int],
    "06.3": [["load weights", "build optimizer", "move model"], ["move model"], "build optimizer"],
    "06.4": [False, "True", 1, torch.float32, [True]],
    "07.1": ["cuda", "cuda:0", 0, None.__class__],
    "07.2": ["_orig_mod", "module.", "orig"],
    "07.3": ["safe_globals", torch.serialization.add_safe_globals, torch.load],
    "07.4": ["strict", "mmap", "assign=True", True, "assign_to_params_buffers"],
    "07.5": [True, "False", 0],
    "08.1": [lambda n: n**3, lambda n: 2 * n**2, lambda: 1, 2],
    "08.2": [1 / 8, 1 / 4, 12, "1/12"],
    "08.3": [2, 0, "1", True],
    "08.4": [2**24, 3 * 16384, 4096, 16385, 16384.0, "16384", True],
    "08.5": [12, 4, 16, 8.0, "8", True],
    "09.1": [4, 1, "2", 2.0],
    "09.2": [0.25, 2, "4"],
    "09.3": [torch.no_grad, "torch.inference_mode", torch.enable_grad],
    "09.4": [32640, -65280, 32767, "65280", 65280.0],
    "09.5": [12224, 12033, 8192, 24066, -24448, 32767, "24448", 24448.0],
    "10.1": [1.3e-6, 2.0**-24, "7.6e-6"],
    "10.2": ["weights", "both", 1],
    "10.3": [
        lambda a, e: True,
        lambda a, e: torch.equal(a.double(), e),
        lambda a: True,
        3,
        lambda a, e: torch.allclose(a.double(), e, rtol=1e-3, atol=1e-3),  # rejects 1%, accepts 0.1%
        lambda a, e: torch.allclose(a, e),  # float32 against float64 raises
    ],
    "13.1": ["matmul", "dtype", "tf32", 1],
    "13.2": ["weights_only", "map-location", None.__class__],
    "13.3": [True, "False", 0],
    "11.1": [2, 4, "3", 2.5],
    "11.2": [1, "0", True],
    "11.3": ["shuffle", "set_seed", 1],
    "11.4": [{3}, {2, 3, 6}, {3, 6, 12}, [3.0, 6.0], "3, 6", {True, 3}],
    "11.5": ["worker_init_fn", "seed", torch.Generator(), "sampler"],
    "04.3": [
        ("CUBLAS_WORKSPACE_CONFIG", "4096:8"),
        ("CUBLAS_WORKSPACE_CONFIG", ":16:8"),
        ("CUDA_LAUNCH_BLOCKING", "1"),
        "x",
    ],
}


@pytest.mark.parametrize(
    "exercise, answer",
    [
        ("01.1", torch.tensor(2**24)),
        ("01.1", np.int64(2**24)),
        ("01.2", (np.float32(1.0), np.float32(2.0**-24), np.float32(2.0**-24))),
        ("01.3", torch.tensor(2.0**-14)),  # what helpers.ulp returns
        # section 1.7 builds a and c as 0-dim tensors: answers made the same way are accepted
        ("01.5", (torch.tensor(1 + 2**-20), torch.tensor(1 + 2**-20), torch.tensor(-(1 + 2**-19)))),
        ("01.5", (np.float32(1 + 2**-20), np.float32(1 + 2**-20), np.float32(-(1 + 2**-19)))),
        # a * b overflows when rounded on its own; the fused result, 2.6e38, is finite
        ("01.5", (3e38, 2.0, -3.4e38)),
    ],
)
def test_lesson_01_accepts_tensors_numpy_scalars_and_an_overflow_only_two_roundings_have(exercise, answer):
    verdict = check(exercise, answer)
    assert verdict.ok is True, verdict


@pytest.mark.parametrize(
    "answer",
    [np.float32("nan"), np.float64("nan"), torch.tensor(float("nan")), torch.full((1,), float("nan"))],
)
def test_lesson_04_2_accepts_any_real_nan(answer):
    verdict = check("04.2", answer)
    assert verdict.ok is True, verdict


@pytest.mark.parametrize("exercise", ["04.1", "04.2", "04.3", "04.4"])
@pytest.mark.parametrize(
    "answer",
    [
        *(10**400, -(10**400), np.float32("nan"), np.int64(3), 1 + 2j, b"x", torch.zeros(3), object(), {}),
        *(torch.empty((), device="meta"), torch.empty(1, device="meta")),
    ],
)
def test_lesson_04_checkers_never_raise(exercise, answer):
    verdict = check(exercise, answer)  # a checker answers every input with a verdict, never an exception
    assert verdict.ok in (True, False) and len(verdict.message) > 20


def test_lesson_01_rejects_the_lessons_own_examples_with_a_hint():
    assert "section 1.1" in check("01.2", (1e8, -1e8, 1.0)).message
    assert "section 1.7" in check("01.5", (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11))).message
    assert "inf" in check("01.5", (2.0**127 * 1.5, 2.0, 2.0**127)).message


def test_batch_invariance_failures_is_a_sorted_sublist():
    found = batch_invariance_failures()
    assert found == sorted(set(found)) and set(found) <= set(range(1, 17))


def test_every_exercise_has_cases():
    # lesson 12's exercises train a model, so their cases live with it in tests/test_capstone.py
    from tests.test_capstone import RIGHT as CAPSTONE_RIGHT
    from tests.test_capstone import WRONG as CAPSTONE_WRONG

    assert sorted(RIGHT | CAPSTONE_RIGHT) == exercise_ids() == sorted(WRONG | CAPSTONE_WRONG)
    assert not set(RIGHT) & set(CAPSTONE_RIGHT)


@pytest.mark.parametrize("exercise", sorted(RIGHT))
def test_right_answers_pass(exercise):
    verdict = check(exercise, RIGHT[exercise])
    assert verdict.ok is True and bool(verdict)
    assert str(verdict).startswith(f"Exercise {exercise}: Correct.")


@pytest.mark.parametrize("exercise, answer", [(e, a) for e, answers in WRONG.items() for a in answers])
def test_wrong_answers_explain_themselves(exercise, answer):
    verdict = check(exercise, answer)
    assert verdict.ok is False and not verdict
    assert "Not yet." in str(verdict) and len(verdict.message) > 20


@pytest.mark.parametrize("exercise", sorted(RIGHT))
def test_unanswered(exercise):
    verdict = check(exercise, None)
    assert verdict.ok is None and "replace None" in str(verdict)


def test_03_4_checker_rejects_what_is_not_a_positive_finite_number():
    from helpers.exercises import _CHECKERS

    checker = _CHECKERS["03.4"][1]
    # check() answers None with "not answered yet"; the checker itself must still reject it
    several = torch.tensor([0.1, 0.1])
    for answer in (None, float("nan"), float("-inf"), 10**400, -0.1, 0.0, 1j, [0.1], "0.1", False, several):
        ok, message = checker(answer)
        assert ok is False and "positive number" in message, (answer, message)
    assert checker(torch.tensor(0.1))[0] is True  # a 0-d tensor is a number


def test_07_5_rests_on_the_documented_limits_not_on_fixed_bugs():
    # torch>=2.11 has both published fixes: the verdict must rest on what PyTorch documents for it
    wrong, right = str(check("07.5", True)), str(check("07.5", False))
    assert "section 7.3" in wrong and "CVE" not in wrong
    assert "denial of service" in right and "memory corruption" in right

@pytest.mark.parametrize("answer", ["conv", "convolution", " Convolution "])
def test_lesson_13_1_accepts_the_word_spelled_out(answer):
    verdict = check("13.1", answer)
    assert verdict.ok is True, verdict


def test_lesson_11_4_names_the_condition_for_powers_of_two():
    # 2, 4 and 8 change the bits only at the ends of the range (overflow, subnormal numbers)
    assert "for normal numbers" in check("11.4", {2, 3, 6}).message
    assert "overflow" in check("11.4", {3, 6}).message


def test_unknown_exercise():
    with pytest.raises(ValueError, match="unknown exercise"):
        check("99.9", 1)
    with pytest.raises(TypeError):
        check(1.1, 1)


def test_08_1_accepts_the_exact_count_too():
    verdict = check("08.1", lambda n: 2 * n**3 - n**2)
    assert verdict.ok is True and "exact count" in str(verdict)


def test_10_3_says_why_a_fixed_1e_3_and_mixed_dtypes_fail():
    loose = check("10.3", lambda a, e: torch.allclose(a.double(), e, rtol=1e-3, atol=1e-3))
    assert "0.1%" in str(loose) and "1e-3" in str(loose)
    mixed = check("10.3", lambda a, e: torch.allclose(a, e))
    assert "one dtype" in str(mixed)

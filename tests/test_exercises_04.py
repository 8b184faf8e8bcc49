"""Lesson 04's exercise checkers accept right answers and reject wrong ones with a hint."""

import numpy as np
import pytest
import torch

import helpers
from helpers import check
from helpers.determinism import deterministic_flags, deterministic_mode


def _histogram_deterministic(index, weights, bins):
    with deterministic_mode():
        return torch.zeros(bins).index_put_((index,), weights, accumulate=True)


def _histogram_float64(index, weights, bins):
    sums = torch.zeros(bins, dtype=torch.float64).index_put_((index,), weights.double(), accumulate=True)
    return sums.float()


def _histogram_one_thread(index, weights, bins):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return torch.zeros(bins).index_put_((index,), weights, accumulate=True)
    finally:
        torch.set_num_threads(threads)


def _histogram_atomic(index, weights, bins):  # section 4.1's accumulate(): atomic adds on 2 threads
    return torch.zeros(bins).index_put_((index,), weights, accumulate=True)


def _histogram_reseeded(index, weights, bins):
    torch.manual_seed(0)
    return _histogram_atomic(index, weights, bins)


def _histogram_sum_per_bin(index, weights, bins):  # repeats run to run, not across thread counts
    return torch.stack([weights[index == k].sum() for k in range(bins)])


def _histogram_leaves_one_thread(index, weights, bins):
    torch.set_num_threads(1)
    return _histogram_atomic(index, weights, bins)


def _histogram_leaves_deterministic_mode(index, weights, bins):
    torch.use_deterministic_algorithms(True)
    return _histogram_atomic(index, weights, bins)


def _histogram_bincount_short(index, weights, bins):  # drops trailing empty bins
    return torch.bincount(index, weights)


def _histogram_zeros(index, weights, bins):
    return torch.zeros(bins)


def _histogram_float64_out(index, weights, bins):
    return torch.zeros(bins, dtype=torch.float64).index_add_(0, index, weights.double())


def _histogram_changes_its_input(index, weights, bins):
    weights.mul_(2)
    return _histogram_float64(index, weights, bins)


def _histogram_index_add(index, weights, bins):  # serial on the CPU for a 1-D tensor
    return torch.zeros(bins).index_add_(0, index, weights)


def _histogram_bincount(index, weights, bins):
    return torch.bincount(index, weights, minlength=bins)


def _histogram_requires_grad(index, weights, bins):  # a Parameter is still a tensor of the right sums
    return torch.nn.Parameter(_histogram_float64(index, weights, bins))


def _histogram_sparse(index, weights, bins):
    return _histogram_float64(index, weights, bins).to_sparse()


RIGHT_04_1 = {
    "a": "use_deterministic_algorithms",
    "b": "cudnn.benchmark=False",
    "c": "set_num_threads",
    "d": "none",
    "e": "cudnn.deterministic",
}
RIGHT = {
    "04.1": RIGHT_04_1,
    "04.2": _histogram_float64,
}
WRONG = {
    "04.1": [
        {**RIGHT_04_1, "a": "cudnn.deterministic"},  # cuDNN's switch does not reach scatter_add_
        {**RIGHT_04_1, "b": "use_deterministic_algorithms"},  # benchmark still picks by timing
        {**RIGHT_04_1, "c": "use_deterministic_algorithms"},  # section 4.6: the thread count still matters
        {**RIGHT_04_1, "d": "use_deterministic_algorithms"},  # batch invariance: no switch
        {**RIGHT_04_1, "e": "cudnn.benchmark=False"},  # already False
        {**RIGHT_04_1, "e": "manual_seed"},
        {**RIGHT_04_1, "a": "deterministic_mode()"},
        {**RIGHT_04_1, "c": "OMP_NUM_THREADS"},
        {k: v for k, v in RIGHT_04_1.items() if k != "e"},
        ["use_deterministic_algorithms"] * 5,
        "use_deterministic_algorithms",
    ],
    # each call of 04.2's checker takes a while: the wrong answers whose hint is named in
    # NAMED_MISTAKES below are checked there only
    "04.2": [_histogram_float64_out, _histogram_changes_its_input, _histogram_sparse, torch.zeros(10),
             "histogram"],
}


@pytest.mark.parametrize(
    "right",
    [
        _histogram_deterministic,
        _histogram_one_thread,
        _histogram_index_add,
        _histogram_bincount,
        _histogram_requires_grad,
    ],
)
def test_lesson_04_2_accepts_every_fixed_order(right):
    verdict = check("04.2", right)
    assert verdict.ok is True, verdict


def test_lesson_04_2_refuses_the_atomic_version_every_time():
    # with too few weights per call, the two threads sometimes ran one after the other on a busy machine,
    # which gives the serial order, and the unchanged function passed
    for _ in range(3):
        verdict = check("04.2", _histogram_atomic)
        assert verdict.ok is False and "threads" in verdict.message, verdict


NAMED_MISTAKES = [
    (_histogram_atomic, "threads"),
    (_histogram_reseeded, "nothing here is random"),
    (_histogram_sum_per_bin, "between 1 and 2 threads"),
    (_histogram_leaves_one_thread, "thread count"),
    (_histogram_leaves_deterministic_mode, "with block"),
    (_histogram_bincount_short, "empty bins included"),
    (_histogram_zeros, "sum of the weights"),
]


@pytest.mark.parametrize("wrong, says", NAMED_MISTAKES)
def test_lesson_04_2_names_the_mistake_without_the_answer(wrong, says):
    verdict = check("04.2", wrong)
    assert verdict.ok is False and says in verdict.message, verdict
    for answer in ("float64", "index_add", "bincount", "deterministic_mode()"):
        if answer == "deterministic_mode()" and wrong is _histogram_leaves_deterministic_mode:
            continue  # the hint for a leaked setting names the tool that restores it
        assert answer not in verdict.message, (answer, verdict)


@pytest.mark.parametrize("exercise", ["04.1", "04.2"])
def test_lesson_04_checkers_leave_threads_generator_and_flags_as_they_were(exercise):
    # 04.2: the answers that change a global (the others cannot show a checker leaving one changed)
    touching = [_histogram_one_thread, _histogram_reseeded, _histogram_leaves_one_thread,
                _histogram_leaves_deterministic_mode, _histogram_deterministic]
    answers = touching if exercise == "04.2" else [RIGHT[exercise], *WRONG[exercise]]
    threads, flags, state = torch.get_num_threads(), deterministic_flags(), torch.get_rng_state()
    for answer in answers:
        check(exercise, answer)
        assert torch.get_num_threads() == threads, answer
        assert deterministic_flags() == flags, answer
        assert torch.equal(torch.get_rng_state(), state), answer


@pytest.mark.parametrize("exercise", ["04.1", "04.2"])
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


@pytest.mark.parametrize(
    "answer",
    [
        {**RIGHT_04_1, "e": "use_deterministic_algorithms"},  # (e) has two right answers
        {"A": "torch.use_deterministic_algorithms(True)", "B": "torch.backends.cudnn.benchmark = False",
         "C": "torch.set_num_threads(4)", "D": "None", "E": "torch.backends.cudnn.deterministic = True"},
        {"(a)": "deterministic mode", "(b)": "benchmark=False", "(c)": "set_num_threads(n)", "(d)": "nothing",
         "(e)": "cudnn.deterministic=True"},
    ],
)
def test_lesson_04_1_accepts_the_right_switches_however_spelt(answer):
    verdict = check("04.1", answer)
    assert verdict.ok is True, verdict


def test_lesson_04_1_hints_name_the_symptom_but_not_the_switch():
    for letter in RIGHT_04_1:
        for wrong in ("use_deterministic_algorithms", "cudnn.deterministic", "cudnn.benchmark=False",
                      "set_num_threads", "manual_seed", "none"):
            verdict = check("04.1", {**RIGHT_04_1, letter: wrong})
            if verdict.ok:
                continue  # (e) has two right answers
            assert f"({letter})" in verdict.message and "4 of 5 right" in verdict.message, verdict
            right = {"a": "deterministic mode", "b": "benchmark = False", "c": "set_num_threads",
                     "d": "no switch", "e": "cudnn.deterministic ="}[letter]
            assert right not in verdict.message, (letter, wrong, verdict)


def test_lesson_04_1_answers_are_the_rows_of_the_switch_matrix():
    # each symptom is one row of section 4.3's matrix; its right answers are that row's "yes" columns
    from helpers.exercises.lesson04 import _SWITCH_ANSWERS
    from helpers.show.atomics import SWITCH_MATRIX, switch_matrix_notes

    column = {"use_deterministic_algorithms": 0, "cudnn.deterministic": 1, "cudnn.benchmark=False": 2,
              "set_num_threads": 4, "manual_seed": 5}
    rows = {row.source: row.verdicts for row in SWITCH_MATRIX}
    symptoms = {"a": "GPU: atomic additions in PyTorch's CUDA kernels",
                "b": "GPU: cudnn.benchmark timing the candidate algorithms",
                "c": "CPU: a sum split between threads",
                "d": "another batch size or shape (batch invariance)",
                "e": "GPU: a cuDNN algorithm that adds atomically"}
    for letter, source in symptoms.items():
        covered = {name for name, j in column.items() if rows[source][j] == "yes"}
        assert _SWITCH_ANSWERS[letter] == (covered or {"none"}), letter
    # the hints for (b) send the learner to notes 1 and 2 of the matrix
    assert [n[1] for n in switch_matrix_notes()[:2]] == [symptoms["b"]] * 2


def test_lesson_04_prose_claims_that_lost_their_exercises_still_hold():
    # Section 4.1: below ATen's GRAIN_SIZE (32,768 entries) index_put_(accumulate=True) takes its serial
    # loop on any thread count, so twenty runs of 20,000 entries give one result on any machine.
    g = torch.Generator().manual_seed(0)
    slots, values = torch.randint(0, 10, (20_000,), generator=g), torch.rand(20_000, generator=g)
    with helpers.threads(2):
        runs = [torch.zeros(10).index_put_((slots,), values, accumulate=True) for _ in range(20)]
    assert len({run.numpy().tobytes() for run in runs}) == 1
    # Section 4.4: the CPU backward of x[idx] is an index_put_(accumulate=True), which deterministic mode
    # sends down that serial loop instead of raising.
    x = torch.rand(10, generator=g).requires_grad_()
    idx, w = torch.randint(0, 10, (100_000,), generator=g), torch.rand(100_000, generator=g)
    with deterministic_mode():
        (x[idx] * w).sum().backward()
    expected = torch.zeros(10, dtype=torch.float64).index_add_(0, idx, w.double())
    torch.testing.assert_close(x.grad.double(), expected, rtol=1e-5, atol=0)
    assert not torch.are_deterministic_algorithms_enabled()

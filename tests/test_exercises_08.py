"""Lesson 08's exercise checkers accept right answers and reject wrong ones with a hint."""

from helpers import check
from helpers.exercises.lesson08 import _DEVICE_CASES


def _choose_device(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms):
    gpu_total = h2d_ms + gpu_ms + d2h_ms
    options = [(ms, device) for ms, device in ((cpu_ms, "cpu"), (gpu_total, "cuda")) if ms <= budget_ms]
    return min(options)[1] if options else None


def _compute_only(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms):
    options = [(ms, device) for ms, device in ((cpu_ms, "cpu"), (gpu_ms, "cuda")) if ms <= budget_ms]
    return min(options)[1] if options else None


def _no_copy_back(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms):
    return _choose_device(cpu_ms, gpu_ms, h2d_ms, 0.0, budget_ms)


def _overlap(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms):
    return _compute_only(cpu_ms, max(h2d_ms, gpu_ms, d2h_ms), 0.0, 0.0, budget_ms)


def _strict(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms):
    return _choose_device(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms - 1e-9)


def _no_budget(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms):
    return _choose_device(cpu_ms, gpu_ms, h2d_ms, d2h_ms, float("inf"))


def _tie_to_gpu(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms):
    choice = _choose_device(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms)
    return "cuda" if choice == "cpu" and h2d_ms + gpu_ms + d2h_ms == cpu_ms else choice


RIGHT = {
    "08.1": 8,
    "08.2": 16384,
    "08.3": _choose_device,
}
WRONG = {
    "08.1": [12, 4, 16, 8.0, "8", True],
    "08.2": [2**24, 3 * 16384, 4096, 16385, 16384.0, "16384", True],
    "08.3": [
        _compute_only, _no_copy_back, _overlap, _strict, _no_budget, _tie_to_gpu,
        lambda *a: "gpu", lambda *a: "GPU", lambda *a: "CPU", lambda *a: True, lambda *a: "cpu",
        lambda c, g, h, d, b: "cuda" if g < c else "cpu", lambda c, g: "cpu", "cuda", 1,
    ],
}


def test_08_1_names_the_double_count():
    verdict = check("08.1", 12)
    assert verdict.ok is False and "one tensor" in verdict.message


def test_08_2_says_the_least_is_asked():
    verdict = check("08.2", 16385)
    assert verdict.ok is False and "the least is asked" in verdict.message


def test_08_3_cases_agree_with_the_rule_the_prompt_states():
    assert all(_choose_device(*args) == right for args, right, _ in _DEVICE_CASES)


def test_08_3_names_each_common_mistake():
    hints = {
        _compute_only: "computations alone",
        _no_copy_back: "back to the host",
        _overlap: "cannot overlap",
        _strict: "<=",
        _no_budget: "None",
        _tie_to_gpu: "prompt asks for the CPU",
        (lambda *a: "gpu"): '"cuda"',
    }
    for answer, hint in hints.items():
        verdict = check("08.3", answer)
        assert verdict.ok is False and hint in verdict.message, verdict


def test_08_3_hints_do_not_give_the_answer_away():
    for answer in WRONG["08.3"]:
        message = check("08.3", answer).message
        assert "h2d_ms + gpu_ms + d2h_ms" not in message and "def " not in message

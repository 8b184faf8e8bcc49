"""Lesson 03's exercise checkers accept right answers and reject wrong ones with a hint."""

import numpy as np
import torch

from helpers import check
from helpers.exercises import _CHECKERS


def running_total(x):  # float64 holds these running sums exactly; round once at the end
    return x.double().cumsum(0).half()


def _float16_loop(x):  # the running sum kept in float16: stalls at 2048
    out, total = torch.empty_like(x), torch.zeros((), dtype=torch.float16)
    for i, value in enumerate(x):
        total = total + value
        out[i] = total
    return out


def _float32_accumulator(x):  # NumPy's float32 cumsum keeps a float32 running sum
    return torch.from_numpy(np.cumsum(x.float().numpy(), dtype=np.float32)).half()


RIGHT = {
    "03.1": (float("inf"), 90.999),
    "03.2": running_total,
}
WRONG = {
    "03.1": [
        (90.999, 90.999), (91.0, 91.0), (65504, 90.999), (90000, 90.999), (float("nan"), 90.999),
        (float("-inf"), 90.999), (float("inf"), float("inf")), (float("inf"), 90000), (10**400, 90.999),
        float("inf"), "inf", ("inf", 90.999), (float("inf"), 90.999, 1.0),
    ],
    "03.2": [
        lambda x: x.cumsum(0),  # float16 cumsum on the CPU: a float32 accumulator
        _float16_loop,
        _float32_accumulator,
        lambda x: x.double().cumsum(0),  # right values, wrong dtype
        lambda x: x.double().sum().half(),  # one total, not running sums
        lambda x: x.copy_(x.double().cumsum(0).half()),  # overwrites its input
        lambda x: x.tolist(),
        running_total(torch.ones(3, dtype=torch.float16)),  # a tensor, not a function
    ],
}


def test_03_1_the_answer_is_what_float16_and_float32_compute():
    x = torch.ones(1000, dtype=torch.float16)
    x[0] = 300.0
    in_half, in_float = (x * x).mean(), (x.float() * x.float()).mean()
    assert in_half.item() == float("inf") and abs(in_float.item() - 90.999) < 1e-3
    assert check("03.1", (in_half, in_float)).ok is True  # the cell's own results are accepted
    assert check("03.1", [float("inf"), 91.0]).ok is True  # 90.999 rounded to two digits
    ok, message = _CHECKERS["03.1"][1]((90.999, 90.999))
    assert ok is False and "300 * 300" in message and "inf" not in message


def test_03_2_accepts_other_accumulators_with_enough_bits():
    assert check("03.2", lambda x: torch.cumsum(x, 0, dtype=torch.float64).to(torch.float16)).ok is True
    # float32 cumsum on the CPU accumulates in float64 (ATen's CPU accumulate type for float)
    assert check("03.2", lambda x: x.float().cumsum(0).half()).ok is True


def test_03_2_hints_name_the_accumulator_not_the_answer():
    checker = _CHECKERS["03.2"][1]
    for wrong, words in [
        (_float16_loop, "stops growing at 2048"),
        (lambda x: x.cumsum(0), "two float16 gaps"),
        (_float32_accumulator, "more significant bits"),
        (lambda x: x.double().cumsum(0), "float64"),
    ]:
        ok, message = checker(wrong)
        assert ok is False and words in message, message
        assert "double()" not in message and "cumsum(0, dtype" not in message


def test_03_2_float16_cumsum_on_the_cpu_accumulates_in_float32():
    # the claim in the 03.2 hint: at 2048 adding 1 is a tie in float16 but exact in float32
    x = torch.tensor([2048.0, 1.0, 1.0, 1.0], dtype=torch.float16)
    assert x.cumsum(0).tolist() == [2048.0, 2048.0, 2050.0, 2052.0]  # wider than float16
    # ... and not float64: each 2^-9 is a tie at 32768 in float32 (gap 2^-8) but exact in float64
    y = torch.full((32769,), 2.0**-9, dtype=torch.float16)
    y[0] = 32768.0
    assert y.cumsum(0)[-1].item() == 32768.0 and y.double().cumsum(0)[-1].item() == 32832.0
    # a float32 tensor's cumsum accumulates in float64 on the CPU (CPU_ACC_TYPE(float, double))
    assert torch.tensor([2.0**24, 1.0, 1.0]).cumsum(0).tolist() == [2.0**24, 2.0**24, 2.0**24 + 2]


def test_03_2_solution_claim_float64_to_float16_rounds_through_float32_here():
    value = torch.tensor(2049 + 2**-20, dtype=torch.float64)
    assert value.half().item() == 2048.0 == value.float().half().item()
    assert float(np.float16(2049 + 2**-20)) == 2050.0  # rounded once


def test_03_1_accepts_one_element_tensors_and_numpy_scalars():
    assert check("03.1", (np.float16("inf"), np.float32(90.999))).ok is True
    assert check("03.1", (torch.tensor(float("inf")), torch.tensor([90.999]))).ok is True
    assert check("03.1", (torch.tensor([1.0, 2.0]), 90.999)).ok is False


def test_03_2_hints_fit_the_mistake():
    checker = _CHECKERS["03.2"][1]
    # suffix sums end far below 2048 without stalling there: no hint about a float16 accumulator
    ok, message = checker(lambda x: x.double().flip(0).cumsum(0).flip(0).half())
    assert ok is False and "2048" not in message and "element 9999" in message, message
    # x.float().cumsum(0) passes on the CPU (a float64 accumulator there), and the verdict says why
    ok, message = checker(lambda x: x.float().cumsum(0).half())
    assert ok is True and "accumulates in float64" in message, message


def test_03_2_a_sparse_result_is_a_hint_not_an_error():
    ok, message = _CHECKERS["03.2"][1](lambda x: x.double().cumsum(0).half().to_sparse())
    assert ok is False and "dense" in message, message

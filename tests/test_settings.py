"""The context managers that set a global knob for a block put it back, also when the block fails."""

from __future__ import annotations

import pytest
import torch

import helpers


def test_threads_sets_the_count_inside_and_restores_it_after_an_error():
    before = torch.get_num_threads()
    with pytest.raises(ZeroDivisionError), helpers.threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
        raise ZeroDivisionError
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_threads_refuses_what_is_not_a_count_before_changing_anything(bad):
    before = torch.get_num_threads()
    with pytest.raises(ValueError, match="threads"), helpers.threads(bad):
        pass
    assert torch.get_num_threads() == before


def test_matmul_precision_restores_the_level_and_both_backends():
    before = (torch.get_float32_matmul_precision(), torch.backends.mkldnn.matmul.fp32_precision,
              torch.backends.cuda.matmul.fp32_precision)
    with pytest.raises(RuntimeError), helpers.matmul_precision("medium"):
        assert torch.get_float32_matmul_precision() == "medium"
        assert torch.backends.mkldnn.matmul.fp32_precision == "bf16"
        raise RuntimeError("inside the block")
    after = (torch.get_float32_matmul_precision(), torch.backends.mkldnn.matmul.fp32_precision,
             torch.backends.cuda.matmul.fp32_precision)
    assert after == before
    with pytest.raises(ValueError, match="medium"), helpers.matmul_precision("low"):
        pass


def test_flush_denormal_flushes_subnormals_inside_and_not_after():
    tiny = torch.tensor([1e-40])  # a float32 subnormal
    with helpers.flush_denormal(True) as supported:
        inside = (tiny * 1.0).item()
    outside = (tiny * 1.0).item()
    assert outside != 0.0
    if supported:  # x86 with SSE3
        assert inside == 0.0

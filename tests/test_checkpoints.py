"""helpers.lessons.checkpoints, and claims of lesson 07 that its cells do not print."""

from __future__ import annotations

import pickle

import pytest
import torch
import torch.nn as nn

from helpers.lessons.checkpoints import cuda_tagged_copy, unpickling_reason


def test_cuda_tagged_copy_needs_map_location_without_cuda(tmp_path):
    state = {"weight": torch.arange(4.0).reshape(2, 2), "steps": torch.tensor(3)}
    torch.save(state, tmp_path / "cpu.pt")
    target = cuda_tagged_copy(tmp_path / "cpu.pt", tmp_path / "gpu.pt")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="map_location"):
            torch.load(target, weights_only=True)
    loaded = torch.load(target, map_location="cpu", weights_only=True)
    assert all(torch.equal(loaded[k], state[k]) for k in state)
    # the original file still loads anywhere
    assert torch.equal(torch.load(tmp_path / "cpu.pt", weights_only=True)["weight"], state["weight"])


def test_cuda_tagged_copy_leaves_no_extra_tagger(tmp_path):
    import torch.serialization as ser

    registry = list(ser._package_registry)
    torch.save({"w": torch.ones(2)}, tmp_path / "cpu.pt")
    cuda_tagged_copy(tmp_path / "cpu.pt", tmp_path / "gpu.pt")
    assert ser._package_registry == registry
    torch.save({"w": torch.ones(2)}, tmp_path / "again.pt")  # saved after the copy: tagged cpu again
    tags = []
    torch.load(tmp_path / "again.pt", map_location=lambda storage, tag: tags.append(tag) or storage)
    assert tags == ["cpu"]
    with pytest.raises(ValueError, match="overwrite"):
        cuda_tagged_copy(tmp_path / "cpu.pt", tmp_path / "cpu.pt")


def test_cuda_tagged_copy_of_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        cuda_tagged_copy(tmp_path / "absent.pt", tmp_path / "out.pt")



class _Payload:
    def __reduce__(self):
        return (print, ("never printed: weights_only=True refuses it",))


def test_unpickling_reason_names_the_refused_global_without_the_advice(tmp_path):
    torch.save({"payload": _Payload()}, tmp_path / "payload.pt")
    with pytest.raises(pickle.UnpicklingError) as refused:
        torch.load(tmp_path / "payload.pt", weights_only=True)
    reason = unpickling_reason(refused.value)
    assert "GLOBAL print was not an allowed global" in reason and "Please use" not in reason
    assert unpickling_reason(ValueError("first line\nsecond")) == "first line"


def test_a_module_with_extra_state_adds_an_entry_to_its_state_dict():
    # lesson 07, section 7.1: parameters, persistent buffers, and _extra_state where get_extra_state exists
    class WithExtraState(nn.Module):
        def get_extra_state(self):
            return {"format_version": 2}

        def set_extra_state(self, state):
            self.format_version = state["format_version"]

    assert list(WithExtraState().state_dict()) == ["_extra_state"]


def test_inference_tensors_outside_the_mode_cannot_be_saved_for_backward_or_changed_in_place():
    # lesson 07, section 7.7 and its "Where this comes from": the narrower rule, measured
    with torch.inference_mode():
        t = torch.ones(2) * 3
    assert t.is_inference() and not t.requires_grad
    p = torch.zeros(2, requires_grad=True)
    (t + p).sum().backward()  # an addition saves neither input: allowed
    assert torch.equal(p.grad, torch.ones(2))
    with pytest.raises(RuntimeError, match="cannot be saved for backward"):
        t * p  # a product saves its inputs for backward
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        t.add_(1)
    assert not t.clone().is_inference()  # a clone made outside the mode is a normal tensor

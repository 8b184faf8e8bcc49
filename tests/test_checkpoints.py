"""helpers.lessons.checkpoints: a CPU-made checkpoint that loads like one saved on a GPU."""

from __future__ import annotations

import pytest
import torch

from helpers.lessons.checkpoints import cuda_tagged_copy


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


def test_cuda_tagged_copy_of_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        cuda_tagged_copy(tmp_path / "absent.pt", tmp_path / "out.pt")


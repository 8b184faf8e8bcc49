"""helpers.determinism: seeding, the deterministic-mode context manager, RNG snapshots, workers."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from helpers.determinism import (
    CUBLAS_WORKSPACE,
    NoisyDataset,
    RngSnapshot,
    deterministic_flags,
    deterministic_mode,
    restore_rng,
    seed_everything,
    seed_worker,
    snapshot_rng,
)


def draws() -> tuple:
    return random.random(), float(np.random.rand()), torch.rand(3).tolist()


def test_seed_everything_seeds_every_global_generator():
    report = seed_everything(123)
    first = draws()
    assert seed_everything(123) == report
    assert draws() == first
    assert report == {"random": 123, "numpy.random (global)": 123, "torch (CPU and every CUDA device)": 123}
    seed_everything(124)
    assert draws() != first


@pytest.mark.parametrize(
    "bad, error", [(1.5, TypeError), (True, TypeError), (-1, ValueError), (2**32, ValueError)]
)
def test_seed_everything_rejects_bad_seeds(bad, error):
    with pytest.raises(error):
        seed_everything(bad)


def test_importing_helpers_seeds_nothing():
    code = (
        "import torch; s = torch.initial_seed(); import helpers, helpers.determinism; "
        "print(torch.initial_seed() == s)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.fixture
def no_cublas_variable(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)


def test_deterministic_mode_sets_and_restores_everything(no_cublas_variable):
    before = deterministic_flags()
    with deterministic_mode() as inside:
        assert inside == deterministic_flags()
        assert inside["use_deterministic_algorithms"] and not inside["warn_only"]
        assert inside["cudnn.deterministic"] and not inside["cudnn.benchmark"]
        assert (
            inside["fill_uninitialized_memory"] and os.environ["CUBLAS_WORKSPACE_CONFIG"] == CUBLAS_WORKSPACE
        )
    assert deterministic_flags() == before and "CUBLAS_WORKSPACE_CONFIG" not in os.environ


def test_deterministic_mode_restores_after_an_exception(no_cublas_variable):
    before = deterministic_flags()
    with pytest.raises(RuntimeError, match="deterministic"):
        with deterministic_mode():
            torch.zeros(5).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))  # no deterministic kernel
    assert deterministic_flags() == before


def test_deterministic_mode_restores_non_default_settings(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    torch.backends.cudnn.benchmark = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False
    try:
        before = deterministic_flags()
        with deterministic_mode(warn_only=False, cublas_workspace_config=None) as inside:
            assert inside["CUBLAS_WORKSPACE_CONFIG"] == ":16:8" and not inside["warn_only"]
        assert deterministic_flags() == before
    finally:
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(False)
        torch.utils.deterministic.fill_uninitialized_memory = True


def test_warn_only_warns_instead_of_raising():
    with deterministic_mode(warn_only=True, cublas_workspace_config=None):
        with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
            torch.zeros(5).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))


def test_snapshot_and_restore_replay_every_generator():
    seed_everything(5)
    snap = snapshot_rng()
    first = draws()
    draws()
    restore_rng(snap)
    assert draws() == first


def test_snapshot_survives_a_weights_only_round_trip():
    seed_everything(6)
    snap = snapshot_rng()
    first = draws()
    buffer = io.BytesIO()
    torch.save(snap.state_dict(), buffer)
    buffer.seek(0)
    loaded = RngSnapshot.from_state_dict(torch.load(buffer, weights_only=True))
    restore_rng(loaded)
    assert draws() == first


def test_restore_rejects_a_mismatched_snapshot():
    snap = snapshot_rng()
    with pytest.raises(ValueError, match="CUDA generator states"):
        restore_rng(RngSnapshot(snap.python, snap.numpy, snap.torch_cpu, snap.torch_cuda + (snap.torch_cpu,)))
    with pytest.raises(TypeError):
        restore_rng({"python": 1})
    with pytest.raises(KeyError, match="missing"):
        RngSnapshot.from_state_dict({"python": 1})


def loader(workers: int, init=None) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    dl = DataLoader(NoisyDataset(), batch_size=2, num_workers=workers, worker_init_fn=init, generator=g)
    return torch.cat(list(dl))


def test_workers_share_a_dataset_generator_unless_seed_worker_reseeds_it():
    plain = loader(2)
    # items 0-1 come from worker 0 and items 2-3 from worker 1: the dataset's own generator repeats
    assert torch.equal(plain[0:2, 4], plain[2:4, 4])
    fixed = loader(2, seed_worker)
    assert not torch.equal(fixed[0:2, 4], fixed[2:4, 4])
    assert torch.equal(fixed, loader(2, seed_worker))  # and the run is reproducible


def test_noisy_dataset_bounds():
    with pytest.raises(IndexError):
        NoisyDataset(length=2)[2]

"""helpers.distributed: ranks in child processes, results back, nothing left behind."""

from __future__ import annotations

import multiprocessing
import socket

import pytest
import torch

from helpers.distributed import free_port, run_ranks, single_process_training, sum_bound


def test_allreduce_on_two_ranks_agrees_and_matches_the_shares():
    results = run_ranks("allreduce", 2)
    assert set(results) == {0, 1}
    assert results[0]["total"] == results[1]["total"]  # every rank ends with the same sum
    shares = torch.tensor([results[0]["share"], results[1]["share"]])
    assert results[0]["total"] == shares.sum().item()  # gloo added the two float32 shares
    assert torch.equal(results[0]["vector_sum"], results[1]["vector_sum"])
    exact = torch.rand(10**6, generator=torch.Generator().manual_seed(0)).double().sum().item()
    assert abs(results[0]["total"] - exact) <= sum_bound(10**6) * exact
    assert multiprocessing.active_children() == []


def test_ddp_on_two_ranks_matches_one_process_within_tolerance():
    ranks = run_ranks("ddp", 2)
    reference = single_process_training()
    for mine, theirs, ref in zip(ranks[0]["params"], ranks[1]["params"], reference, strict=True):
        assert torch.equal(mine, theirs)  # DDP keeps the replicas identical
        torch.testing.assert_close(mine, ref)


def test_a_failing_rank_is_reported_and_cleaned_up():
    with pytest.raises(RuntimeError, match="rank 1 fails on purpose"):
        run_ranks("fails", 2)
    assert multiprocessing.active_children() == []


def test_bad_arguments_and_free_port():
    with pytest.raises(KeyError):
        run_ranks("nothing", 2)
    with pytest.raises(ValueError):
        run_ranks("allreduce", 0)
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # it really is free
    assert sum_bound(10) == pytest.approx(10 * 2.0**-24, rel=1e-6)

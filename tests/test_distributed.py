"""helpers.lessons.distributed: ranks in child processes, results back, nothing left behind."""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
import os
import signal
import tempfile

import pytest
import torch

from helpers.lessons.distributed import (
    UnknownExperimentError,
    ring_allreduce,
    run_ranks,
    single_process_training,
    sum_bound,
    sum_data,
)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """An empty temporary directory for this process and the ranks it starts (they inherit TMPDIR)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def launch(tmp_path_factory):
    """One launch of three ranks for every experiment of lesson 11, as the lesson does, with a
    temporary directory of its own: the result, and what was left in that directory."""
    tmp = tmp_path_factory.mktemp("tmpdir")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(tmp))
        mp.setattr(tempfile, "tempdir", str(tmp))
        results = run_ranks(["allreduce", "gradients", "ddp", "seeding", "sync_batchnorm"], 3)
    return results, sorted(p.name for p in tmp.iterdir())


@pytest.fixture(scope="module")
def runs(launch):
    return launch[0]


def test_a_successful_launch_leaves_nothing_behind(launch):
    # DDP imports torch._dynamo in each rank, which creates torchinductor_<user> in the temporary
    # directory; the ranks' logs and results are written there too: all of it goes with the run.
    assert launch[1] == []
    assert multiprocessing.active_children() == []
    # the temporary directory was redirected only while the ranks started: multiprocessing's own
    # cached temporary folder, if any, was not put inside the run's folder, which is gone
    assert os.path.isdir(multiprocessing.util.get_temp_dir())


def test_allreduce_totals_agree_and_two_and_three_ranks_are_predicted(runs):
    ranks = runs["allreduce"]
    assert set(ranks) == {0, 1, 2}
    exact = sum_data().double().sum().item()
    for size in (1, 2, 3):
        totals = {ranks[r]["totals"][size] for r in range(size)}
        assert len(totals) == 1  # every rank of the group holds the same sum
        assert abs(totals.pop() - exact) <= sum_bound(10**6) * exact
    f32 = [[torch.tensor(s.double().sum().item(), dtype=torch.float32) for s in sum_data().chunk(k)]
           for k in (2, 3)]
    assert ranks[0]["totals"][2] == (f32[0][1] + f32[0][0]).item()
    assert ranks[0]["totals"][3] == ((f32[1][2] + f32[1][1]) + f32[1][0]).item()
    assert ranks[0]["totals"][2] != ranks[0]["totals"][3]


def test_sum_data_shares_are_exact_in_float32_but_not_any_half():
    x = sum_data()
    for k in (2, 3):
        assert all(s.double().sum().item() < 2**21 for s in x.chunk(k))  # each contiguous share
    assert x.sort(descending=True).values[:500_000].double().sum().item() == 2_968_146.625  # > 2**21


def test_ring_allreduce_reproduces_gloo_bit_for_bit(runs):
    ranks = runs["allreduce"]
    vectors = torch.rand(3, 1000, generator=torch.Generator().manual_seed(1))
    assert all(torch.equal(ranks[r]["vector_sum"], ring_allreduce(vectors)) for r in range(3))
    padded = torch.cat([torch.zeros(3, 100), vectors], dim=1)
    assert torch.equal(ranks[0]["shifted_sum"], ring_allreduce(padded)[100:])
    assert not torch.equal(ranks[0]["shifted_sum"], ranks[0]["vector_sum"])


def test_ring_allreduce_small_cases():
    rows = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert torch.equal(ring_allreduce(rows[:1]), rows[0])
    assert torch.equal(ring_allreduce(rows), rows.sum(0))
    # three ranks, six elements: chunk c (two elements) is (v[c-1] + v[c-2]) + v[c]
    big, tiny = 1.0, 2.0**-24
    v = torch.tensor([[big] * 6, [tiny] * 6, [tiny] * 6])
    out = ring_allreduce(v)
    assert out[0] == (torch.tensor(tiny) + tiny) + big  # chunk 0: (v2 + v1) + v0, the tiny ones first
    assert out[2] == (torch.tensor(big) + tiny) + tiny  # chunk 1: (v0 + v2) + v1, each tiny one lost
    assert out[0] != out[2]
    # more than two 1 MiB segments per rank (9 segments in all) still cover every element once
    wide = torch.ones(3, 2_000_003)
    assert torch.equal(ring_allreduce(wide), torch.full((2_000_003,), 3.0))


def test_ddp_divides_before_the_ring_sum_and_no_sync_accumulates_locally(runs):
    grads = runs["gradients"]
    assert not torch.equal(grads[0]["local"], grads[1]["local"])
    synced = grads[0]["synced"]
    assert all(torch.equal(grads[r]["synced"], synced) for r in range(3))
    accumulated = torch.stack([grads[r]["accumulated"] for r in range(3)])
    assert torch.equal(synced, ring_allreduce(accumulated * torch.tensor(1 / 3)))


def test_ddp_on_three_ranks_matches_one_process_within_tolerance(runs):
    ranks = runs["ddp"]
    reference = single_process_training()
    for key in ("params", "params_small_buckets"):
        for p0, p1, p2, ref in zip(*(ranks[r][key] for r in range(3)), reference, strict=True):
            assert torch.equal(p0, p1) and torch.equal(p0, p2)  # DDP keeps the replicas identical
            torch.testing.assert_close(p0, ref)
    assert ranks[0]["bucket_bytes"] == "2308"
    assert ranks[0]["small_bucket_bytes"] == "132, 128, 2048"


def test_seeding_and_sync_batchnorm(runs):
    r = runs["seeding"]
    assert set(r[0]) == {"before", "after", "without_set_epoch", "with_set_epoch"}
    assert all(torch.equal(a, b) for a, b in zip(r[0]["after"], r[2]["after"], strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(r[0]["before"], r[2]["before"], strict=True))
    assert sorted(sum((r[k]["with_set_epoch"][0] for k in range(3)), [])) == list(range(12))
    assert r[0]["with_set_epoch"][0] != r[0]["with_set_epoch"][1]
    assert r[0]["without_set_epoch"][0] == r[0]["without_set_epoch"][1]
    assert runs["sync_batchnorm"][0]["error"].startswith("ValueError: SyncBatchNorm expected input tensor")


def test_a_failing_rank_is_reported_and_cleaned_up(private_tmp):
    with pytest.raises(RuntimeError, match="rank 1 fails on purpose"):
        run_ranks(["fails"], 2)
    assert multiprocessing.active_children() == []
    # torch.multiprocessing writes a pytorch-errorfile-*.pickle for each rank that raised and
    # never deletes it: run_ranks has it written into the run's own folder, which it removes
    assert sorted(p.name for p in private_tmp.iterdir()) == []


def test_a_rank_that_hangs_outside_a_collective_meets_the_deadline(private_tmp):
    with pytest.raises(TimeoutError, match="did not finish within 3"):  # not gloo's own 60 s timeout
        run_ranks(["hangs"], 2, timeout=3)
    assert multiprocessing.active_children() == []
    assert sorted(p.name for p in private_tmp.iterdir()) == []


def test_an_interrupt_stops_the_ranks_quietly_and_is_raised_again(private_tmp, capfd):
    # Jupyter's Kernel > Interrupt sends SIGINT to the kernel's whole process group: the ranks get
    # it too. Here each rank gets one while it starts (importing torch) and one while it runs,
    # then the launcher gets its own, as if the learner pressed "interrupt".
    def interrupt(signum, frame):
        ranks = multiprocessing.active_children()
        for process in ranks:
            os.kill(process.pid, signal.SIGINT)
        if interrupt.calls == 1:
            interrupt.calls += 1
            signal.setitimer(signal.ITIMER_REAL, 4.0)
            return
        raise KeyboardInterrupt

    interrupt.calls = 1
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            run_ranks(["hangs"], 2, timeout=120)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert interrupt.calls == 2
    assert info.value.__cause__ is None and info.value.__suppress_context__  # a bare KeyboardInterrupt
    assert multiprocessing.active_children() == []
    assert sorted(p.name for p in private_tmp.iterdir()) == []
    out, err = capfd.readouterr()  # file descriptors 1 and 2, which the ranks inherit until they log
    assert out == "Interrupted: stopped the 2 ranks; no process or file is left behind.\n"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_interrupts_are_ignored_while_the_ranks_start_and_stop_and_the_handler_is_put_back(
    private_tmp, monkeypatch
):
    import helpers.lessons.distributed as distributed

    start, stop, seen = distributed._start, distributed._stop, []

    def start_and_look(*args):
        seen.append(("start", signal.getsignal(signal.SIGINT)))  # what the new processes inherit
        return start(*args)

    def stop_and_interrupt(processes):
        seen.append(("stop", signal.getsignal(signal.SIGINT)))
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # a second Ctrl-C now is lost, harmlessly
            os.kill(os.getpid(), signal.SIGINT)
        return stop(processes)

    monkeypatch.setattr(distributed, "_start", start_and_look)
    monkeypatch.setattr(distributed, "_stop", stop_and_interrupt)
    before = signal.getsignal(signal.SIGINT)
    run_ranks(["allreduce"], 2)
    assert seen == [("start", signal.SIG_IGN), ("stop", signal.SIG_IGN)]
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.parametrize("names", [["allreduce", "nothing"], "allreduce"])  # a str is not a list of names
def test_an_unknown_experiment_is_refused_before_any_rank_starts(names, private_tmp):
    with pytest.raises(UnknownExperimentError, match="unknown experiment.*known: allreduce, gradients"):
        run_ranks(names, 2)
    assert multiprocessing.active_children() == [] and list(private_tmp.iterdir()) == []


def test_sum_bound():
    assert sum_bound(10) == pytest.approx(10 * 2.0**-24, rel=1e-6)
    assert sum_bound(2**24) == float("inf")

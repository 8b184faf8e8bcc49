"""helpers.determinism: seeding, the deterministic-mode context manager, RNG snapshots, workers."""

from __future__ import annotations

import io
import os
import random
import re
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
    resume_epoch,
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


def test_seed_everything_takes_the_whole_range_numpy_accepts():
    for seed in (0, 2**32 - 1):
        assert seed_everything(seed)["random"] == seed


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


def test_deterministic_mode_sets_and_restores_everything(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)  # in force, as from the shell
    before = deterministic_flags()
    with deterministic_mode(cublas_workspace_config=CUBLAS_WORKSPACE) as inside:
        assert inside == deterministic_flags()
        assert inside["use_deterministic_algorithms"] and not inside["warn_only"]
        assert inside["cudnn.deterministic"] and not inside["cudnn.benchmark"]
        assert (
            inside["fill_uninitialized_memory"] and os.environ["CUBLAS_WORKSPACE_CONFIG"] == CUBLAS_WORKSPACE
        )
    assert deterministic_flags() == before and os.environ["CUBLAS_WORKSPACE_CONFIG"] == CUBLAS_WORKSPACE


def test_deterministic_mode_leaves_the_cublas_variable_alone_by_default(no_cublas_variable):
    # a with block cannot set it in time for the PyTorch releases that check it (lesson 04)
    with deterministic_mode() as inside:
        assert inside["use_deterministic_algorithms"] and inside["CUBLAS_WORKSPACE_CONFIG"] is None
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


def test_deterministic_mode_checks_the_cublas_variable_and_never_sets_it(no_cublas_variable, monkeypatch):
    # PyTorch reads it once per process, at the first cuBLAS call: a with block is always too late
    before = deterministic_flags()
    with pytest.raises(RuntimeError, match="restart Python with it in the environment"):
        with deterministic_mode(cublas_workspace_config=CUBLAS_WORKSPACE):
            pytest.fail("the block must not run without the variable in force")
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ and deterministic_flags() == before
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")  # another value in force: refused too
    with pytest.raises(RuntimeError, match="':16:8', not ':4096:8'"):
        with deterministic_mode(cublas_workspace_config=CUBLAS_WORKSPACE):
            pass
    with deterministic_mode(cublas_workspace_config=":16:8") as inside:  # the value in force: runs
        assert inside["use_deterministic_algorithms"] and inside["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"  # left as it was


@pytest.mark.parametrize("value_before", [True, False])
def test_deterministic_mode_restores_inductors_deterministic_option(value_before):
    # torch.use_deterministic_algorithms(mode) also sets torch._inductor.config.deterministic = mode
    import torch._inductor.config as inductor_config

    saved = inductor_config.deterministic
    inductor_config.deterministic = value_before
    try:
        assert deterministic_flags()["inductor.deterministic"] is value_before
        with deterministic_mode() as inside:
            assert inside["inductor.deterministic"] is True and inductor_config.deterministic
        assert inductor_config.deterministic is value_before
        with pytest.raises(RuntimeError):
            with deterministic_mode():
                torch.zeros(5).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
        assert inductor_config.deterministic is value_before
    finally:
        inductor_config.deterministic = saved


def test_before_inductor_is_imported_its_flag_is_read_from_the_environment(monkeypatch):
    # torch._inductor.config starts from TORCHINDUCTOR_DETERMINISTIC when it is first imported
    monkeypatch.delitem(sys.modules, "torch._inductor.config", raising=False)
    for value, expected in (("1", True), ("0", False)):
        monkeypatch.setenv("TORCHINDUCTOR_DETERMINISTIC", value)
        assert deterministic_flags()["inductor.deterministic"] is expected


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


def test_a_snapshot_from_a_machine_with_other_cuda_devices_reads_but_is_not_restored():
    state = snapshot_rng().state_dict()
    state["torch_cuda"] = [torch.zeros(16, dtype=torch.uint8)] * 3  # three CUDA devices there
    snapshot = RngSnapshot.from_state_dict(state)                  # read anywhere ...
    if torch.cuda.device_count() != 3:
        before = torch.get_rng_state()
        with pytest.raises(ValueError, match="3 CUDA generator states"):  # ... restored where it fits
            restore_rng(snapshot)
        assert torch.equal(torch.get_rng_state(), before)


def test_restore_rng_puts_every_generator_back_if_one_refuses_its_state(monkeypatch):
    seed_everything(5)
    target = snapshot_rng()
    seed_everything(6)
    expected = draws()
    seed_everything(6)

    def refuse(state):
        raise RuntimeError("refused")

    monkeypatch.setattr(torch, "set_rng_state", refuse)
    with pytest.raises(RuntimeError, match="refused"):
        restore_rng(target)  # Python's and NumPy's generators were set before torch's refused
    monkeypatch.undo()
    assert draws() == expected


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


def test_noisy_dataset_ends_where_a_list_would():
    with pytest.raises(IndexError, match="out of range"):
        NoisyDataset(length=2)[2]
    assert [item[0].item() for item in NoisyDataset(length=3)] == [0.0, 1.0, 2.0]  # iteration stops there


def test_plot_run_spread_draws_each_run_from_the_exact_value():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers.show.plots import plot_run_spread

    try:
        fig, ax = plot_run_spread(
            {"default": torch.tensor([1.0, 3.0, 2.0]), "deterministic": torch.tensor([2.5, 2.5])},
            exact=2.0,
            unit=0.5,
            unit_name="ULPs",
        )
        default, deterministic, zero = ax.get_lines()
        assert list(default.get_xdata()) == [1, 2, 3] and list(default.get_ydata()) == [-2.0, 2.0, 0.0]
        assert list(deterministic.get_ydata()) == [1.0, 1.0] and list(zero.get_ydata()) == [0.0, 0.0]
        assert ax.get_ylabel() == "result - exact, in ULPs"
    finally:
        plt.close("all")


def _steps(loader, count, state=None, done=0, rng=None, after_skip=None):
    """``count`` batches from a position in ``loader`` on, each followed by the global draws a
    training step makes; returns them and the position reached (epoch-start state, batches done).
    ``after_skip`` runs once the first epoch's skipped batches are loaded."""
    from itertools import islice

    out = []
    while len(out) < count:
        if state is None:
            state = loader.generator.get_state()
        batches = resume_epoch(loader, state, done, rng)
        if after_skip is not None:
            after_skip()
        for batch in islice(batches, count - len(out)):
            out.append((batch, draws()))
            done += 1
        rng, after_skip = None, None
        if len(out) < count:
            state, done = None, 0
    return out, (state, done)


def _same(a, b) -> bool:
    pairs = zip(a, b, strict=True) if len(a) == len(b) else None
    return pairs is not None and all(torch.equal(x, y) and dx == dy for (x, dx), (y, dy) in pairs)


def _shuffled(workers: int, seed: int, length: int) -> DataLoader:
    init = seed_worker if workers else None
    return DataLoader(NoisyDataset(length=length), batch_size=2, shuffle=True, num_workers=workers,
                      worker_init_fn=init, generator=torch.Generator().manual_seed(seed))


def _dataset_rng_restorer(loader: DataLoader, state: dict):
    """Puts the dataset's own generator back; it must run after the skip, which moves it."""

    def restore() -> None:
        loader.dataset.rng.bit_generator.state = state

    return restore


def test_resume_epoch_continues_mid_epoch_bit_for_bit():
    seed_everything(3)
    uninterrupted, _ = _steps(_shuffled(0, 1, 10), 12)           # 5 batches per epoch
    seed_everything(3)
    loader = _shuffled(0, 1, 10)
    first, (state, done) = _steps(loader, 7)                     # stops after 2 batches of epoch 2
    assert done == 2 and _same(first, uninterrupted[:7])
    rng, dataset_rng = snapshot_rng(), loader.dataset.rng.bit_generator.state
    seed_everything(999)                                         # a fresh process, in effect
    resumed = _shuffled(0, 5, 10)
    rest, _ = _steps(resumed, 5, state, done, rng, _dataset_rng_restorer(resumed, dataset_rng))
    assert _same(rest, uninterrupted[7:])
    # The incomplete recipes fail: the generator's state at the checkpoint instead of at the
    # epoch's start, or a fresh epoch instead of the position in it.
    for wrong_state, wrong_done in [(loader.generator.get_state(), done), (None, 0)]:
        fresh = _shuffled(0, 1, 10)
        after = _dataset_rng_restorer(fresh, dataset_rng)
        assert not _same(_steps(fresh, 5, wrong_state, wrong_done, rng, after)[0], uninterrupted[7:])


def _skip_without_loading(loader: DataLoader, state: torch.Tensor, done: int) -> list:
    """The wrong way to resume with workers: the epoch's remaining batches, with workers seeded as
    in the interrupted run but not made to load the skipped batches first."""
    order = torch.Generator()
    order.set_state(state)
    torch.empty((), dtype=torch.int64).random_(generator=order)  # the workers' base seed
    batches = torch.randperm(len(loader.dataset), generator=order).split(loader.batch_size)
    loader.generator.set_state(state)                            # the same base seed again
    rest = DataLoader(loader.dataset, batch_sampler=[b.tolist() for b in batches[done:]],
                      num_workers=loader.num_workers, worker_init_fn=loader.worker_init_fn,
                      generator=loader.generator)
    return [(batch, draws()) for batch in rest]


def test_resume_epoch_continues_mid_epoch_with_workers():
    seed_everything(4)
    uninterrupted, _ = _steps(_shuffled(2, 1, 16), 12)           # 8 batches per epoch
    seed_everything(4)
    first, (state, done) = _steps(_shuffled(2, 1, 16), 6)
    assert done == 6                                             # each worker loaded 3 of them
    rng = snapshot_rng()
    seed_everything(999)
    rest, _ = _steps(_shuffled(2, 7, 16), 6, state, done, rng)   # on into the next epoch
    assert _same(first + rest, uninterrupted)
    # Negative control: the same order and worker seeds, but without loading the skipped batches,
    # the workers' generators are not where they were, and the random columns differ.
    restore_rng(rng)
    wrong = _skip_without_loading(_shuffled(2, 7, 16), state, done)
    assert [b[:, 0].tolist() for b, _ in wrong] == [b[:, 0].tolist() for b, _ in uninterrupted[6:8]]
    pairs = zip(wrong, uninterrupted[6:8], strict=True)
    assert not any(torch.equal(b[:, 1:], u[:, 1:]) for (b, _), (u, _) in pairs)


def test_resume_epoch_at_the_end_of_an_epoch_and_without_workers():
    state = torch.Generator().get_state()
    assert list(resume_epoch(_shuffled(0, 1, 4), state, 2)) == []  # a finished epoch: nothing left
    # without workers, in_order has no effect: batches come in order
    sequential = DataLoader(NoisyDataset(length=4), batch_size=2, in_order=False, generator=torch.Generator())
    assert [b[:, 0].tolist() for b in resume_epoch(sequential, state, 1)] == [[2.0, 3.0]]


class _Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(range(4))


def _one_worker(**options) -> DataLoader:
    return DataLoader(NoisyDataset(), num_workers=1, generator=torch.Generator(), **options)


STATE = torch.Generator().get_state()
BAD_INPUTS = {  # a call, the error it must raise, and a fragment of its message
    "seed a float": (lambda: seed_everything(1.5), TypeError, "seed must be an int"),
    "seed a bool": (lambda: seed_everything(True), TypeError, "seed must be an int"),
    "seed negative": (lambda: seed_everything(-1), ValueError, "seed must be in [0, 2**32)"),
    "seed too large": (lambda: seed_everything(2**32), ValueError, "seed must be in [0, 2**32)"),
    "warn_only not a bool": (lambda: deterministic_mode(warn_only=1), TypeError, "warn_only"),
    "cuBLAS config form": (lambda: deterministic_mode(cublas_workspace_config="4096:8"), ValueError,
                           "cublas_workspace_config must have cuBLAS's form"),
    "no generator": (lambda: resume_epoch(DataLoader(NoisyDataset(), shuffle=True), STATE, 0), ValueError,
                     "give the DataLoader a generator="),
    "batches_done negative": (lambda: resume_epoch(_shuffled(0, 1, 4), STATE, -1), ValueError,
                              "batches_done must be an int from 0"),
    "batches_done too many": (lambda: resume_epoch(_shuffled(0, 1, 4), STATE, 3), ValueError,
                              "len(loader) = 2"),
    "persistent workers": (lambda: resume_epoch(_one_worker(persistent_workers=True), STATE, 0), ValueError,
                           "persistent workers"),
    "in_order=False": (lambda: resume_epoch(_one_worker(in_order=False), STATE, 0), ValueError,
                       "in_order=False"),
    "iterable dataset": (lambda: resume_epoch(DataLoader(_Stream(), generator=torch.Generator()), STATE, 0),
                         ValueError, "an IterableDataset"),
}


@pytest.mark.parametrize("call, error, fragment", BAD_INPUTS.values(), ids=BAD_INPUTS)
def test_bad_input_gets_a_clear_error(call, error, fragment):
    flags = deterministic_flags()
    with pytest.raises(error, match=re.escape(fragment)):
        call()
    assert deterministic_flags() == flags  # refused before anything changed


def test_resume_epoch_refuses_a_sampler_it_cannot_restore():
    from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler, WeightedRandomSampler

    data, g = NoisyDataset(length=8), torch.Generator().manual_seed(0)
    state = g.get_state()
    for sampler in [RandomSampler(data),                                   # seeded from the global one
                    RandomSampler(data, generator=torch.Generator()),      # its own generator
                    WeightedRandomSampler(torch.ones(8), 8),
                    WeightedRandomSampler(torch.ones(8), 8, generator=g)]:       # a kind it does not know
        with pytest.raises(ValueError, match="^sampler:"):
            resume_epoch(DataLoader(data, batch_size=2, sampler=sampler, generator=g), state, 1)
    batches = BatchSampler(RandomSampler(data, generator=g), 2, drop_last=False)
    with pytest.raises(ValueError, match="^batch_sampler:"):
        resume_epoch(DataLoader(data, batch_sampler=batches, generator=g), state, 1)
    # The DataLoader's own samplers are accepted, also when built by hand.
    for loader in [DataLoader(data, batch_size=2, generator=g),
                   DataLoader(data, batch_size=2, sampler=SequentialSampler(data), generator=g),
                   DataLoader(data, batch_size=2, sampler=RandomSampler(data, generator=g), generator=g),
                   DataLoader(data, batch_size=None, shuffle=True, generator=g)]:
        assert len(list(resume_epoch(loader, state, 1))) == len(loader) - 1


# --- philox_randn (lesson 13) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "counter, key, expected",
    [  # Random123's known-answer vectors for Philox4x32-10
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_philox_rounds_give_random123_known_answers(counter, key, expected):
    from helpers.determinism import philox4x32_10

    out = philox4x32_10(np.array([counter], dtype=np.uint64), key)
    assert tuple(int(v) for v in out[0]) == expected


def test_philox_randn_gives_the_gpu_numbers_reported_in_issue_79496():
    from helpers.determinism import philox_randn

    drawn = philox_randn(3, seed=10)
    assert drawn.dtype == torch.float32 and drawn.shape == (3,)
    torch.testing.assert_close(drawn, torch.tensor([-0.1029, 1.6810, -0.2708]), rtol=0, atol=1e-4)
    torch.manual_seed(10)
    assert (drawn - torch.randn(3)).abs().max() > 0.5  # not the CPU's mt19937 stream


# Other torch.randn draws on NVIDIA GPUs that their authors published, each the first elements after
# seeding the CUDA generator (printed to four decimals, so compared to 1e-4):
_PUBLISHED_CUDA_DRAWS = [
    # torch.manual_seed(0), then torch.randn((8, 8), device="cuda"): get_inputs() in
    # kernels/triton_fused_add_mul_relu.py and its printed 8x8 "Input" in README.md of
    # github.com/kapilsh/cuda-mode-lecture (2024); pytorch/pytorch#141645 prints the same -0.9247 for
    # torch.randn(1, 1, 1, device="cuda") after torch.manual_seed(0)
    (0, [-0.9247, -0.4253, -2.6438, 0.1452, -0.1209, -0.5797, -0.6229, -0.3284]),
    # torch.Generator("cuda").manual_seed(1), torch.randn(1, 49 * 12 * 112 * 144, ...): the same first
    # three on an A100 and an H100, torch 2.5.1 (pytorch/pytorch#143086)
    (1, [-0.2963, 2.6764, -0.1408]),
    # torch.Generator(device="cuda").manual_seed(42), torch.randn([1, 64, 2048], ...) on two machines
    # (pytorch/pytorch#158398)
    (42, [0.1940, 2.1614, -0.1721]),
]


@pytest.mark.parametrize("seed, published", _PUBLISHED_CUDA_DRAWS)
def test_philox_randn_gives_other_published_cuda_draws(seed, published):
    from helpers.determinism import philox_randn

    expected = torch.tensor(published)
    torch.testing.assert_close(philox_randn(len(published), seed=seed), expected, rtol=0, atol=1e-4)


def test_philox_randn_uses_both_halves_of_the_seed_and_one_thread_per_element():
    from helpers.determinism import philox_randn

    assert not torch.equal(philox_randn(4, seed=2**32), philox_randn(4, seed=0))
    assert torch.equal(philox_randn(256, seed=7)[:5], philox_randn(5, seed=7))  # thread i, element i


@pytest.mark.parametrize("n, seed", [(0, 0), (257, 0), (True, 0), (2.0, 0), (3, -1), (3, 2**64), (3, 1.0)])
def test_philox_randn_refuses_what_it_cannot_reproduce(n, seed):
    from helpers.determinism import philox_randn

    with pytest.raises(ValueError):
        philox_randn(n, seed)

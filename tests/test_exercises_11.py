"""Lesson 11's exercise checkers accept right answers and reject wrong ones with a hint."""

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler

from helpers import check


def make_loader(dataset, rank, world_size, epoch, seed):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    generator = torch.Generator().manual_seed(seed * world_size + rank)
    return DataLoader(dataset, batch_size=2, sampler=sampler, generator=generator)


def _loader(dataset, rank, world_size, epoch, seed,
            *, sampler_seed=None, set_epoch=True, generator="rank", **kw):
    """A make_loader with one planted bug, chosen by the keyword arguments."""
    sampler = DistributedSampler(
        dataset,
        num_replicas=world_size,
        rank=rank,
        seed=seed if sampler_seed is None else sampler_seed(seed, rank),
        shuffle=kw.pop("shuffle", True),
        drop_last=kw.pop("drop_last", False),
    )
    if set_epoch:
        sampler.set_epoch(epoch)
    seeds = {"rank": seed + rank, "same": seed}
    made = None if generator is None else torch.Generator().manual_seed(seeds[generator])
    return DataLoader(dataset, batch_size=3, sampler=sampler, generator=made, **kw)


def without_set_epoch(*a):
    return _loader(*a, set_epoch=False)


def seeded_per_rank(*a):
    return _loader(*a, sampler_seed=lambda seed, rank: seed + rank)


def seed_ignored(*a):
    return _loader(*a, sampler_seed=lambda seed, rank: 0)


def not_shuffled(*a):
    return _loader(*a, shuffle=False)


def dropping(*a):
    return _loader(*a, drop_last=True)


def without_generator(*a):
    return _loader(*a, generator=None)


def same_generator_everywhere(*a):
    return _loader(*a, generator="same")


def with_workers(*a):
    return _loader(*a, num_workers=2)


def whole_dataset(dataset, rank, world_size, epoch, seed):
    generator = torch.Generator().manual_seed(seed + rank)
    return DataLoader(dataset, batch_size=2, shuffle=True, generator=generator)


def global_permutation(dataset, rank, world_size, epoch, seed):
    order = torch.randperm(len(dataset)).tolist()  # the global generator: another order on every call
    padded = order + order[: (-len(order)) % world_size]
    generator = torch.Generator().manual_seed(rank)
    return DataLoader(dataset, sampler=padded[rank::world_size], generator=generator)


def float_batches(dataset, rank, world_size, epoch, seed):
    return make_loader(dataset.float(), rank, world_size, epoch, seed)


RIGHT = {
    "11.1": {3, 6},
    "11.2": make_loader,
}
WRONG = {
    "11.2": [
        without_set_epoch,
        seeded_per_rank,
        seed_ignored,
        not_shuffled,
        dropping,
        without_generator,
        same_generator_everywhere,
        with_workers,
        whole_dataset,
        global_permutation,
        float_batches,
        "set_epoch",
        DistributedSampler,
        lambda *a: DataLoader(list(range(10))),
    ],
    "11.1": [{3}, {2, 3, 6}, {3, 6, 12}, [3.0, 6.0], "3, 6", {True, 3}],
}


def test_lesson_11_1_names_the_condition_for_powers_of_two():
    # 2, 4 and 8 change the bits only at the ends of the range (overflow, subnormal numbers)
    assert "for normal numbers" in check("11.1", {2, 3, 6}).message
    assert "overflow" in check("11.1", {3, 6}).message


@pytest.mark.parametrize(
    "answer, words",
    [
        (without_set_epoch, "epoch to epoch"),
        (seeded_per_rank, "overlap"),
        (seed_ignored, "seed 0 and seed 1"),
        (not_shuffled, "not shuffled"),
        (dropping, "drop_last"),
        (without_generator, "global generator"),
        (same_generator_everywhere, "same state"),
        (with_workers, "num_workers=0"),
        (whole_dataset, "rank and the world size"),
        (float_batches, "ints"),
    ],
)
def test_lesson_11_2_names_the_property_that_fails(answer, words):
    verdict = check("11.2", answer)
    assert verdict.ok is False and words in verdict.message, verdict


def test_lesson_11_2_hints_do_not_give_the_code_away():
    for answer in WRONG["11.2"]:
        message = check("11.2", answer).message
        assert "set_epoch(" not in message and "manual_seed(" not in message, message


def test_lesson_11_2_leaves_the_global_generator_alone():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    for answer in (make_loader, without_generator, global_permutation):
        check("11.2", answer)
        assert torch.equal(torch.get_rng_state(), state)


def test_lesson_11_2_reports_a_function_that_raises():
    def broken(dataset, rank, world_size, epoch, seed):
        raise KeyError("oops")

    verdict = check("11.2", broken)
    assert verdict.ok is False and "KeyError" in verdict.message


def _epoch_in_the_seed(dataset, rank, world_size, epoch, seed):
    # no set_epoch: the sampler's own seed carries the epoch
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, seed=seed * 1000 + epoch)
    return DataLoader(dataset, sampler=sampler, generator=torch.Generator().manual_seed(rank))


def _by_hand(dataset, rank, world_size, epoch, seed):
    # its own permutation, padded and split by rank, without DistributedSampler
    permutation_generator = torch.Generator().manual_seed(seed * 100_003 + epoch)
    order = torch.randperm(len(dataset), generator=permutation_generator).tolist()
    order += order[: (-len(order)) % world_size]
    generator = torch.Generator().manual_seed(seed * world_size + rank)
    subset = torch.utils.data.Subset(dataset, order[rank::world_size])
    return DataLoader(subset, batch_size=2, generator=generator)


def _unbatched(dataset, rank, world_size, epoch, seed):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, seed=seed)
    sampler.set_epoch(epoch)
    generator = torch.Generator()
    generator.manual_seed(seed + rank + 1000 * epoch)  # a generator that also changes with the epoch
    return DataLoader(dataset, batch_size=None, sampler=sampler, generator=generator)


@pytest.mark.parametrize("answer", [_epoch_in_the_seed, _by_hand, _unbatched])
def test_lesson_11_2_accepts_other_right_styles(answer):
    verdict = check("11.2", answer)
    assert verdict.ok is True, verdict


def test_lesson_11_2_reseeds_no_gpu_generator():
    # the checker varies the CPU's generator only: torch.manual_seed would also reseed every GPU's
    from unittest import mock

    with mock.patch("torch.cuda.manual_seed_all") as spy:
        check("11.2", make_loader)
    spy.assert_not_called()

"""The checkers of lesson 11's exercises (Distributed data parallel).

``CHECKERS`` maps each id to its question and checker.
"""

from __future__ import annotations

import torch

from helpers._validate import describe

#: (dataset length, world size) pairs the checker of 11.2 simulates; 10 over 4 ranks needs padding.
_LOADER_CASES = ((10, 4), (12, 3))


def _indices(make_loader: object, n: int, rank: int, world: int, epoch: int, seed: int) -> list[int] | str:
    """The indices that ``make_loader(...)`` yields for one rank, in order, or a hint saying what failed."""
    from torch.utils.data import DataLoader

    try:
        loader = make_loader(torch.arange(n), rank, world, epoch, seed)
    except Exception as exc:  # the learner's function: report any failure as a hint
        call = f"make_loader(dataset, rank={rank}, world_size={world}, epoch={epoch}, seed={seed})"
        return f"calling {call} failed: {type(exc).__name__}: {exc}"
    if not isinstance(loader, DataLoader):
        return f"make_loader must return a torch.utils.data.DataLoader; it returned {describe(loader)}."
    if loader.num_workers != 0:
        return "use num_workers=0 here: the checker iterates every rank's loader in this one process."
    found: list[int] = []
    try:
        for batch in loader:
            if not isinstance(batch, torch.Tensor) or batch.is_meta or batch.is_floating_point():
                return f"each batch should be a tensor of the dataset's items (ints); got {describe(batch)}."
            found += batch.flatten().tolist()
            if len(found) > 2 * n:
                return f"one rank's loader yields over {2 * n} items from a dataset of {n}: does it stop?"
    except Exception as exc:  # a sampler or collate function of the learner's
        return f"iterating over the loader failed: {type(exc).__name__}: {exc}"
    return found


def _shard_hint(shards: dict[tuple[int, int], list[list[int]]], n: int, world: int) -> str | None:
    """What is wrong with the shards of every rank, by (epoch, seed); None if nothing."""
    from torch.utils.data import DistributedSampler

    first, per_rank, where = shards[0, 0], -(-n // world), f"over {n} items and {world} ranks"
    if any(len(row) == n for row in first):
        return f"{where}, a rank reads every item: the sampler must know the rank and the world size."
    if sum(map(len, first)) == world * (n // world) < n:
        return (
            f"{where}, some items are never read, as with drop_last=True: the shares must cover every item."
        )
    if any(len(row) != per_rank for row in first):
        return f"{where}, every rank should get {per_rank} items (padding included, section 11.3)."
    if len(set(sum(first, []))) != n:
        return (
            f"{where} the shards overlap and miss items: every rank must split the same permutation; "
            "the rank chooses the slice, not the shuffle's seed (section 11.5)."
        )
    unshuffled = [list(DistributedSampler(range(n), world, rank, shuffle=False)) for rank in range(world)]
    if first == unshuffled or all(row == sorted(row) for row in first):
        return "the shards are not shuffled: each rank reads its items in the same order every epoch."
    if len({tuple(sum(shards[epoch, 0], [])) for epoch in range(3)}) < 3:
        return "the order repeats from epoch to epoch: does the sampler know the epoch (section 11.5)?"
    if shards[0, 1] == first:
        return "seed 0 and seed 1 give the same order: the seed must reach the sampler."
    return None


def _generator_state(make_loader: object, rank: int, seed: int) -> torch.Tensor | None | str:
    """The state of the DataLoader's ``generator`` (None without one), or a hint."""
    try:
        generator = make_loader(torch.arange(10), rank, 4, 0, seed).generator
    except Exception as exc:  # the learner's function, or an object without .generator
        return f"calling make_loader failed: {type(exc).__name__}: {exc}"
    if generator is None:
        return None
    if not isinstance(generator, torch.Generator) or generator.device.type != "cpu":
        return f"the DataLoader's generator should be a CPU torch.Generator; it is {describe(generator)}."
    if generator is torch.default_generator:
        return "that is the global generator, in the same state on every rank seeded alike (section 11.5)."
    return generator.get_state()


def _generator_hint(make_loader: object) -> str | None:
    """What is wrong with the DataLoaders' generators of ranks 0 and 1; None if nothing."""
    states = [_generator_state(make_loader, rank, 0) for rank in (0, 1, 0)]
    hint = next((state for state in states if isinstance(state, str)), None)
    if hint is not None:
        return hint
    if states[0] is None or states[1] is None:
        return (
            "the shards are right; now the DataLoader's own generator, which the task asks for: without one, "
            "the workers' base seed comes from the global generator, in the same state on every rank seeded "
            "alike (section 11.5)."
        )
    if torch.equal(states[0], states[1]):
        return "every rank's DataLoader generator starts in the same state, so their workers draw alike."
    if not torch.equal(states[0], states[2]):
        return "two calls for the same rank and seed give generators in different states."
    return None


def _ex_11_2(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function make_loader(dataset, rank, world_size, epoch, seed)."
    with torch.random.fork_rng(devices=[]):  # the caller's global generator is left as it was
        for n, world in _LOADER_CASES:
            shards = {}
            for epoch, seed in ((0, 0), (1, 0), (2, 0), (0, 1)):
                # the global generator differs from call to call (the CPU's only: a GPU's stays as it was)
                torch.default_generator.manual_seed(epoch + 10 * seed)
                rows = [_indices(answer, n, rank, world, epoch, seed) for rank in range(world)]
                hint = next((row for row in rows if isinstance(row, str)), None)
                if hint is not None:
                    return False, hint
                shards[epoch, seed] = rows
            hint = _shard_hint(shards, n, world)
            if hint is not None:
                return False, hint
            torch.default_generator.manual_seed(99)
            torch.rand(3)  # something else draws before the second call
            if _indices(answer, n, 0, world, 0, 0) != shards[0, 0][0]:
                return False, (
                    "two calls with the same rank, epoch and seed gave different orders: the shuffle still "
                    "depends on the global generator. Give the sampler the seed."
                )
        hint = _generator_hint(answer)
    if hint is not None:
        return False, hint
    return True, (
        "one permutation per (seed, epoch), split by rank: disjoint shards (up to the padding) that "
        "reshuffle every epoch and repeat for the same seed; and a DataLoader generator seeded from the rank."
    )


def _ex_11_1(answer: object) -> tuple[bool, str]:
    choices = {2, 3, 4, 6, 8}
    if not (
        isinstance(answer, (set, frozenset, list, tuple))
        and all(isinstance(a, int) and not isinstance(a, bool) for a in answer)
    ):
        return False, f"answer with a set of ints chosen from {sorted(choices)}."
    given = set(answer)
    if not given <= choices:
        return False, f"use only these world sizes: {sorted(choices)}."
    if given & {2, 4, 8}:
        return False, (
            "for normal numbers, multiplying by 1/2, 1/4 or 1/8 only changes the exponent: "
            "the cell after this one shows 2, 4 and 8 agree."
        )
    if given != {3, 6}:
        return False, "is 1/world_size a float32 number for every world size left? Try 1/6 = 1/2 * 1/3."
    return True, (
        "3 and 6: float32(1/3) and float32(1/6) are rounded, so dividing first rounds differently "
        "(near overflow or subnormal numbers, 2, 4 and 8 can differ too: section 11.3)."
    )


CHECKERS = {
    "11.1": ("a set of the world sizes where dividing first can change the bits", _ex_11_1),
    "11.2": ("a function make_loader(dataset, rank, world_size, epoch, seed) returning a DataLoader",
             _ex_11_2),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "11.1": "predict",
    "11.2": "code",
}

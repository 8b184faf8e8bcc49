"""The checkers of lesson 12's exercises (Debugging a mismatch), inline in sections 12.2, 12.4 and 12.5.

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import torch

from helpers.exercises._common import equal

_NET_MODULES = ("standardise", "embed", "embed.0", "embed.1", "pool", "drop", "head")


_NET_CLASSES = ("SumPerBag", "Standardise", "Sequential", "Linear", "ReLU", "Dropout", "Net")


def _ex_12_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, (
            "answer with a module's name in capstone.Net, as a string (as named_modules() gives it)."
        )
    name = answer.strip()
    if name == "pool":
        return True, (
            "pool (SumPerBag): index_put_(accumulate=True) on float32 adds atomically from several "
            "threads (lesson 04), so its result depends on the thread count, and on timing."
        )
    if name not in _NET_MODULES and name.lower() in (c.lower() for c in _NET_CLASSES):
        return False, "that is a class, give the module's name as named_modules() prints it."
    if name.lower() in _NET_MODULES and name not in _NET_MODULES:
        return False, "names are lower-case, as named_modules() prints them."
    if name in ("embed", "embed.0", "head"):
        return False, (
            "a Linear layer's matrix product can depend on the thread count when the BLAS library splits "
            "a long inner sum between threads, but each thread still adds its share in a fixed order. The "
            "source in section 12.1 has a kernel that adds into the same slots from several threads at "
            "once (lesson 04)."
        )
    if name in ("standardise", "embed.1", "drop"):
        return False, (
            "that module works element by element: no output is a sum, so no thread count changes an order."
        )
    return False, (
        "capstone.Net has no module of that name; list them with "
        "capstone.Net(capstone.A).named_modules()."
    )


def _ex_12_2(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str):
        name = answer.strip().lower().removeprefix("torch.")
    elif isinstance(answer, torch.dtype):
        name = str(answer).removeprefix("torch.")
    else:
        return False, "answer with a torch.dtype, such as torch.float32."
    if name in ("bfloat16", "bf16"):
        return True, (
            "bfloat16: B's forward runs under autocast, and first_divergence judges each module against "
            "the rounding of the coarser of the two dtypes, so an error that bfloat16 explains passes."
        )
    if name in ("float32", "float"):
        return False, (
            "float32's tolerance for K = 8 is near 1e-6, as in the rows that differ by nothing; "
            "embed.0's tolerance is far larger. Which dtype does a Linear return under Net.forward's "
            "autocast?"
        )
    if name in ("float16", "half"):
        return False, (
            "compare embed.0's tolerance with 4·sqrt(K)·u for K = 8 and float16's unit roundoff u "
            "(lesson 03): they do not match. Which dtype's u gives the row's tolerance?"
        )
    return False, "answer with the torch.dtype whose rounding the tolerance of embed.0 allows for."


def _ex_12_3(answer: object) -> tuple[bool, str]:
    import dataclasses

    from helpers.lessons import capstone

    if not isinstance(answer, capstone.Config):
        return False, "answer with a capstone.Config, for example dataclasses.replace(C, ...)."
    a_fixed = dataclasses.replace(
        capstone.A, deterministic=True, data_seed=0, stats_as_buffers=True, eval_after_load=True
    )
    if answer.from_checkpoint is not True:
        return False, (
            "the server must keep loading the checkpoint (from_checkpoint=True): fix what goes wrong there."
        )
    if not (equal(answer.seed, a_fixed.seed) and equal(answer.steps, a_fixed.steps)):
        return False, "the seed of the initial weights and the number of steps must be A_fixed's too."
    if answer.data_seed is None:
        return False, "section 12.3: C's noise still comes from the global generator."
    if not equal(answer.data_seed, a_fixed.data_seed):
        return False, (
            "a generator of its own is right, but seeded unlike A_fixed's, so C's data differ from A's."
        )
    if answer.stats_as_buffers is not True or answer.eval_after_load is not True:
        return False, "section 12.4: first_divergence would still name a module of C's reloaded model."
    if answer.bf16 is not False:
        return False, "section 12.4: one part of C's forward pass still runs in another precision."
    same_threads = equal(answer.threads, a_fixed.threads)
    if not same_threads and answer.deterministic is not True:
        return False, (
            "section 12.3: on several threads without deterministic mode, the pool's atomic additions "
            "land in an order that can change from run to run."
        )
    ours, theirs = capstone.train(a_fixed), capstone.train(answer)
    same_bits = ours.losses == theirs.losses and torch.equal(ours.predictions, theirs.predictions)
    if not same_threads:
        if same_bits:
            return False, (
                "it matches on this machine, but nothing promises it across thread counts: deterministic "
                "mode fixes each kernel's order for one thread count (section 12.5). Use A_fixed's."
            )
        return False, (
            "section 12.2's fingerprint diff would still have rows: with another thread count, "
            "the order of some sums differs, and the bits differ here (section 12.5)."
        )
    if not same_bits:
        return False, "every setting matches, yet the bits differ here: please report this."
    if answer.deterministic is not True:
        return True, (
            "the same bits, but deterministic=False matches here only because one thread adds serially; "
            "set deterministic=True, as A_fixed does, so that the order does not rest on that."
        )
    return True, (
        "the same code, seed, data and settings as A_fixed: the same bits, served from the checkpoint."
    )


CHECKERS = {
    "12.1": ("the name of the module that adds into the same slots from several threads at once", _ex_12_1),
    "12.2": ("the torch.dtype whose tolerance first_divergence used for embed.0", _ex_12_2),
    "12.3": ("a capstone.Config for the server C", _ex_12_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "12.1": "work",
    "12.2": "decide",
    "12.3": "code",
}

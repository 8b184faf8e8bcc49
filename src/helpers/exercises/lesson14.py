"""The checkers of lesson 14's exercises (Compiled, sharded, mixed and served).

``CHECKERS`` maps each id to its question and checker.
"""

from __future__ import annotations

import numbers
import operator

import torch

from helpers._validate import describe


def _ex_14_1(plain_keys: object) -> tuple[bool, str]:
    if not callable(plain_keys):
        return False, f"answer with a function plain_keys(state_dict); got {describe(plain_keys)}."
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Sequential(torch.nn.Linear(4, 2)))
    wrapped = {f"_orig_mod.{k}": v for k, v in model.state_dict().items()}  # as a compiled model saves
    given = dict(wrapped)
    try:
        result = plain_keys(given)
    except Exception as exc:  # the learner's function
        return False, f"plain_keys raised {type(exc).__name__}: {exc}"
    if result is None:
        return False, (
            "plain_keys returned None: consume_prefix_in_state_dict_if_present changes the dict in place, "
            "so return the dict after calling it."
        )
    if not isinstance(result, dict):
        return False, f"plain_keys must return a dict; it returned {describe(result)}."
    if sorted(result) != sorted(model.state_dict()):
        return False, f"the keys should be {sorted(model.state_dict())}; got {sorted(result)[:4]}."
    fresh = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Sequential(torch.nn.Linear(4, 2)))
    try:
        fresh.load_state_dict(result)  # strict: every key must match
    except Exception as exc:  # tensors of another shape, or not tensors
        return False, f"the plain model could not load the result: {type(exc).__name__}: {str(exc)[:200]}"
    pairs = zip(fresh.state_dict().values(), model.state_dict().values(), strict=True)
    if not all(torch.equal(a, b) for a, b in pairs):
        return False, "the keys are right but the values changed: keep each tensor as it is."
    untouched = {"0.weight": torch.ones(1)}
    try:
        again = plain_keys(dict(untouched))
    except Exception as exc:
        return False, f"a state dict without the prefix made plain_keys raise {type(exc).__name__}: {exc}"
    if not isinstance(again, dict) or list(again) != ["0.weight"]:
        return False, "a state dict without the prefix should come back with its keys unchanged."
    return True, "every key lost its leading _orig_mod., and the plain model loaded the result strictly."


def _real(a: object) -> bool:
    if isinstance(a, torch.Tensor):
        return a.numel() == 1 and not a.is_complex()
    return isinstance(a, numbers.Real) and not isinstance(a, bool)


def _ex_14_2(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2 and all(_real(a) for a in answer)):
        return False, f"answer with a tuple of two numbers (scale, updates); got {describe(answer)}."
    scale, updates = (float(a) for a in answer)  # NumPy's numbers and one-element tensors too
    if updates != 9:
        return False, "a skipped step changes no weight, and only step 5 was skipped: how many updated?"
    if scale == 2.0**18 or scale == 2.0**17:
        return False, "step 5 halved the scale and reset the count of clean steps: start counting again at 6."
    if scale != 2.0**16:
        return False, (
            "follow the scale: steps 0-3 clean, so it doubles after step 3; step 5 overflows, so it halves; "
            "steps 6, 7, 8 are only three clean steps."
        )
    return True, (
        "65536 and 9: doubled to 131072 after four clean steps (0-3), halved back at the skipped step 5, "
        "and steps 6-8 are three clean steps, one short of the next doubling."
    )


def _whole(a: object) -> bool:
    return not isinstance(a, bool) and hasattr(type(a), "__index__")


def _ex_14_3(answer: object) -> tuple[bool, str]:
    ints = isinstance(answer, (list, tuple)) and all(_whole(a) for a in answer)
    if not ints or len(answer) != 4:
        return False, f"answer with a list of four ints; got {describe(answer)}."
    answer = [operator.index(a) for a in answer]  # NumPy's integers too
    pieces = [t.shape[0] for t in torch.empty(10, 16).chunk(4)]
    right = pieces + [0] * (4 - len(pieces))  # a rank beyond torch.chunk's pieces holds no rows
    if list(answer) == [3, 3, 2, 2]:
        return False, "that is an even split; torch.chunk gives every piece ceil(10 / 4) rows but the last."
    if sum(answer) != 10:
        return False, "every row is on exactly one rank: the counts must add up to the weight's 10 rows."
    if list(answer) != right:
        return False, "torch.chunk gives each rank ceil(10 / 4) = 3 rows while rows remain."
    return True, "3, 3, 3 and 1: torch.chunk's pieces of ceil(10 / 4) rows, the last one shorter."


_LATE = {"CUDA_LAUNCH_BLOCKING", "CUBLAS_WORKSPACE_CONFIG"}
_NAMES = _LATE | {"use_deterministic_algorithms", "cudnn.deterministic"}


def _ex_14_4(answer: object) -> tuple[bool, str]:
    if not (isinstance(answer, (set, frozenset, list, tuple)) and all(isinstance(a, str) for a in answer)):
        return False, f"answer with a set of names from {sorted(_NAMES)}; got {describe(answer)}."
    given = set(answer)
    if not given <= _NAMES:
        return False, f"use only these names: {sorted(_NAMES)}."
    if given & {"use_deterministic_algorithms", "cudnn.deterministic"}:
        return False, (
            "PyTorch reads its own flags each time an operation runs: setting them later still works."
        )
    if given != _LATE:
        left = "both environment variables are" if not given else "one environment variable is"
        return False, f"{left} left: which is read once, or belongs in the shell?"
    return True, (
        "the two environment variables: the first is a debugging switch meant for the shell that starts "
        "the program, and PyTorch reads the second once, at the first cuBLAS workspace, which this process "
        "has set up already. PyTorch's own flags take effect from the next operation."
    )


CHECKERS = {
    "14.1": ("a function plain_keys(state_dict) returning the state dict without the _orig_mod. prefix",
             _ex_14_1),
    "14.2": ("a tuple (scale used by step 9, number of steps that updated the weights)", _ex_14_2),
    "14.3": ("a list of the rows each of the 4 ranks holds, rank 0 first", _ex_14_3),
    "14.4": ("a set of the settings that come too late", _ex_14_4),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {"14.1": "code", "14.2": "work", "14.3": "work", "14.4": "work"}

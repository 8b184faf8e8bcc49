"""The checkers of lesson 10's exercises (Validating across devices).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import math

import torch
import torch.nn as nn

from helpers._validate import describe
from helpers.exercises._common import as_float, as_number, is_number


def _ex_10_1(answer: object) -> tuple[bool, str]:
    from helpers.compare import reduction_tolerances

    if not is_number(answer):
        return False, "answer with a float, such as 1e-6."
    answer = as_float(answer)
    expected, _ = reduction_tolerances(torch.float32, 1024)
    if math.isclose(answer, 1.3e-6):
        return False, "that is the default; for K = 1024 the K-dependent term is larger."
    if not math.isclose(answer, expected, rel_tol=1e-3):
        return False, "rtol = max(1.3e-6, 4 * u * sqrt(K)) with u = 2**-24 for float32 and K = 1024."
    return True, f"4 * 2**-24 * 32 = {expected:.3g}: about six times the float32 default."


def _mlp(seed: int, sizes: tuple[int, ...], x_scale: float, param_scale: float = 1.0):
    """A ReLU MLP of `sizes` and 32 inputs drawn from [0, x_scale), without touching the global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)  # CPU only: fork_rng restores only that
        layers: list[nn.Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            layers.append(nn.Linear(n_in, n_out))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        model = nn.Sequential(*layers).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(param_scale)
    x = torch.rand(32, sizes[0], generator=torch.Generator().manual_seed(seed)) * x_scale
    return model, x


def _chunked(model: nn.Sequential, x: torch.Tensor, chunks: int = 3) -> torch.Tensor:
    """model(x) in float32 with every layer's sums split into `chunks` partial sums: another order."""
    h = x
    for layer in model:
        if isinstance(layer, nn.Linear):
            parts = [h[:, c] @ layer.weight[:, c].T for c in torch.arange(layer.in_features).chunk(chunks)]
            h = sum(parts[1:], parts[0]) + layer.bias
        else:
            h = layer(h)
    return h


def _bugged(model: nn.Sequential, bug: str) -> nn.Sequential:
    broken = copy.deepcopy(model)
    linear = [m for m in broken if isinstance(m, nn.Linear)]
    with torch.no_grad():
        {
            "the last layer's weights 0.1% too large": lambda: linear[-1].weight.mul_(1.001),
            "the first layer's weights 0.1% too large": lambda: linear[0].weight.mul_(1.001),
            "the last layer's bias left out": lambda: linear[-1].bias.zero_(),
        }[bug]()
    return broken


_MLPS = {  # name: (seed, sizes, input scale, parameter scale)
    "an MLP with larger weights, fed raw pixel values (0 to 255)": (0, (64, 256, 256, 10), 255.0, 2.0),
    "a wider MLP fed values in [0, 1)": (1, (512, 1024, 10), 1.0, 1.0),
    "an MLP with small weights and outputs": (2, (128, 128, 4), 1.0, 0.01),
}


@functools.lru_cache(maxsize=1)
def _mlp_cases():
    """For each MLP: the model, x, its float64 output, legitimate float32 outputs and bugged ones."""
    cases = {}
    threads = torch.get_num_threads()
    try:
        with torch.no_grad():
            for name, (seed, sizes, x_scale, p_scale) in _MLPS.items():
                model, x = _mlp(seed, sizes, x_scale, p_scale)
                expected = copy.deepcopy(model).double()(x.double())
                legit = {"float32 as usual": model(x), "float32, batch reversed": model(x.flip(0)).flip(0),
                         "float32, each layer's sums in three chunks": _chunked(model, x)}
                torch.set_num_threads(1)
                legit["float32 on one thread"] = model(x)
                torch.set_num_threads(threads)
                bugs = {bug: _bugged(model, bug)(x) for bug in (
                    "the last layer's weights 0.1% too large", "the first layer's weights 0.1% too large",
                    "the last layer's bias left out")}
                cases[name] = (model, x, expected, legit, bugs)
    finally:
        torch.set_num_threads(threads)
    return cases


def _ex_10_2(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function tolerance_for(model, x) that returns (rtol, atol)."
    for name, (model, x, expected, legit, bugs) in _mlp_cases().items():
        threads = torch.get_num_threads()
        try:
            with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng(devices=[]):
                returned = answer(copy.deepcopy(model), x.clone())  # copies: the learner may change them
        except Exception as exc:  # the learner's function: report any failure as a hint
            return False, f"calling it failed: {type(exc).__name__}: {exc}"
        finally:
            torch.set_num_threads(threads)
        pair = tuple(returned) if isinstance(returned, (tuple, list)) else None
        numbers = [as_number(v) for v in pair] if pair is not None and len(pair) == 2 else None
        if numbers is None or any(v is None for v in numbers):
            return False, f"tolerance_for must return two numbers, (rtol, atol), not {describe(returned)}."
        rtol, atol = (as_float(v) for v in numbers)
        if not all(math.isfinite(v) and v >= 0 for v in (rtol, atol)):
            return False, f"rtol and atol must be finite and not negative; it returned ({rtol!r}, {atol!r})."
        for variant, actual in legit.items():
            if not torch.allclose(actual.double(), expected, rtol=rtol, atol=atol):
                zero_atol = "With atol = 0, entries near zero fail on their relative error alone. "
                return False, (
                    f"for {name}, it rejects a correct result ({variant}): the tolerance is too tight. "
                    + (zero_atol if atol == 0 else "")
                    + "Size rtol from the longest chain of sums in the model, and atol from the size of its "
                    "outputs (sections 10.2 and 10.4)."
                )
        for bug, actual in bugs.items():
            if torch.allclose(actual.double(), expected, rtol=rtol, atol=atol):
                return False, (
                    f"for {name}, it accepts a model with {bug}: the tolerance is too loose. "
                    "A fixed tolerance cannot fit every model: build it from this model and its outputs."
                )
    return True, (
        "for all three MLPs it accepts the correct results it was given (another thread count, batch order "
        "or split of the sums) and rejects a 0.1% error in one layer's weights and a missing bias."
    )


CHECKERS = {
    "10.1": ("the rtol for float32 and K = 1024", _ex_10_1),
    "10.2": ("a function tolerance_for(model, x) returning (rtol, atol)", _ex_10_2),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "10.1": "work",
    "10.2": "code",
}

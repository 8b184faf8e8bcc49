"""The checkers of lesson 04's exercises (Deterministic algorithms).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping

import torch

from helpers._validate import describe


def _restore_flags(before: dict[str, object]) -> None:
    """Put back every setting of ``deterministic_flags()`` that learner code may have changed."""
    from helpers.determinism import deterministic_flags

    if deterministic_flags() == before:
        return
    torch.use_deterministic_algorithms(
        bool(before["use_deterministic_algorithms"]), warn_only=bool(before["warn_only"])
    )
    inductor_config = sys.modules.get("torch._inductor.config")
    if inductor_config is not None:
        inductor_config.deterministic = bool(before["inductor.deterministic"])
    torch.backends.cudnn.deterministic = bool(before["cudnn.deterministic"])
    torch.backends.cudnn.benchmark = bool(before["cudnn.benchmark"])
    torch.utils.deterministic.fill_uninitialized_memory = bool(before["fill_uninitialized_memory"])


@contextlib.contextmanager
def _guarded() -> Iterator[dict[str, object]]:
    """Run learner code; afterwards restore threads, global RNG and deterministic settings.

    Yields a dict in which the caller notes what the code left changed; on exit it holds ``"flags"``
    if a deterministic setting was left changed.
    """
    from helpers.determinism import deterministic_flags

    threads, flags = torch.get_num_threads(), deterministic_flags()
    left: dict[str, object] = {}
    with torch.random.fork_rng(devices=[]):
        try:
            yield left
        finally:
            torch.set_num_threads(threads)
            if deterministic_flags() != flags:
                left["flags"] = True
                _restore_flags(flags)


# --- 04.1: decide which switch removes each of five run-to-run differences

#: The six choices the question offers, as the lesson prints them.
SWITCH_CHOICES = (
    "use_deterministic_algorithms",
    "cudnn.deterministic",
    "cudnn.benchmark=False",
    "set_num_threads",
    "manual_seed",
    "none",
)
#: Spellings a learner may reasonably use for each choice (compared after _normalise).
_SPELLINGS = {
    "use_deterministic_algorithms": ("use_deterministic_algorithms", "use_deterministic_algorithms(true)",
                                     "deterministicmode", "deterministicalgorithms"),
    "cudnn.deterministic": ("cudnn.deterministic", "cudnn.deterministic=true", "backends.cudnn.deterministic",
                            "backends.cudnn.deterministic=true"),
    "cudnn.benchmark=False": ("cudnn.benchmark=false", "backends.cudnn.benchmark=false", "benchmark=false"),
    "set_num_threads": ("set_num_threads", "set_num_threads(n)", "afixedset_num_threads(n)", "fixedthreads",
                        "fixedthreadcount"),
    "manual_seed": ("manual_seed", "manual_seed(0)", "seed", "seeding"),
    "none": ("none", "noswitch", "nothing", "noneofthem"),
}
#: The right choices for each symptom (the matrix of section 4.3; (e) has two).
_SWITCH_ANSWERS = {
    "a": {"use_deterministic_algorithms"},
    "b": {"cudnn.benchmark=False"},
    "c": {"set_num_threads"},
    "d": {"none"},
    "e": {"cudnn.deterministic", "use_deterministic_algorithms"},
}
#: A hint for each symptom and wrong choice; "" is the hint for any other wrong choice.
_SWITCH_HINTS = {
    "a": {
        "cudnn.deterministic": "cudnn.deterministic reaches only cuDNN's own algorithms, and scatter_add_ is "
                               "one of PyTorch's CUDA kernels (section 4.2).",
        "cudnn.benchmark=False": "cudnn.benchmark chooses among cuDNN's convolution algorithms; scatter_add_ "
                                 "is not one of them.",
        "none": "one switch does reach scatter_add_ on CUDA: which one lists it among the operations it "
                "makes deterministic?",
        "": "nothing in scatter_add_ is random and no CPU thread is involved: what varies is the order of "
            "the GPU's additions (sections 4.1 and 4.2).",
    },
    "b": {
        "use_deterministic_algorithms": "every step repeats inside one launch, so the algorithm in use is "
                                        "already deterministic; what differs between launches is which "
                                        "algorithm is in use (note 1 of the matrix).",
        "cudnn.deterministic": "every step repeats inside one launch, so the algorithm in use is already "
                               "deterministic; what differs between launches is which one (note 2 of the "
                               "matrix).",
        "": "a step repeats inside one launch but not across launches: something is decided once per "
            "process, on the first call (section 4.2).",
    },
    "c": {
        "use_deterministic_algorithms": "section 4.6 ran exactly this under deterministic mode: how many of "
                                        "its 20 sums changed between 1 and 2 threads?",
        "none": "on one machine, one setting does make the launches agree: what differs between them?",
        "": "each launch repeats itself; only the number of threads differs between the launches "
            "(section 4.6).",
    },
    "d": {
        "": "every kernel here can repeat itself for one shape; what changes from request to request is "
            "the batch (section 4.2).",
    },
    "e": {
        "cudnn.benchmark=False": "it is already False: the choice of algorithm repeats, and still the "
                                 "gradient changes (section 4.3).",
        "": "benchmark is off, so cuDNN's choice of algorithm repeats from run to run; the variation comes "
            "from inside the chosen algorithm (section 4.2).",
    },
}


def _normalise(choice: str) -> str:
    text = choice.strip().strip("'\"").lower().replace(" ", "").replace("`", "")
    text = text.removeprefix("torch.").removeprefix("backends.")
    return re.sub(r"set_num_threads\(\d+\)", "set_num_threads", text)


def _choice(value: object) -> str | None:
    """The choice of SWITCH_CHOICES a learner's string names, or None; Python's None means "none"."""
    if value is None:
        return "none"
    if not isinstance(value, str):
        return None
    text = _normalise(value)
    for choice, spellings in _SPELLINGS.items():
        if text in spellings or text == _normalise(choice):
            return choice
    return None


def _ex_04_1(answer: object) -> tuple[bool, str]:
    shape = ("answer with a dict from each letter, 'a' to 'e', to one of: "
             + ", ".join(repr(c) for c in SWITCH_CHOICES) + ".")
    if not isinstance(answer, Mapping):
        return False, shape
    try:
        given = {str(k).strip().strip("()").lower(): v for k, v in answer.items()}
    except Exception:  # a mapping whose keys or items misbehave
        return False, shape
    if sorted(given) != sorted(_SWITCH_ANSWERS):
        missing = sorted(set(_SWITCH_ANSWERS) - set(given))
        return False, f"{shape} Missing: {', '.join(missing)}." if missing else shape
    wrong = []
    for letter in sorted(_SWITCH_ANSWERS):
        value = given[letter]
        if isinstance(value, str) and "deterministic_mode" in value.replace(" ", ""):
            return False, (
                f"({letter}): deterministic_mode() sets several switches at once; pick the one of the six "
                "that does the job here."
            )
        choice = _choice(value)
        if choice is None:
            return False, f"({letter}) names {describe(value)}, which is not one of the choices. {shape}"
        if choice not in _SWITCH_ANSWERS[letter]:
            wrong.append((letter, choice))
    if wrong:
        letter, choice = wrong[0]
        hints = _SWITCH_HINTS[letter]
        right = len(_SWITCH_ANSWERS) - len(wrong)
        return False, f"{right} of 5 right. ({letter}): {hints.get(choice, hints[''])}"
    return True, (
        "(a) deterministic mode, for PyTorch's own CUDA kernels; (b) cudnn.benchmark = False, since the "
        "choice varies between launches; (c) the same thread count in every launch; (d) no switch, since "
        "batch invariance is a property of the kernels; (e) cudnn.deterministic or deterministic mode, "
        "which restrict cuDNN to deterministic algorithms."
    )


# --- 04.2: write a scatter-add whose bits depend neither on the run nor on the thread count

_BINS = 10
#: Above ATen's GRAIN_SIZE, and long enough per call that the two threads of the atomic path overlap even on
#: a busy machine (with 500,000 the unchanged function passed about 1 check in 12 under load; with two
#: million, none of 150). A per-bin torch.sum of this size splits between threads too.
_BIG = 2_000_000


def _histogram_case(n: int, bins: int, top: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, top, (n,), generator=g), torch.rand(n, generator=g)


def _call(fn: Callable, index: torch.Tensor, weights: torch.Tensor, bins: int) -> torch.Tensor:
    """Call the learner's function on copies (so that it cannot change the inputs of later calls)."""
    return fn(index.clone(), weights.clone(), bins)


def _ex_04_2(answer: object) -> tuple[bool, str]:
    if not callable(answer) or isinstance(answer, type):
        return False, "answer with a function histogram(index, weights, bins) that returns a float32 tensor."
    small_index, small_weights = _histogram_case(1000, 12, 9, seed=1)  # bins 9, 10 and 11 stay empty
    big_index, big_weights = _histogram_case(_BIG, _BINS, _BINS, seed=0)
    runs: dict[int, list[torch.Tensor]] = {1: [], 2: []}
    try:
        with _guarded() as left:
            state = torch.get_rng_state()
            small = _call(answer, small_index, small_weights, 12)
            for threads in (2, 1, 2, 1, 2):
                torch.set_num_threads(threads)
                runs[threads].append(_call(answer, big_index, big_weights, _BINS))
                if torch.get_num_threads() != threads:
                    left["threads"] = torch.get_num_threads()
            reseeds = not torch.equal(torch.get_rng_state(), state)
    except Exception as exc:  # the learner's function: report any failure as a hint
        return False, f"calling histogram(index, weights, bins) failed: {type(exc).__name__}: {exc}"
    for out, bins in ((small, 12), *((r, _BINS) for rs in runs.values() for r in rs)):
        if not isinstance(out, torch.Tensor) or out.is_meta:
            return False, f"histogram must return a tensor; it returned {describe(out)}."
        if out.layout != torch.strided or out.device.type != "cpu":
            return False, (
                f"histogram must return an ordinary (dense) CPU tensor; it returned {describe(out)}."
            )
        if out.dtype != torch.float32 or tuple(out.shape) != (bins,):
            return False, (
                f"with bins={bins} it returned {describe(out)}; return a float32 tensor of shape ({bins},), "
                "one sum per bin, empty bins included."
            )
    if left.get("threads") is not None:
        return False, (
            f"it left torch's thread count at {left['threads']}: a function must put back any global "
            "setting it changes (try/finally), or the rest of the program runs differently."
        )
    if left.get("flags"):
        return False, (
            "it left a deterministic setting changed: switch it inside a with block "
            "(deterministic_mode(), section 4.3) so that it is restored."
        )
    try:  # a tensor that requires grad, or has its negative or conjugate bit set, is still a fine answer
        small = _plain(small)
        runs = {t: [_plain(r) for r in rs] for t, rs in runs.items()}
        return _compare(small, small_index, small_weights, runs, big_index, big_weights, reseeds)
    except Exception as exc:  # a tensor subclass whose methods fail: report it as a hint
        return False, f"its result could not be compared: {type(exc).__name__}: {exc}"


def _plain(out: torch.Tensor) -> torch.Tensor:
    """The values of a returned tensor as a plain tensor, whatever autograd or view bits it carries."""
    return out.detach().resolve_conj().resolve_neg().contiguous().as_subclass(torch.Tensor)


def _compare(
    small: torch.Tensor,
    small_index: torch.Tensor,
    small_weights: torch.Tensor,
    runs: dict[int, list[torch.Tensor]],
    big_index: torch.Tensor,
    big_weights: torch.Tensor,
    reseeds: bool,
) -> tuple[bool, str]:
    """Compare the sums with a float64 reference, then the bits of the calls with each other."""
    cases = ((small, small_index, small_weights, 12), (runs[1][0], big_index, big_weights, _BINS))
    for out, index, weights, bins in cases:
        exact = torch.zeros(bins, dtype=torch.float64).index_add_(0, index, weights.double())
        if not torch.allclose(out.double(), exact, rtol=1e-4, atol=1e-6):
            worst = int((out.double() - exact).abs().argmax())
            return False, (
                f"with {len(index):,} weights and bins={bins}, bin {worst} holds {out[worst].item():.6g} "
                f"where the sum of its weights is {exact[worst].item():.6g}: each bin must hold the sum of "
                "the weights whose index names it."
            )
    bits = {t: {r.numpy().tobytes() for r in rs} for t, rs in runs.items()}
    if reseeds and (len(bits[1]) > 1 or bits[1] != bits[2]):
        return False, (
            "its calls do not all give the same bits. It seeds or draws from the global generator, but "
            "nothing here is random: the inputs are the same tensors every time. What varies is the order "
            "in which the threads add (sections 4.1 and 4.6)."
        )
    if len(bits[2]) > 1:
        return False, (
            f"on 2 threads its {len(runs[2])} calls gave {len(bits[2])} different results: it still adds "
            "from several threads in whatever order they arrive (section 4.1). Which settings make that "
            "kernel take a fixed order?"
        )
    if len(bits[1]) > 1:
        return False, "on 1 thread its calls gave different results: something in it varies between calls."
    if bits[1] != bits[2]:
        differ = int((runs[1][0] != runs[2][0]).sum())
        return False, (
            f"each thread count repeats itself, but {differ} of the {_BINS} sums differ between 1 and 2 "
            "threads: the order of its additions still depends on how the work is split between threads "
            "(section 4.6). "
            "Which kernel adds in one fixed order whatever the thread count?"
        )
    return True, (
        "the same bits in five calls, on 1 and 2 threads, and the right sums: a fixed order of additions, "
        "whatever the run and the thread count."
    )


CHECKERS = {
    "04.1": ("a dict from each symptom's letter to the switch that removes it", _ex_04_1),
    "04.2": ("a function histogram(index, weights, bins) that returns the same bits every time", _ex_04_2),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "04.1": "decide",
    "04.2": "code",
}

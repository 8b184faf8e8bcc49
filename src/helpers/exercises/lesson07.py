"""The checkers of lesson 07's exercises (Checkpoints across devices).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
import torch.nn as nn
import torch.serialization as ser

_PREDICT_1 = ("error", "partial", "nothing")


def strict_false_with_a_wider_layer() -> tuple[str, list[str]]:
    """What ``load_state_dict(..., strict=False)`` does when one layer's shape differs.

    Loads a ``Linear(4, 8), ReLU, Linear(8, 2)`` state_dict into the same network with
    ``Linear(8, 3)`` last. Returns the outcome (one of ``"error"``, ``"partial"``, ``"nothing"``) and
    the keys whose values changed; the global RNG is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(7)  # CPU only: fork_rng restores only that
        small = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        wide = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    before = {k: v.clone() for k, v in wide.state_dict().items()}
    try:
        wide.load_state_dict(small.state_dict(), strict=False)
        raised = False
    except RuntimeError:
        raised = True
    changed = [k for k, v in wide.state_dict().items() if not torch.equal(v, before[k])]
    return ("error" if raised else "partial" if changed else "nothing"), changed


def _ex_07_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str) or answer.strip().strip("'\"").lower() not in _PREDICT_1:
        return False, f"answer with one of the strings {', '.join(repr(a) for a in _PREDICT_1)}."
    outcome, changed = strict_false_with_a_wider_layer()
    if outcome == "error":
        happened = (
            "here load_state_dict raised a RuntimeError (size mismatch): strict=False forgives missing and "
            "unexpected keys, not a key whose shape differs. It raised only after copying the tensors that "
            f"fit ({len(changed)} of them here), so a model whose load failed is not left as it was."
        )
    else:  # not the behaviour of the torch this course requires; explained in case a release changes it
        happened = f"here it raised no error and {len(changed)} tensors changed."
    if answer.strip().strip("'\"").lower() != outcome:
        return False, "your prediction differs from the run: " + happened
    return True, happened


# ---- 07.2: load_weights(model, path) -------------------------------------------------------------

#: Set when the unsafe test file's payload runs, i.e. when it was loaded with weights_only=False.
_CODE_RAN: list[str] = []


def _record_code_ran() -> str:
    _CODE_RAN.append("ran")
    return "this string was made by code inside the checkpoint"


class _RunsOnLoad:
    def __reduce__(self):
        return (_record_code_ran, ())


class _Net(nn.Module):
    """The model of exercise 07.2's checkpoints; ``head_module`` catches ``str.replace('module.', '')``."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8))
        self.head_module = nn.Linear(8, 2)
        self.register_buffer("scale", torch.ones(2))


def _missing_gpu_tag() -> str:
    """The location tag of a GPU this machine lacks: ``cuda:0`` without CUDA, ``cuda:<count>`` with it.

    A file tagged so needs ``map_location`` on every machine, so that a loader without it fails the
    check on a GPU machine too (there a ``cuda:0`` file would load onto the GPU without it).
    """
    return f"cuda:{torch.cuda.device_count() if torch.cuda.is_available() else 0}"


def _save_tagged_cuda(obj: object, path: Path) -> None:
    """``torch.save(obj, path)`` with every CPU storage tagged as saved on a GPU this machine lacks.

    ``cuda:0`` on a machine without CUDA, as a save on the first GPU tags it (see ``_missing_gpu_tag``).
    The same trick as ``helpers.lessons.checkpoints.cuda_tagged_copy`` (``register_package``), done in this
    process so that the checker stays fast; the registry is restored before returning.
    """
    registry, tag = list(ser._package_registry), _missing_gpu_tag()
    try:
        ser.register_package(0, lambda s: tag if s.device.type == "cpu" else None, lambda s, loc: None)
        torch.save(obj, path)
    finally:
        ser._package_registry[:] = registry


def _prefixed(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {prefix + k: v for k, v in state.items()}


#: Why loading each refused case must raise, by the start of its description.
_MUST_RAISE = {
    "a checkpoint that lacks": "the spec asks for strict loading, so that a missing key raises instead of "
    "passing silently (section 7.4)",
    "a checkpoint with a key": "the spec asks for strict loading, so that an unexpected key raises instead "
    "of being dropped silently (section 7.4)",
    "a checkpoint that holds": "its weights were never loaded, yet the caller got the model back as if they "
    "had been: let the refusal reach the caller (section 7.3)",
}


def _cases(folder: Path) -> list[tuple[str, Path, dict[str, torch.Tensor] | None]]:
    """(description, file, the state the model must hold after loading, or None: loading must raise)."""
    cases = []
    for i, (what, wrap, nested, on_gpu) in enumerate(
        [
            ("a bare state_dict saved on the CPU", "", False, False),
            ("a bare state_dict saved on a GPU (storages tagged with a GPU this machine lacks)", "", False,
             True),
            ("the state_dict of a torch.compile(model) ('_orig_mod.' keys)", "_orig_mod.", False, False),
            ("a training checkpoint {'model': ..., 'optimizer': ..., 'step': ...} saved on a GPU from a "
             "DDP model ('module.' keys)", "module.", True, True),
            ("a training checkpoint from DDP around a compiled model ('module._orig_mod.' keys)",
             "module._orig_mod.", True, False),
            ("the state_dict of torch.compile(DDP(model)) ('_orig_mod.module.' keys), saved on a GPU",
             "_orig_mod.module.", False, True),
        ]
    ):
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(100 + i)  # CPU only: fork_rng restores only that
            source = _Net()
        source.scale.mul_(i + 2)  # a buffer that differs from a fresh model's
        state = source.state_dict()
        saved: object = _prefixed(state, wrap)
        if nested:  # an SGD state_dict as it is before the first step (built by hand: a real optimizer's
            # first construction in a process imports torch._dynamo, which takes seconds)
            group = {"lr": 0.1, "momentum": 0.9, "params": list(range(len(list(source.parameters()))))}
            saved = {"model": saved, "optimizer": {"state": {}, "param_groups": [group]}, "step": 100 * i}
        path = folder / f"case{i}.pt"
        (_save_tagged_cuda if on_gpu else torch.save)(saved, path)
        cases.append((what, path, {k: v.clone() for k, v in state.items()}))
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(99)  # CPU only: fork_rng restores only that
        state = _Net().state_dict()
    del state["head_module.bias"]
    torch.save({"model": state, "step": 1}, folder / "missing.pt")
    cases.append(("a checkpoint that lacks the key 'head_module.bias'", folder / "missing.pt", None))
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(98)  # CPU only: fork_rng restores only that
        state = _Net().state_dict()
    state["decoder.weight"] = torch.ones(2, 2)  # from a model with one more layer
    torch.save(state, folder / "unexpected.pt")
    what = "a checkpoint with a key the model does not have, 'decoder.weight'"
    cases.append((what, folder / "unexpected.pt", None))
    torch.save({"model": _Net().state_dict(), "note": _RunsOnLoad()}, folder / "unsafe.pt")
    cases.append(("a checkpoint that holds an object whose unpickling runs code", folder / "unsafe.pt", None))
    return cases


def _short(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    if first.startswith("Error(s) in loading state_dict") and len(str(exc).splitlines()) > 1:
        first = str(exc).strip().splitlines()[1].strip()  # the line that names the keys
    return f"{type(exc).__name__}: {first[:220]}"


def _ex_07_2(answer: object) -> tuple[bool, str]:
    if isinstance(answer, type) or not callable(answer):
        return False, "answer with the function load_weights itself (def load_weights(model, path): ...)."
    _CODE_RAN.clear()
    try:
        with tempfile.TemporaryDirectory(prefix="load-weights-") as folder, torch.random.fork_rng(devices=[]):
            return _check_load_weights(answer, Path(folder))
    finally:
        _CODE_RAN.clear()


def _check_load_weights(load_weights: object, folder: Path) -> tuple[bool, str]:
    for what, path, expected in _cases(folder):
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(1)  # CPU only: fork_rng restores only that
            model = _Net()
        try:
            returned = load_weights(model, path)
        except Exception as exc:  # the learner's code: any failure is a hint
            if expected is None and not _CODE_RAN:
                continue  # it refused, as it must
            if _CODE_RAN:
                break
            return False, f"on {what}, calling it failed: {_short(exc)}"
        if _CODE_RAN:
            break
        if expected is None:
            why = next(reason for start, reason in _MUST_RAISE.items() if what.startswith(start))
            return False, f"on {what}, it returned without an error: {why}."
        if returned is not model:
            return (
                False,
                f"on {what}, it returned {type(returned).__name__}, not the model it was given: "
                "return the model.",
            )
        try:
            held = model.state_dict()
            wrong = [k for k in expected if k not in held or not torch.equal(held[k].cpu(), expected[k])]
            devices = {t.device.type for t in held.values()}
        except Exception as exc:
            return False, f"on {what}, reading the model's state_dict after loading failed: {_short(exc)}"
        if wrong:
            return False, f"on {what}, the model's {wrong} do not equal the saved tensors after loading."
        if devices != {"cpu"}:
            where = sorted(devices)
            return False, f"on {what}, the model's tensors ended up on {where}: keep them on the CPU."
    if _CODE_RAN:
        return (
            False,
            "a checkpoint ran code while it was loaded (its payload called a function): load with "
            "weights_only=True, the default since PyTorch 2.6 (section 7.3).",
        )
    return (
        True,
        "it loads bare and nested checkpoints, GPU-tagged ones (map_location='cpu'), strips 'module.' and "
        "'_orig_mod.' in either order, refuses a missing or an unexpected key (strict loading) and a file "
        "that would run code (weights_only=True).",
    )


CHECKERS = {
    "07.1": ("your prediction: 'error', 'partial' or 'nothing'", _ex_07_1),
    "07.2": ("the function load_weights(model, path)", _ex_07_2),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "07.1": "predict",
    "07.2": "code",
}

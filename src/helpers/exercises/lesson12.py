"""The checkers of lesson 12's exercises (Debugging a mismatch), inline in section 12.6, the hunt.

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for. ``CAUSES``
is the menu of causes exercise 12.2 answers from, as the lesson lists it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import torch

#: The causes a module of a served model can have, as exercise 12.2 names them.
CAUSES = ("not loaded", "rounded", "other formula", "lower precision", "training mode", "not saved")

_SERVED_MODULES = ("standardise", "embed", "embed.0", "embed.1", "pool", "drop", "head")
_CULPRITS = {"standardise": "other formula", "pool": "not loaded"}
#: The spellings of the server's other fingerprint row, which changes no prediction of a CPU model.
_HARMLESS = ("deterministic.cudnn_benchmark", "cudnn_benchmark", "backends.cudnn.benchmark",
             "cudnn.benchmark")
_NOT_RIGHT = (
    "not right yet: a module is missing or extra, or a cause is wrong (this reply is the same whichever "
    "it is). Run first_divergence(reference, served, capstone.test_bags()), fix the first module it names "
    "in a copy, fixed = copy.deepcopy(served), and run it again on the copy, until no module diverges. A "
    "row after the first divergence is inherited: its verdict says nothing about its module."
)
#: How to test each cause a learner names, whichever module it is named for.
_CAUSE_TESTS = {
    "not loaded": "is the module's state what the checkpoint holds? Compare its state_dict() with the "
                  "reference module's and with a freshly built module's, entry by entry (torch.equal).",
    "rounded": "round the reference's values as a bfloat16 or float16 checkpoint would (.bfloat16().float(), "
               ".half().float()), compare them with the served ones using torch.equal, and compare both with "
               "a freshly built module's values.",
    "other formula": "load the reference's state into that module of a copy (copy.deepcopy(served), then "
                     "copy.get_submodule(name).load_state_dict(reference.get_submodule(name).state_dict())) "
                     "and run first_divergence again: a cause in the state goes away, one in the code stays.",
    "lower precision": "compare the dtype of the module's output in the two models (call it on the same "
                       "input), and read the table's max ULP column with that dtype in mind.",
    "training mode": "read .training of the module in both models, and whether its forward uses it.",
    "not saved": "is the number in the reference's state_dict()? Numbers kept as plain attributes are not, "
                 "and a reloaded model keeps its constructor's values for them.",
}


def _words(text: str) -> str:
    return " ".join(text.strip().lower().replace("_", " ").replace("-", " ").split())


def _ex_12_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with a setting's name, a string, as diff_fingerprints prints it."
    name = _words(answer).removeprefix("torch.").replace(" ", "_").removesuffix("()")
    if name in ("default_dtype", "set_default_dtype", "get_default_dtype"):
        return True, (
            "default_dtype: the server's start-up code set another default dtype, so the model it builds and "
            "the test bags it draws have another dtype, and torch.rand draws other numbers in it. The fix "
            "is in the server's start-up, not in the model: leave the default dtype alone."
        )
    if name in _HARMLESS:
        return False, (
            "that setting differs, but does it change the predictions? Confirm it: make it in this process "
            "(torch.backends.cudnn.benchmark = True), predict with capstone.load(state) on "
            "capstone.test_bags(), undo it, and compare the bits with the predictions made without it."
        )
    from helpers.fingerprint import fingerprint

    groups = ("env.", "precision.", "backends.", "deterministic.", "threads.")
    if name in fingerprint() or name.startswith(groups):
        return False, (
            "the two processes agree on that setting. Diff the two records: "
            "diff_fingerprints(laptop['fingerprint'], server['fingerprint'])."
        )
    return False, (
        "that is no setting a fingerprint records. Diff the two records, "
        "diff_fingerprints(laptop['fingerprint'], server['fingerprint']), and answer with a row's setting."
    )


def _ex_12_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, Mapping) or not answer:
        return False, (
            "answer with a dict {module name: cause}, a name as named_modules() gives it and a cause from "
            f"the lesson's list: {', '.join(CAUSES)}."
        )
    found: dict[str, str] = {}
    for module, cause in answer.items():
        if not isinstance(module, str) or not isinstance(cause, str):
            return False, "answer with strings: {module name: cause}."
        name, label = module.strip(), _words(cause)
        if name not in _SERVED_MODULES:
            if name.lower() in _SERVED_MODULES:
                return False, f"{module!r}: names are lower-case, as named_modules() prints them."
            return False, f"{module!r}: the served model has no module of that name (served.named_modules())."
        if label not in CAUSES:
            return False, f"{cause!r} is not one of the lesson's causes: {', '.join(CAUSES)}."
        found[name] = label
    if found != _CULPRITS:  # one reply for every wrong answer, made of what the answer says only
        tests = [f"- {cause}: {_CAUSE_TESTS[cause]}" for cause in CAUSES if cause in found.values()]
        return False, "\n".join([_NOT_RIGHT, "To test the causes you named:", *tests])
    return True, (
        "standardise computes another formula (its state is the reference's, but loading that state changes "
        "nothing), and pool's weight was not loaded (it still holds its initial ones: the server loads the "
        "checkpoint under another key name with strict=False, which skips what does not match)."
    )


@functools.lru_cache(maxsize=1)
def _checkpoint() -> dict[str, torch.Tensor]:
    """The fixed configuration's trained weights, as the laptop and the server load them."""
    from helpers.lessons import capstone

    return capstone.train(capstone.SERVING).model.state_dict()


def _ex_12_3(answer: object) -> tuple[bool, str]:
    from helpers.diagnose import first_divergence
    from helpers.lessons import capstone

    if not callable(answer):
        return False, "answer with a function repair(model, state_dict) that repairs the server's model."
    state = _checkpoint()
    reference = capstone.load(state)
    served = capstone.server_model(state)
    before = {name: module for name, module in served.named_modules() if name}
    try:
        with capstone.configured(capstone.SERVING):
            returned = answer(served, {key: value.clone() for key, value in state.items()})
    except Exception as error:  # the learner's own code: say what it raised, as a hint
        return False, f"repair raised {type(error).__name__}: {error}. Fix it and run the check again."
    model = served if returned is None else returned
    if not isinstance(model, torch.nn.Module):
        return False, "repair should change the model in place (and return None), or return it repaired."
    after = dict(model.named_modules())
    replaced = [name for name, module in before.items() if "." not in name and after.get(name) is not module]
    if model.training:
        return False, "the server's model was in eval mode; leave it so."
    bags = capstone.test_bags()
    try:
        with capstone.configured(capstone.SERVING), torch.no_grad():
            same = torch.equal(model(*bags), reference(*bags))
            if not same:
                module = first_divergence(reference, model, bags).module
    except Exception as error:  # a model the repair broke
        name = type(error).__name__
        return False, f"the repaired model raised {name}: {error} when it predicted the test bags."
    if not same:
        if module is None:
            return False, (
                "first_divergence blames no module, yet the bits differ: some module of the repaired "
                "model computes nearly, not exactly, what the reference's does; the reference's code "
                "gives the same bits."
            )
        return False, (
            "the repaired model still diverges: run first_divergence(reference, repaired, "
            "capstone.test_bags()) on your repaired model and fix what it names."
        )
    if any(name != "standardise" for name in replaced):  # asked only once the bits match: no clue before
        return False, (
            f"the same bits, but you replaced {', '.join(replaced)}: keep the server's modules and repair "
            "their state; replace only one whose code you found at fault in exercise 2."
        )
    return True, (
        "the same bits as the laptop's model, on the same weights and inputs: the standardisation "
        "computes the reference's formula again, and pool's weight holds the checkpoint's values."
    )


CHECKERS = {
    "12.1": ("the setting of the server's process that changes its predictions, as diff_fingerprints "
             "names it", _ex_12_1),
    "12.2": ("a dict {module name: cause} for every module of the served model that computes differently",
             _ex_12_2),
    "12.3": ("a function repair(model, state_dict) that makes the server's model predict the laptop's bits",
             _ex_12_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "12.1": "decide",
    "12.2": "work",
    "12.3": "code",
}

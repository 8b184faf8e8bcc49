"""The checkers of lesson 07's exercises (Checkpoints across devices): ``CHECKERS`` maps each id to its question and checker."""

from __future__ import annotations

import torch


def _ex_07_1(answer: object) -> tuple[bool, str]:
    if isinstance(answer, str) and answer.strip().lower() == "cpu":
        return True, "map_location='cpu' (or torch.device('cpu')): every storage goes to the CPU."
    if isinstance(answer, torch.device) and answer.type == "cpu":
        return True, "torch.device('cpu') (or just 'cpu'): every storage goes to the CPU."
    if isinstance(answer, str) and answer.strip().lower().startswith("cuda"):
        return False, "that is where the storages already want to go; redirect them to the other device."
    return False, "answer with a device: a string such as 'cuda:0', or a torch.device."


def _ex_07_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with a string."
    if answer == "_orig_mod":
        return False, "almost: the dot that joins it to the next name is part of the prefix."
    if answer == "module.":
        return False, "that is the DataParallel/DDP prefix; torch.compile uses another one."
    if answer != "_orig_mod.":
        return (
            False,
            "print the keys of compiled.state_dict() in section 7.4 and compare them with the plain model's.",
        )
    return True, "consume_prefix_in_state_dict_if_present(state, '_orig_mod.') strips it in place."


def _ex_07_3(answer: object) -> tuple[bool, str]:
    import torch.serialization as ser

    if isinstance(answer, str):
        return (
            False,
            "answer with the function itself, for example torch.serialization.some_name, without quotes.",
        )
    if answer is ser.add_safe_globals:
        return (
            False,
            "that one allows the class for the rest of the process; "
            "the question asks for the context manager.",
        )
    if answer is not ser.safe_globals:
        return (
            False,
            "look at section 7.3: the function takes a list of classes and is used in a with statement.",
        )
    return True, "with torch.serialization.safe_globals([RunConfig]): torch.load(path)."


def _ex_07_4(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, str):
        return False, "answer with the keyword argument's name, as a string (in quotes)."
    name = answer.strip()
    if name == "assign":
        return (
            True,
            "load_state_dict(state, assign=True): the loaded tensors become the parameters, "
            "so build the optimizer afterwards.",
        )
    if name.replace(" ", "") == "assign=True":
        return False, "almost: answer with the name alone, without =True."
    if name == "strict":
        return False, "strict decides whether every key must match; here all keys matched and nothing loaded."
    if name in ("mmap", "map_location", "weights_only"):
        return False, "that is an argument of torch.load; the fix is an argument of load_state_dict."
    return (
        False,
        "look at section 7.5: the argument that replaces each parameter instead of copying into it.",
    )


def _ex_07_5(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, bool):
        return False, "answer with True or False (a bool, not a string or a number)."
    if answer:
        return (
            False,
            "look at section 7.3: what do PyTorch's own serialization notes say weights_only=True "
            "does not guard against, even in releases with every published fix?",
        )
    return (
        True,
        "PyTorch's serialization notes say weights_only=True narrows the surface of remote code execution "
        "but does not guard against denial of service, and memory corruption might still be possible; "
        "for untrusted files use a format without code, such as safetensors.",
    )


CHECKERS = {
    "07.1": ("the map_location that loads onto the CPU", _ex_07_1),
    "07.2": ("the prefix torch.compile adds to state_dict keys", _ex_07_2),
    "07.3": ("the torch.serialization function that allows a class within a with block", _ex_07_3),
    "07.4": ("the name of load_state_dict's keyword argument, as a string", _ex_07_4),
    "07.5": ("True or False", _ex_07_5),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "07.1": "recall",
    "07.2": "recall",
    "07.3": "recall",
    "07.4": "recall",
    "07.5": "recall",
}

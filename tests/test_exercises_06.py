"""Lesson 06's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check


class _OffsetBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.zeros(3), persistent=False)


class _OffsetSaved(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.zeros(3))


class _OffsetAttribute(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.offset = torch.zeros(3)


RIGHT = {
    "06.1": True,
    "06.2": _OffsetBuffer,
    "06.3": ["load weights", "move model", "build optimizer"],
    "06.4": True,
}
WRONG = {
    "06.1": [False, "True", 1],
    "06.2": [_OffsetAttribute, _OffsetSaved, _OffsetBuffer(), torch.nn.Linear, int],
    "06.3": [["load weights", "build optimizer", "move model"], ["move model"], "build optimizer"],
    "06.4": [False, "True", 1, torch.float32, [True]],
}

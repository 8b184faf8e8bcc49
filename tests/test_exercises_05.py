"""Lesson 05's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check


def _drawn_from(g: torch.Generator) -> torch.Generator:
    torch.rand(1, generator=g)
    return g


RIGHT = {
    "05.1": {"torch cpu", "torch cuda"},
    "05.2": torch.Generator().manual_seed(42),
    "05.3": 4,
    "05.4": {"randn(1000)"},
}
WRONG = {
    "05.1": [{"torch cpu"}, {"torch cpu", "torch cuda", "numpy"}, "torch cpu", {"jax"}],
    "05.2": [torch.Generator().manual_seed(41), 42, _drawn_from(torch.Generator().manual_seed(42))],
    "05.3": [0, 1, 2, 3, 5, "4"],
    "05.4": [{"rand(1000)", "randn(1000)"}, {"randn(1000)", "randn(8)"}, set(), "randn(1000)", {"randn(16)"}],
}

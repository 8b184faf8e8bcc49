"""What every lesson's checkers share: the verdict, and reading a learner's answer without raising."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one answer: ``ok`` is True, False, or None (not answered yet)."""

    exercise: str
    ok: bool | None
    message: str

    def __str__(self) -> str:
        label = {True: "Correct", False: "Not yet", None: "Not answered yet"}[self.ok]
        return f"Exercise {self.exercise}: {label}. {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """In Jupyter: a coloured box, green for Correct, amber for Not yet, grey before an answer."""
        import html

        label, colour, background = {
            True: ("Correct", "#155724", "#d4edda"),
            False: ("Not yet", "#7a4b00", "#fff3cd"),
            None: ("Not answered yet", "#383d41", "#e2e3e5"),
        }[self.ok]
        return (
            f'<div style="background:{background};color:{colour};padding:6px 10px;border-radius:4px;'
            f'white-space:pre-wrap;font-family:sans-serif"><b>Exercise {html.escape(self.exercise)}: '
            f"{label}.</b> {html.escape(self.message)}</div>"
        )

    def __bool__(self) -> bool:
        return bool(self.ok)


def f32(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.float32)


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_float(value: int | float) -> float:
    """A Python number as a float; an int too large for one becomes +-inf (never OverflowError)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def truth(value: object) -> bool | None:
    """``bool(value)`` for what a learner's function returned; None where it has no single truth value."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # bool(NotImplemented) is deprecated: no truth value either
            return bool(value)
    except Exception:  # a tensor of many values, an object whose __bool__ raises
        return None


def equal(value: object, expected: object) -> bool:
    """``value == expected`` as a bool; False where the comparison raises or has no single truth value."""
    try:
        return bool(value == expected)
    except Exception:
        return False


def as_number(value: object) -> int | float | None:
    """A Python int or float for a number, a NumPy scalar or a one-element real tensor; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, torch.Tensor):
        # a meta tensor has a shape and a dtype but no values
        if value.numel() != 1 or value.dtype == torch.bool or value.is_complex() or value.is_meta:
            return None
        return value.item()
    import numpy as np

    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return None


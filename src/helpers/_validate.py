"""Checks for the values a learner passes to ``compare``, ``compare_named`` and ``reduction_tolerances``.

``describe`` also words the exercise checkers' hints.

Each check names the parameter and says what was wrong, raising ``TypeError`` for a value of the
wrong kind and ``ValueError`` for a value of the right kind out of range, and returns the value
in the form the helper then uses.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Mapping
from typing import Any

import torch

__all__ = [
    "check_dtype",
    "check_int",
    "check_mapping",
    "check_real",
    "check_sequence",
    "check_tensor",
    "describe",
]


def describe(value: object, limit: int = 60) -> str:
    """A short description of ``value`` for an error message: its type, and its repr when short."""
    kind = type(value).__name__
    if isinstance(value, torch.Tensor):
        if value.is_nested:  # a nested tensor has no single shape
            return f"a nested tensor of dtype {value.dtype} on {value.device}"
        return f"a tensor of dtype {value.dtype} and shape {tuple(value.shape)} on {value.device}"
    try:
        text = repr(value)
    except Exception:  # a repr that fails must not hide the real error
        return f"a {kind}"
    if len(text) > limit:
        return f"a {kind}"
    return f"{text} (a {kind})" if kind not in ("int", "float", "str", "NoneType", "bool") else text


def check_int(value: object, name: str, *, min: int | None = None) -> int:
    """An integer (numpy integers too, never a bool) of at least ``min``."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got the bool {value}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {describe(value)}") from None
    if min is not None and number < min:
        raise ValueError(f"{name} must be at least {min}, got {number}")
    return number


def check_real(value: object, name: str, *, min: float | None = None, positive: bool = False) -> float:
    """A finite real number (int, float, numpy or 0-d real tensor; never a bool) as a float.

    ``positive`` asks for > 0 and ``min`` bounds it inclusively.
    """
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_complex():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {describe(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        raise ValueError(f"{name} is too large for a float: {value}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number}")
    if positive and not number > 0:
        raise ValueError(f"{name} must be positive, got {number}")
    if min is not None and number < min:
        raise ValueError(f"{name} must be at least {min}, got {number}")
    return number


def check_dtype(value: object, name: str) -> torch.dtype:
    if not isinstance(value, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype such as torch.float32, got {describe(value)}")
    return value


def check_tensor(value: object, name: str) -> torch.Tensor:
    """A dense ``torch.Tensor`` (not sparse or nested)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {describe(value)}")
    if value.is_nested or value.layout != torch.strided:
        kind = "a nested tensor" if value.is_nested else f"one with layout {value.layout}"
        raise TypeError(f"{name} must be a dense tensor, got {kind}; call .to_dense() first")
    return value


def check_mapping(value: object, name: str, *, value_check: Callable[[object, str], Any]) -> dict:
    """A mapping with string keys; ``value_check(v, f"{name}[{key!r}]")`` checks each value."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping (a dict), got {describe(value)}")
    checked = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} must have str keys, got the key {describe(key)}")
        checked[key] = value_check(item, f"{name}[{key!r}]")
    return checked


def check_sequence(
    value: object, name: str, *, item_check: Callable[[object, str], Any], length: int
) -> list:
    """A list or tuple of ``length`` items; ``item_check(v, f"{name}[{i}]")`` checks each item."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple, got {describe(value)}")
    if len(value) != length:
        raise ValueError(f"{name} must have {length} items, got {len(value)}")
    return [item_check(item, f"{name}[{i}]") for i, item in enumerate(value)]

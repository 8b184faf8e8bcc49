"""Argument checks shared by the helpers: every public helper checks its input with these first.

Each check names the parameter and says what was wrong, raising ``TypeError`` for a value of the
wrong kind and ``ValueError`` for a value of the right kind out of range, before any work is done,
so that a mistake never surfaces as a deep error from inside numpy or torch (or as a silent wrong
answer). Each returns the value in the form the helper then uses.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import operator
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch

__all__ = [
    "checked_first",
    "check_bool",
    "check_callable",
    "check_device",
    "check_dtype",
    "check_int",
    "check_mapping",
    "check_module",
    "check_path",
    "check_real",
    "check_sequence",
    "check_str",
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


def check_bool(value: object, name: str) -> bool:
    """``True`` or ``False`` (numpy's bool too); not 0, 1 or a string."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {describe(value)}")


def check_int(value: object, name: str, *, min: int | None = None, max: int | None = None) -> int:
    """An integer (numpy integers and 0-d integer tensors too, never a bool) within [min, max]."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError(f"{name} must be an int, got the bool {value}")
    if isinstance(value, torch.Tensor):
        if value.dim() != 0 or value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must be an int, got {describe(value)}")
        _check_readable_scalar(value, name, "an int")
        value = int(value)
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {describe(value)}") from None
    if min is not None and number < min:
        raise ValueError(f"{name} must be at least {min}, got {number}")
    if max is not None and number > max:
        raise ValueError(f"{name} must be at most {max}, got {number}")
    return number


def _check_readable_scalar(value: torch.Tensor, name: str, what: str) -> None:
    """A 0-d tensor whose value can be read: dense, and not on the meta device (which holds no values)."""
    if value.is_nested or value.layout != torch.strided or value.is_quantized:
        raise TypeError(f"{name} must be {what}, got a tensor with layout {value.layout}")
    if value.device.type == "meta":
        raise TypeError(f"{name} must be {what}, got a tensor on the meta device, which holds no value")


def check_real(
    value: object,
    name: str,
    *,
    min: float | None = None,
    max: float | None = None,
    positive: bool = False,
    finite: bool = True,
) -> float:
    """A real number (int, float, numpy or 0-d real tensor; never a bool) as a float.

    ``positive`` asks for > 0; ``min``/``max`` bound it inclusively; NaN is always refused and
    ±inf unless ``finite=False``.
    """
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError(f"{name} must be a real number, got the bool {value}")
    if isinstance(value, torch.Tensor):
        if value.dim() != 0 or value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must be a real number, got {describe(value)}")
        _check_readable_scalar(value, name, "a real number")
        value = value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {describe(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        raise ValueError(f"{name} is too large for a float: {value}") from None
    if math.isnan(number):
        raise ValueError(f"{name} must be a number, got nan")
    if finite and math.isinf(number):
        raise ValueError(f"{name} must be finite, got {number}")
    if positive and not number > 0:
        raise ValueError(f"{name} must be positive, got {number}")
    if min is not None and number < min:
        raise ValueError(f"{name} must be at least {min}, got {number}")
    if max is not None and number > max:
        raise ValueError(f"{name} must be at most {max}, got {number}")
    return number


def check_str(value: object, name: str, *, choices: Iterable[str] | None = None, empty: bool = True) -> str:
    """A string; with ``choices``, one of them."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {describe(value)}")
    if not empty and not value:
        raise ValueError(f"{name} must not be empty")
    if choices is not None:
        allowed = list(choices)
        if value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {describe(value)}")
    return value


def check_callable(value: object, name: str) -> Callable:
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {describe(value)}")
    return value  # type: ignore[return-value]


def check_dtype(value: object, name: str, allowed: Iterable[torch.dtype] | None = None) -> torch.dtype:
    """A ``torch.dtype``; with ``allowed``, one of those."""
    if not isinstance(value, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype such as torch.float32, got {describe(value)}")
    if allowed is not None:
        allowed = list(allowed)
        if value not in allowed:
            names = ", ".join(str(d).replace("torch.", "") for d in allowed)
            raise ValueError(f"{name} {value} is not supported here; use one of: {names}")
    return value


def check_device(value: object, name: str) -> torch.device:
    """A ``torch.device`` or a string torch accepts as one ("cpu", "cuda:0", ...)."""
    if isinstance(value, torch.device):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a torch.device or a string such as 'cpu', got {describe(value)}")
    try:
        return torch.device(value)
    except (RuntimeError, ValueError):
        raise ValueError(f"{name} is not a device torch knows: {value!r}") from None


def check_tensor(
    value: object,
    name: str,
    *,
    dtypes: Iterable[torch.dtype] | None = None,
    floating: bool = False,
    finite: bool = False,
    min_dim: int | None = None,
    dim: int | None = None,
    nonempty: bool = False,
    dense: bool = True,
) -> torch.Tensor:
    """A ``torch.Tensor`` with the asked properties (checked in this order: type, layout, dtype, shape, values).

    ``dense`` (the default) refuses sparse (COO, CSR, ...) and nested tensors with a ``TypeError``:
    no helper computes with them, and they fail deep inside torch (``.numpy()``, ``.view()``).
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {describe(value)}")
    if dense and (value.is_nested or value.layout != torch.strided):
        kind = "a nested tensor" if value.is_nested else f"one with layout {value.layout}"
        raise TypeError(f"{name} must be a dense tensor, got {kind}; call .to_dense() first")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, got dtype {value.dtype}")
    if dtypes is not None:
        allowed = list(dtypes)
        if value.dtype not in allowed:
            names = ", ".join(str(d).replace("torch.", "") for d in allowed)
            raise TypeError(f"{name} has dtype {value.dtype}; use one of: {names}")
    if dim is not None and value.dim() != dim:
        raise ValueError(f"{name} must have {dim} dimension(s), got shape {tuple(value.shape)}")
    if min_dim is not None and value.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimension(s), got shape {tuple(value.shape)}")
    if nonempty and value.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(value.shape)})")
    if finite and (value.is_floating_point() or value.is_complex()):
        if value.device.type == "meta":
            raise ValueError(f"{name} is on the meta device: it holds no values")
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"{name} must hold finite values; it holds inf or NaN")
    return value


def check_mapping(
    value: object,
    name: str,
    *,
    value_check: Callable[[object, str], Any] | None = None,
    nonempty: bool = False,
) -> dict:
    """A mapping with string keys; ``value_check(v, f"{name}[{key!r}]")`` checks each value."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping (a dict), got {describe(value)}")
    if nonempty and not value:
        raise ValueError(f"{name} is empty")
    checked = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} must have str keys, got the key {describe(key)}")
        checked[key] = value_check(item, f"{name}[{key!r}]") if value_check is not None else item
    return checked


def check_sequence(
    value: object,
    name: str,
    *,
    item_check: Callable[[object, str], Any] | None = None,
    nonempty: bool = False,
    length: int | None = None,
) -> list:
    """A list or tuple (not a string, bytes, mapping or tensor).

    ``item_check(v, f"{name}[{i}]")`` checks each item.
    """
    if isinstance(value, (str, bytes, bytearray, Mapping, torch.Tensor)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list or tuple, got {describe(value)}")
    if nonempty and len(value) == 0:
        raise ValueError(f"{name} is empty")
    if length is not None and len(value) != length:
        raise ValueError(f"{name} must have {length} items, got {len(value)}")
    if item_check is None:
        return list(value)
    return [item_check(item, f"{name}[{i}]") for i, item in enumerate(value)]


def check_module(value: object, name: str) -> torch.nn.Module:
    if not isinstance(value, torch.nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {describe(value)}")
    return value


def check_path(value: object, name: str) -> Path:
    """A path given as ``str`` or ``os.PathLike`` (existence is the caller's check)."""
    if isinstance(value, Path):
        return value
    if isinstance(value, str):
        if not value or "\x00" in value:
            raise ValueError(f"{name} is not a usable path: {value!r}")
        return Path(value)
    if hasattr(value, "__fspath__"):
        try:
            text = os.fspath(value)  # type: ignore[arg-type]
        except Exception as error:  # a __fspath__ that fails or returns neither str nor bytes
            raise TypeError(
                f"{name} is an os.PathLike whose __fspath__ failed: {type(error).__name__}: {error}"
            ) from None
        if not isinstance(text, str):
            raise TypeError(
                f"{name} must be a path whose __fspath__ returns a str, got one that returns {describe(text)}"
            )
        return check_path(text, name)
    raise TypeError(f"{name} must be a path (str or pathlib.Path), got {describe(value)}")


_Fn = TypeVar("_Fn", bound=Callable)


def checked_first(fn: _Fn, check: Callable[..., dict | None]) -> _Fn:
    """``fn`` that first calls ``check`` with its arguments by name, defaults filled in.

    ``check`` raises for a bad argument, and may return arguments in the form ``fn`` uses (a
    numpy or 0-d tensor integer as an int), which are passed on instead. For helpers whose source a
    lesson prints (``inspect.getsource`` follows ``__wrapped__`` to ``fn``, so the lesson shows what
    the helper computes, not its argument checks); ``help`` and ``inspect.signature`` show ``fn``'s.
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:  # a missing or extra argument: say so from here, naming fn
            raise TypeError(f"{fn.__name__}(): {error}") from None
        bound.apply_defaults()
        bound.arguments.update(check(**bound.arguments) or {})
        return fn(*bound.args, **bound.kwargs)

    return checked  # type: ignore[return-value]

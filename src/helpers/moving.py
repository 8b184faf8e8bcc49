"""Moving nested data between devices and dtypes, and finding tensors a module move leaves behind.

Introduced in lesson ``06_moving_models``; lesson 07 (checkpoints) uses both.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import torch

from helpers.devices import usable_device
from helpers.show.tables import Table

__all__ = ["Stray", "move", "stray_tensors", "check_one_device", "tensor_places"]


def move(obj: Any, device: str | torch.device | None = None, dtype: torch.dtype | None = None) -> Any:
    """A copy of ``obj`` with every tensor inside moved to ``device`` and floating tensors cast to ``dtype``.

    Walks dicts (and other mappings), lists, tuples, named tuples and dataclass instances; any other
    value is returned as it is. Integer and boolean tensors keep their dtype, as ``Module.to`` does.
    Like ``Tensor.to``, a tensor already on ``device`` with ``dtype`` is returned itself, not copied.
    Introduced in lesson 06.

    ``ValueError`` if both ``device`` and ``dtype`` are None, for a device name torch does not
    know or a CUDA or MPS device this machine lacks, and for a dtype that is not floating-point;
    ``TypeError`` for a ``device`` or ``dtype`` of another kind.
    """
    if device is None and dtype is None:
        raise ValueError("give a device, a dtype, or both")
    if device is not None:
        device = usable_device(device, "device")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, got {type(dtype).__name__}")
    if dtype is not None and not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point dtype, not {dtype}")
    return _move(obj, device, dtype)


def _move(obj: Any, device: torch.device | None, dtype: torch.dtype | None) -> Any:
    if isinstance(obj, torch.Tensor):
        cast = dtype if dtype is not None and (obj.is_floating_point() or obj.is_complex()) else None
        return obj.to(device=device, dtype=cast)
    if isinstance(obj, Mapping):
        items = {k: _move(v, device, dtype) for k, v in obj.items()}
        if isinstance(obj, defaultdict):
            return type(obj)(obj.default_factory, items)
        return type(obj)(items)  # type: ignore[call-arg]
    if isinstance(obj, (list, tuple)):
        values = [_move(v, device, dtype) for v in obj]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple
            return type(obj)(*values)
        return type(obj)(values)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = [f.name for f in dataclasses.fields(obj) if f.init]
        return dataclasses.replace(obj, **{f: _move(getattr(obj, f), device, dtype) for f in fields})
    return obj


@dataclasses.dataclass(frozen=True)
class Stray:
    """A tensor in a module that ``module.to(...)`` does not move: where it is and on which device."""

    name: str
    device: torch.device

    def __str__(self) -> str:
        return f"{self.name} ({self.device})"


def _tensors_in(value: Any, name: str, active: frozenset = frozenset()) -> list[tuple[str, torch.Tensor]]:
    """The tensors in ``value`` and the containers inside it, named from ``name``.

    ``active`` holds the ids of the containers around ``value``: a container that holds itself is
    walked once, not forever.
    """
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if not isinstance(value, (Mapping, list, tuple)) or id(value) in active:
        return []
    active = active | {id(value)}
    if isinstance(value, Mapping):
        return [t for k, v in value.items() for t in _tensors_in(v, f"{name}[{k!r}]", active)]
    return [t for i, v in enumerate(value) for t in _tensors_in(v, f"{name}[{i}]", active)]


def stray_tensors(module: torch.nn.Module) -> list[Stray]:
    """Tensors held by a module (or its submodules) outside its parameters and buffers.

    These are plain tensor attributes and tensors in lists, tuples or dicts stored on a module:
    ``module.to(...)`` does not see them, so they stay where they were created. Introduced in
    lesson 06.
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    found = []
    for prefix, sub in module.named_modules():
        for attr, value in vars(sub).items():
            if attr.startswith("_"):  # _parameters, _buffers, _modules and PyTorch's own bookkeeping
                continue
            where = f"{prefix}.{attr}" if prefix else attr
            found += [Stray(name, tensor.device) for name, tensor in _tensors_in(value, where)]
    return found


def check_one_device(module: torch.nn.Module) -> torch.device:
    """The one device that all of a module's tensors are on, or a ``ValueError`` naming the offenders.

    Looks at parameters, buffers, and the stray tensors of :func:`stray_tensors` (which a move
    would leave behind). The majority device is taken as the module's; every tensor elsewhere is
    listed by name. Introduced in lesson 06.
    """
    strays = stray_tensors(module)  # also refuses a module argument that is not a Module
    located = [(n, t.device) for n, t in module.named_parameters()]
    located += [(n, t.device) for n, t in module.named_buffers()]
    located += [(s.name + " (not a parameter or buffer)", s.device) for s in strays]
    if not located:
        raise ValueError(f"{type(module).__name__} holds no tensors, so it is on no device")
    counts: dict[torch.device, int] = {}
    for _, device in located:
        counts[device] = counts.get(device, 0) + 1
    main = max(counts, key=lambda d: counts[d])
    offenders = [f"{name} on {device}" for name, device in located if device != main]
    if offenders:
        raise ValueError(f"{len(offenders)} tensor(s) not on {main}: " + "; ".join(offenders))
    return main


def tensor_places(module: torch.nn.Module, title: str = "") -> Table:
    """A table of where each of a module's tensors is: parameters, their gradients, and buffers.

    One row per parameter, per parameter gradient that exists (named ``<parameter>.grad``) and per
    buffer, with its device and dtype. ``Module.to`` converts all three kinds; a loop that assigns
    ``p.data`` for each parameter converts only the first. Introduced in lesson 06.
    """
    rows = []
    for name, param in module.named_parameters():
        rows.append((name, "parameter", param.device, param.dtype))
        if param.grad is not None:
            rows.append((name + ".grad", "gradient", param.grad.device, param.grad.dtype))
    rows += [(name, "buffer", buf.device, buf.dtype) for name, buf in module.named_buffers()]
    return Table(["tensor", "kind", "device", "dtype"], rows, title=title)

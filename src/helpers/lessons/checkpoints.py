"""A checkpoint file as a GPU machine writes it, made on a CPU.

Introduced in lesson ``07_checkpoints_across_devices``.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.serialization as ser

__all__ = ["cuda_tagged_copy", "unpickling_reason"]

# Re-save a CPU checkpoint with every storage tagged "cuda:0", the location a GPU save records.
# torch.serialization.register_package is public API but has no inverse; the registry it appends to
# is restored afterwards, so that the extra tagger never outlives the copy.


def cuda_tagged_copy(source: str | Path, target: str | Path) -> Path:
    """Copy a checkpoint saved on the CPU so that its storages say ``cuda:0``, as if saved on a GPU.

    The data are the CPU file's; only the recorded location changes, which is what ``torch.load``
    looks at when it decides where to put each storage. Lets a CPU-only machine show the error a
    real GPU checkpoint gives without ``map_location``. Introduced in lesson 07.

    ``FileNotFoundError`` if ``source`` is not a file; ``ValueError`` if ``target`` is ``source``,
    or if the copy fails (the message says why). The tagger it registers is removed before it returns.
    """
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise FileNotFoundError(f"source: no checkpoint at {source}")
    if target.exists() and target.samefile(source):
        raise ValueError(f"target is source itself ({source}): the copy would overwrite the CPU checkpoint")
    registry = list(ser._package_registry)
    try:
        ser.register_package(0, lambda s: "cuda:0" if s.device.type == "cpu" else None, lambda s, loc: None)
        torch.save(torch.load(source, map_location="cpu", weights_only=True), target)
    except Exception as err:
        raise ValueError(f"could not copy {source} to {target}: {type(err).__name__}: {err}") from err
    finally:
        ser._package_registry[:] = registry
    return target


def unpickling_reason(err: BaseException) -> str:
    """The line of a refused ``torch.load`` that names what was refused, without its advice.

    ``torch.load(..., weights_only=True)`` raises ``pickle.UnpicklingError`` with a long message; one
    line says "Unsupported global: GLOBAL <name> was not an allowed global by default", followed by
    advice on how to allow it. Returns that line up to the advice, or the message's first line when
    no line names a global (another release may word it otherwise). Introduced in lesson 07.
    """
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    line = next((line for line in lines if "Unsupported global" in line), lines[0] if lines else "")
    return line.split(". Please use")[0]

"""Checkpoint files as a GPU machine writes them, for lessons that run on a CPU.

Introduced in lesson ``07_checkpoints_across_devices``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers._validate import check_path
from helpers.reference import reference_dir

__all__ = ["cuda_tagged_copy", "gpu_saved_checkpoint"]

# Re-save a CPU checkpoint with every storage tagged "cuda:0", the location a GPU save records.
# torch.serialization.register_package is public API; doing it in a child process keeps the
# extra tagger out of the caller's torch.
_RETAG = textwrap.dedent(
    """
    import sys
    import torch
    import torch.serialization as ser
    ser.register_package(0, lambda s: "cuda:0" if s.device.type == "cpu" else None, lambda s, loc: None)
    try:
        state = torch.load(sys.argv[1], weights_only=True)
    except Exception as exc:
        print(type(exc).__name__ + ": " + (str(exc).strip().splitlines() or [""])[0], file=sys.stderr)
        sys.exit(3)
    try:
        torch.save(state, sys.argv[2])
    except Exception as exc:
        print(type(exc).__name__ + ": " + (str(exc).strip().splitlines() or [""])[0], file=sys.stderr)
        sys.exit(4)
    """
)
_NOT_A_CHECKPOINT = 3  # the exit status of _RETAG when torch.load cannot read the source
_CANNOT_WRITE = 4  # ... and when torch.save cannot write the target


def cuda_tagged_copy(source: str | Path, target: str | Path) -> Path:
    """Copy a checkpoint saved on the CPU so that its storages say ``cuda:0``, as if saved on a GPU.

    The data are the CPU file's; only the recorded location changes, which is what ``torch.load``
    looks at when it decides where to put each storage. Lets a CPU-only machine show the error a
    real GPU checkpoint gives without ``map_location``. Introduced in lesson 07.

    ``source`` and ``target`` are paths (``str`` or ``pathlib.Path``; ``TypeError`` otherwise,
    ``ValueError`` for an empty one). ``FileNotFoundError`` if ``source`` is not a file or
    ``target``'s folder does not exist, ``ValueError`` if ``target`` is a folder, or if
    ``source`` is not a checkpoint that ``torch.load(weights_only=True)`` reads. ``target`` must
    name a regular file, existing or not (``ValueError`` for a device such as ``/dev/null``, a
    FIFO, or a path the system refuses, e.g. a name too long), and must not be ``source`` itself
    (``ValueError``: the copy would replace the CPU checkpoint). A failure to write ``target``
    (a read-only folder, ``/proc``) raises ``ValueError`` naming it.
    """
    source, target = check_path(source, "source"), check_path(target, "target")
    try:
        source_is_file = source.is_file()
    except OSError as exc:  # a name too long, say
        raise ValueError(f"source is not a usable path ({exc.strerror or exc}): {_short(source)}") from None
    if not source_is_file:
        raise FileNotFoundError(f"source: no checkpoint at {source}")
    try:
        exists, is_dir, is_file = target.exists(), target.is_dir(), target.is_file()
        parent_is_dir = target.parent.is_dir()
        same = (source.resolve() == target.resolve()) or (exists and os.path.samefile(source, target))
    except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
        why = getattr(exc, "strerror", None) or exc
        raise ValueError(f"target is not a usable path ({why}): {_short(target)}") from None
    if is_dir:
        raise ValueError(f"target is a folder, not a file name: {target}")
    if exists and not is_file:
        raise ValueError(f"target must be a regular file (or not exist yet), not a device or pipe: {target}")
    if not parent_is_dir:
        raise FileNotFoundError(f"target: the folder {target.parent} does not exist")
    if same:
        raise ValueError(f"target is source itself ({source}): the copy would overwrite the CPU checkpoint")
    done = subprocess.run([sys.executable, "-c", _RETAG, str(source), str(target)], capture_output=True)
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    if done.returncode == _NOT_A_CHECKPOINT:
        raise ValueError(
            f"source is not a checkpoint that torch.load(weights_only=True) reads: {source}"
            + (f" ({lines[-1]})" if lines else "")
        )
    if done.returncode != 0:  # torch.save failed (exit 4), or the child died otherwise
        raise ValueError(f"target could not be written: {target}" + (f" ({lines[-1]})" if lines else ""))
    return target


def _short(path: Path, limit: int = 80) -> str:
    """``path`` for an error message, shortened if very long."""
    text = str(path)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def gpu_saved_checkpoint() -> Path | None:
    """The checkpoint that the GPU recording saved from GPU tensors, if this copy ships one.

    Introduced in lesson 07.
    """
    from helpers.reference import has_gpu_reference, load_gpu_reference

    if not has_gpu_reference():
        return None
    name = load_gpu_reference()["measurements"]["checkpoint"]["value"]["file"]
    path = reference_dir() / name
    return path if path.is_file() else None

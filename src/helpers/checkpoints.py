"""Checkpoint files as a GPU machine writes them, for lessons that run on a CPU.

Introduced in lesson ``07_checkpoints_across_devices``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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
    torch.save(torch.load(sys.argv[1], weights_only=True), sys.argv[2])
    """
)


def cuda_tagged_copy(source: str | Path, target: str | Path) -> Path:
    """Copy a checkpoint saved on the CPU so that its storages say ``cuda:0``, as if saved on a GPU.

    The data are the CPU file's; only the recorded location changes, which is what ``torch.load``
    looks at when it decides where to put each storage. Lets a CPU-only machine show the error a
    real GPU checkpoint gives without ``map_location``. Introduced in lesson 07.
    """
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise FileNotFoundError(f"no checkpoint at {source}")
    subprocess.run([sys.executable, "-c", _RETAG, str(source), str(target)], check=True, capture_output=True)
    return target


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

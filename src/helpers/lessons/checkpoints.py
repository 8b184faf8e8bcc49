"""A checkpoint file as a GPU machine writes it, made on a CPU.

Introduced in lesson ``07_checkpoints_across_devices``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["cuda_tagged_copy"]

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

    ``FileNotFoundError`` if ``source`` is not a file; ``ValueError`` if ``target`` is ``source``,
    or if the copy fails (the child's last line of error says why).
    """
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise FileNotFoundError(f"source: no checkpoint at {source}")
    if target.exists() and target.samefile(source):
        raise ValueError(f"target is source itself ({source}): the copy would overwrite the CPU checkpoint")
    command = [sys.executable, "-c", _RETAG, str(source), str(target)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no error message"])[-1]
        raise ValueError(f"could not copy {source} to {target}: {last}")
    return target

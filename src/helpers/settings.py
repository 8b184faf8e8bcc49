"""Set one of PyTorch's global knobs for a ``with`` block, and put it back afterwards.

A lesson that changes the thread count or the float32 matmul precision to show its effect must
not leave it changed for the cells after it, even when a cell fails halfway. Each context manager
here records the setting, changes it, and restores it on the way out, error or not:

    with helpers.threads(1):
        one_thread = x.sum()

They are thin on purpose: the lesson still calls PyTorch's own setters
(``torch.set_num_threads``, ``torch.set_float32_matmul_precision``, ``torch.set_flush_denormal``)
and the helper only adds the ``finally``. For oneDNN PyTorch has its own,
``with torch.backends.mkldnn.flags(enabled=False, allow_tf32=None):``; pass ``allow_tf32=None``
(leave it alone), since its default ``True`` makes a CPU-only build warn that TF32 on oneDNN is
for Intel GPUs. Introduced in lesson 01.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["flush_denormal", "matmul_precision", "threads"]


@contextlib.contextmanager
def threads(n: int) -> Iterator[int]:
    """Run the block with ``torch.set_num_threads(n)``; the previous count comes back afterwards.

    Yields ``n``. ``n`` must be a whole number of at least 1 (``ValueError`` otherwise, before
    anything changes). A count above the machine's cores is allowed, as PyTorch allows it.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"threads(n) needs a whole number of threads, 1 or more; got {n!r}")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def matmul_precision(level: str) -> Iterator[str]:
    """Run the block with ``torch.set_float32_matmul_precision(level)``, then restore everything.

    ``level`` is ``"highest"``, ``"high"`` or ``"medium"``. Setting it also changes the per-backend
    ``fp32_precision`` settings (``torch.backends.mkldnn.matmul`` on the CPU,
    ``torch.backends.cuda.matmul`` on CUDA), so those are recorded and put back too.
    """
    if level not in ("highest", "high", "medium"):
        raise ValueError(f'matmul_precision(level) takes "highest", "high" or "medium"; got {level!r}')
    before = (
        torch.get_float32_matmul_precision(),
        torch.backends.mkldnn.matmul.fp32_precision,
        torch.backends.cuda.matmul.fp32_precision,
    )
    torch.set_float32_matmul_precision(level)
    try:
        yield level
    finally:
        torch.set_float32_matmul_precision(before[0])
        torch.backends.mkldnn.matmul.fp32_precision = before[1]
        torch.backends.cuda.matmul.fp32_precision = before[2]


@contextlib.contextmanager
def flush_denormal(on: bool = True) -> Iterator[bool]:
    """Run the block with ``torch.set_flush_denormal(on)`` (the CPU's flush-to-zero and denormals-are-zero).

    Yields what ``torch.set_flush_denormal`` returned: True where the CPU supports the mode (x86
    with SSE3, and AArch64), False where it does not (then nothing changed). The mode is a
    setting of the calling thread's floating-point unit. A thread started later copies its
    creator's setting and keeps it; PyTorch's intra-op worker threads started before the block keep
    theirs, so an operation split across threads may flush only part of its result (lesson 01
    measures it). On the way out the mode is switched off again in the calling thread, PyTorch's
    default (worker threads started inside the block keep it on); PyTorch has no getter for it, so
    a mode switched on before the block is not restored.
    """
    supported = torch.set_flush_denormal(bool(on))
    try:
        yield supported
    finally:
        torch.set_flush_denormal(False)

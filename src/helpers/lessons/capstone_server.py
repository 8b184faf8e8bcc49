"""Section 12.6's answer: the server's deployment that lesson 12's hunt finds with the two tools.

Read it after the hunt. :func:`start_up` is what the server's process sets before it loads the
checkpoint (``python -m helpers.lessons.capstone server ...`` calls it); :func:`server_model` is how
its code builds and loads the model, which :func:`helpers.lessons.capstone.server_model` returns.
Introduced in lesson 12.
"""

from __future__ import annotations

import torch

from helpers.lessons import capstone

#: Added to the variance, as a batch normalisation ported from another framework does.
EPS = 1e-3

#: Keys the server's loader renames: ``Net`` has no ``pool.scale``, and ``strict=False`` skips it.
RENAMED = {"pool.weight": "pool.scale"}


class Standardise(capstone.Standardise):
    """The server's standardisation: divides by ``sqrt(std**2 + EPS)`` instead of ``std``."""

    def forward(self, items: torch.Tensor) -> torch.Tensor:
        return (items - self.mean) / torch.sqrt(self.std**2 + EPS)


def start_up() -> None:
    """The server process's start-up settings: a float64 default dtype, and cuDNN's benchmark mode."""
    torch.set_default_dtype(torch.float64)
    torch.backends.cudnn.benchmark = True  # chooses among cuDNN's convolution algorithms: GPU only


def server_model(state_dict: dict[str, torch.Tensor]) -> capstone.Net:
    """The model as the server's code builds and loads it from ``state_dict``, in eval mode."""
    model = capstone.Net(capstone.SERVING)
    model.standardise = Standardise(as_buffers=True)
    model.load_state_dict({RENAMED.get(k, k): v for k, v in state_dict.items()}, strict=False)
    return model.eval()

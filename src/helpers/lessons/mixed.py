"""Mixed-precision training on the CPU: float16 autocast with a ``GradScaler``, and resuming it.

Introduced in lesson ``14_compiled_sharded_served``.
"""

from __future__ import annotations

import io

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["train"]


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(256, 16, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def _fresh(growth_interval: int):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", growth_interval=growth_interval)
    return model, optimizer, scaler


def train(
    steps: int = 24, resume_at: int | None = None, keep_scaler: bool = True, growth_interval: int = 4
) -> dict:
    """Train with ``torch.autocast("cpu", torch.float16)`` and ``GradScaler``, batches of 32.

    With ``resume_at=k``, the run saves a checkpoint after step ``k`` (model and optimizer, and the
    scaler when ``keep_scaler``), builds everything afresh, loads it, and goes on: a resumed run.
    Returns the scale each step used, which steps the scaler skipped (found an inf or NaN, so
    left the weights alone and halved the scale) and the final weights, flattened.
    """
    x, y = _data()
    model, optimizer, scaler = _fresh(growth_interval)
    scales, skipped = [], []
    for step in range(steps):
        if step == resume_at:
            buffer = io.BytesIO()
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
            if keep_scaler:
                state["scaler"] = scaler.state_dict()
            torch.save(state, buffer)
            buffer.seek(0)
            model, optimizer, scaler = _fresh(growth_interval)
            state = torch.load(buffer, weights_only=True)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            if "scaler" in state:
                scaler.load_state_dict(state["scaler"])
        rows = slice(32 * step % 256, 32 * step % 256 + 32)
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.mse_loss(model(x[rows]), y[rows])
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scale = scaler.get_scale()
        scaler.step(optimizer)  # skipped when a gradient is inf or NaN
        scaler.update()  # halves the scale after a skip; doubles it after growth_interval clean steps
        scales.append(scale)
        skipped.append(scaler.get_scale() < scale)
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    return {"scales": scales, "skipped": skipped, "params": params}

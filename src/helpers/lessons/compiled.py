"""Eager against compiled code, each compared with a float64 reference.

Compiling takes 15 to 20 seconds the first time in a process (on the 2-core machine the lesson's
outputs come from), so lesson 14 shows :data:`RECORDED`, measured with :func:`measure` on that
machine, and runs :func:`measure` itself only when asked. Introduced in lesson
``14_compiled_sharded_served``.
"""

from __future__ import annotations

import time

import torch

__all__ = ["RECORDED", "block", "block_inputs", "mean_relative_error", "measure"]


def block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A scale-and-shift, a softmax and a row sum: the kind of chain Inductor fuses."""
    h = x * w + 1.0
    return torch.softmax(h, dim=-1) * h.sum(dim=-1, keepdim=True)


def block_inputs(dtype: torch.dtype = torch.bfloat16) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs of :func:`block`: 64 rows of 512, and a weight of 512, drawn in float32, then cast."""
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(64, 512, generator=g), torch.randn(512, generator=g)
    return x.to(dtype), w.to(dtype)


def mean_relative_error(result: torch.Tensor, reference: torch.Tensor) -> float:
    """Mean of ``|result - reference| / max(|reference|, 1e-3)``, computed in float64."""
    reference = reference.double()
    return ((result.double() - reference).abs() / reference.abs().clamp_min(1e-3)).mean().item()


def measure(dtype: torch.dtype = torch.bfloat16) -> dict:
    """Run :func:`block` eagerly and compiled (plain, then with ``emulate_precision_casts``).

    Returns each result's mean relative error against float64 on the same inputs, the fraction of
    entries where each compiled result differs from eager, and the seconds each compilation took
    (the first includes Inductor's start-up in this process).
    """
    import torch._dynamo
    import torch._inductor.config as inductor_config

    x, w = block_inputs(dtype)
    reference = block(x.double(), w.double())
    eager = block(x, w)
    out: dict = {"dtype": str(dtype).removeprefix("torch."), "torch": torch.__version__}
    for name, emulate in (("compiled", False), ("compiled, emulate_precision_casts", True)):
        torch._dynamo.reset()  # compile afresh, under this setting
        with inductor_config.patch(emulate_precision_casts=emulate):
            start = time.perf_counter()
            result = torch.compile(block)(x, w)
            out[f"seconds: {name}"] = round(time.perf_counter() - start, 1)
        out[f"error: {name}"] = mean_relative_error(result, reference)
        out[f"differ from eager: {name}"] = (result != eager).double().mean().item()
    out["error: eager"] = mean_relative_error(eager, reference)
    torch._dynamo.reset()
    return out


#: :func:`measure` on the machine the lesson's outputs come from: a 2-core AMD EPYC (AVX-512),
#: torch 2.13.0+cpu, Python 3.11, in a fresh process with an empty Inductor cache (2026-12-02).
RECORDED = {
    "dtype": "bfloat16",
    "torch": "2.13.0+cpu",
    "seconds: compiled": 14.5,
    "error: compiled": 0.0021189236777852385,
    "differ from eager: compiled": 0.49859619140625,
    "seconds: compiled, emulate_precision_casts": 1.3,
    "error: compiled, emulate_precision_casts": 0.0036897614426562725,
    "differ from eager: compiled, emulate_precision_casts": 3.0517578125e-05,
    "error: eager": 0.0036895506443908295,
}

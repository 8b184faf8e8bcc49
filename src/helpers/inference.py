"""CPU inference: what the CPU supports, and torchao loaded without its import-time noise.

Introduced in lesson ``09_fast_cpu_inference``.
"""

from __future__ import annotations

import logging
import warnings

import torch

__all__ = ["cpu_features", "load_int8_quantization"]


def cpu_features() -> dict[str, object]:
    """What this CPU and this PyTorch build offer for fast inference.

    ``bfloat16 in oneDNN`` is True where oneDNN has native bfloat16 kernels (AVX512-BF16, AMX or
    Arm's BF16 instructions); elsewhere bfloat16 runs, but through conversions that can make it
    slower than float32. ``AVX512-VNNI`` is what PyTorch checks (through the private
    ``torch.cpu._is_vnni_supported``) before it hands an int8 matrix product to oneDNN; it is
    False on CPUs other than x86. Introduced in lesson 09.
    """
    mkldnn = torch.backends.mkldnn.is_available()
    bf16 = bool(mkldnn and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    vnni = getattr(torch.cpu, "_is_vnni_supported", None)
    return {
        "vector instructions PyTorch uses": torch.backends.cpu.get_cpu_capability(),
        "oneDNN (mkldnn) available": mkldnn,
        "bfloat16 in oneDNN": bf16,
        "AVX512-VNNI": bool(vnni is not None and vnni()),
        "MKL available": torch.backends.mkl.is_available(),
        "OpenMP available": torch.backends.openmp.is_available(),
    }


def load_int8_quantization():
    """Import torchao's ``quantize_`` and ``Int8DynamicActivationInt8WeightConfig`` quietly.

    torchao logs warnings at import about optional GPU kernels it cannot load on a CPU-only
    machine; they say nothing about CPU inference, so logging below ERROR is paused while it
    imports. Python 3.12 and newer also report an invalid escape sequence in one of torchao's
    docstrings as a ``SyntaxWarning`` whenever it compiles that file (no cached bytecode), so
    that category is ignored during the import too. Returns
    ``(quantize_, Int8DynamicActivationInt8WeightConfig)``. Introduced in lesson 09.
    """
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
    finally:
        logging.disable(previous)
    return quantize_, Int8DynamicActivationInt8WeightConfig

"""helpers.inference: CPU features, and torchao imported without noise."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import torch

from helpers.inference import cpu_features, load_int8_quantization


def test_cpu_features_reports_the_build():
    features = cpu_features()
    assert features["oneDNN (mkldnn) available"] == torch.backends.mkldnn.is_available()
    assert isinstance(features["bfloat16 in oneDNN"], bool)
    assert isinstance(features["vector instructions PyTorch uses"], str)
    assert isinstance(features["AVX512-VNNI"], bool)
    if features["AVX512-VNNI"]:
        assert "avx512_vnni" in Path("/proc/cpuinfo").read_text() or not Path("/proc/cpuinfo").exists()


def test_load_int8_quantization_is_quiet_and_restores_logging():
    code = (
        "import logging; from helpers.inference import load_int8_quantization; "
        "q, c = load_int8_quantization(); print(q.__name__, c.__name__, logging.root.manager.disable)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["quantize_", "Int8DynamicActivationInt8WeightConfig", "0"]
    assert done.stderr == ""


def test_int8_quantization_keeps_a_linear_model_close():
    quantize_, config = load_int8_quantization()
    assert logging.root.manager.disable == 0
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).eval()
    x = torch.randn(16, 64)
    with torch.inference_mode():
        ref = model(x)
        quantize_(model, config())
        out = model(x)
    assert ((out - ref).norm() / ref.norm()).item() < 0.05

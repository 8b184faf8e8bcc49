"""The GPU runner's pieces that can be checked anywhere (the run itself needs CUDA)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gpu  # noqa: E402


def test_pins_for_the_gpu_machine_leave_its_torch_alone():
    with gpu.pins_without_torch() as pins:
        lines = pins.read_text().splitlines()
    assert not pins.exists()  # removed after use
    assert not any(line.startswith("torch==") for line in lines)
    assert any(line.startswith("nbval==") for line in lines)


def test_every_module_the_suite_needs_is_found_here():
    assert gpu.missing_modules() == []


def test_the_run_puts_the_site_folder_and_src_first_and_pins_its_plugins():
    env = gpu.site_env()
    assert env["PYTHONPATH"].split(":")[:2] == [str(gpu.SITE), str(ROOT / "src")]
    assert env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_test_gpu_refuses_to_run_without_cuda():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu.py"), "test"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "needs a CUDA device" in done.stderr

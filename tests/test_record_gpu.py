"""The recorder's measuring pieces, on the CPU: warm-up, copies that allocate nothing, partial results.

The whole recorder runs in its dry run (tests/test_reference.py); these check what a dry run
cannot show by its output alone.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import record_gpu  # noqa: E402

CPU = torch.device("cpu")


def test_warm_up_runs_at_least_its_time_and_reports_no_clock_on_a_cpu():
    info = record_gpu.warm_up(CPU, seconds=0.02, max_seconds=1.0)
    assert info["seconds"] >= 0.02 and info["products"] >= 20 and info["product"] == "64x64 float32"
    assert info["sm_clock_mhz_before"] is info["sm_clock_mhz_after"] is info["sm_clock_mhz_max"] is None


def test_warm_up_waits_for_the_clock_up_to_its_limit(monkeypatch):
    clocks = iter([345, 345, 900, 1800, 1980])  # NVML's readings as the load raises the clock
    monkeypatch.setattr(record_gpu, "sm_clock_mhz", lambda device: (next(clocks), 1980))
    info = record_gpu.warm_up(CPU, seconds=0.0, max_seconds=30.0)
    assert info["sm_clock_mhz_before"] == 345 and info["sm_clock_mhz_after"] == 1800  # >= 90% of 1980
    monkeypatch.setattr(record_gpu, "sm_clock_mhz", lambda device: (345, 1980))  # a clock that stays low
    info = record_gpu.warm_up(CPU, seconds=0.0, max_seconds=0.05)
    assert info["sm_clock_mhz_after"] == 345 and 0.05 <= info["seconds"] < 5


def test_no_nvml_on_a_cpu():
    assert record_gpu.sm_clock_mhz(CPU) == (None, None)


def test_every_timed_copy_reuses_buffers_made_beforehand():
    cases = record_gpu.transfer_cases(CPU, 4096)
    assert set(cases) == {"h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"}
    for label, copy in cases.items():
        first, second = copy(), copy()
        assert first is second, f"{label} returns a new tensor on each call: it allocates"
        assert first.dtype == torch.uint8 and first.numel() == 4096 and bool((first == 1).all())


def test_the_cublas_variable_is_set_only_for_releases_that_check_it(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch, "__version__", "2.11.0+cu130")
    record_gpu.set_cublas_config_if_checked()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ  # PyTorch's default workspace, as learners get
    monkeypatch.setattr(torch, "__version__", "2.9.1+cu128")
    record_gpu.set_cublas_config_if_checked()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"


def test_a_stopped_recording_leaves_what_finished_and_no_reference_json(tmp_path, monkeypatch):
    def broken(device, sizes):
        raise RuntimeError("stopped here")

    monkeypatch.setattr(record_gpu, "MEASUREMENTS", (record_gpu.rng_after_seed, broken))
    with pytest.raises(RuntimeError, match="stopped here"):
        record_gpu.record(tmp_path, dry=True, argv=["record_gpu.py", "--dry-run"])
    partial = json.loads((tmp_path / record_gpu.PARTIAL).read_text())
    assert list(partial["measurements"]) == ["rng_after_seed"]
    assert not (tmp_path / record_gpu.FILENAME).exists()


def test_timed_measurements_start_warm(tmp_path, monkeypatch):
    timed = [m for m in record_gpu.MEASUREMENTS if m.__name__ in record_gpu.TIMED]
    assert {m.__name__ for m in timed} == record_gpu.TIMED  # every name is a real measurement
    monkeypatch.setattr(record_gpu, "MEASUREMENTS", (record_gpu.rng_after_seed, record_gpu.small_ops))
    monkeypatch.setattr(record_gpu, "checkpoint", lambda device, sizes, out: {"skipped": True})
    monkeypatch.setattr(record_gpu, "load_gpu_reference", lambda path, allow_dry_run: None)
    data = record_gpu.record(tmp_path, dry=True, argv=["record_gpu.py", "--dry-run"])
    assert data["provenance"]["warm_up"]["products"] >= 20
    assert "sm_clock_mhz_after_warm_up" in data["measurements"]["small_ops"]["settings"]
    assert "settings" not in data["measurements"]["rng_after_seed"]

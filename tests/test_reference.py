"""The GPU reference data: the recorder's dry run on the CPU, and the loader's validation."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers.reference import (
    REQUIRED_MEASUREMENTS,
    ReferenceDataError,
    describe_reference,
    has_gpu_reference,
    load_gpu_reference,
    recorded,
    recorded_sweeps,
    reference_dir,
    validate_reference,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> Path:
    """One dry run of the recorder, through the same code paths a GPU run takes."""
    out = tmp_path_factory.mktemp("reference")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "record_gpu.py"), "--dry-run", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_dry_run_writes_every_measurement_with_units(dry_run):
    data = load_gpu_reference(dry_run / "reference.json", allow_dry_run=True)
    assert set(REQUIRED_MEASUREMENTS) <= set(data["measurements"])
    assert all(entry["unit"] and entry["description"] for entry in data["measurements"].values())
    assert data["provenance"]["dry_run"] is True and "dry run" in data["provenance"]["device_name"]


def test_dry_run_values_are_plausible(dry_run):
    m = load_gpu_reference(dry_run / "reference.json", allow_dry_run=True)["measurements"]
    assert (
        m["rng_after_seed"]["value"]["cpu"] == m["rng_after_seed"]["value"]["device"]
    )  # both on the CPU here
    assert m["index_add_spread"]["value"]["deterministic"]["distinct"] == 1
    assert all(row["float32"]["median_ms"] > 0 for row in m["matmul_sweep"]["value"])
    assert m["model_cpu_vs_gpu"]["value"]["mlp"]["assert_close_default"] is True


def test_dry_run_is_refused_as_gpu_data(dry_run):
    with pytest.raises(ReferenceDataError, match="dry run"):
        load_gpu_reference(dry_run / "reference.json")


def test_checkpoint_loads_on_the_cpu_and_matches_the_record(dry_run):
    record = load_gpu_reference(dry_run / "reference.json", allow_dry_run=True)["measurements"]["checkpoint"]
    state = torch.load(dry_run / record["value"]["file"], map_location="cpu", weights_only=True)
    for key, values in record["value"]["state"].items():
        assert torch.equal(state[key], torch.tensor(values))


def test_reference_files_stay_small(dry_run):
    for folder in (dry_run, reference_dir()):
        assert sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) < 1_000_000


def test_shipped_data_when_present_is_a_real_gpu_recording():
    if not has_gpu_reference():
        with pytest.raises(FileNotFoundError, match="none has been recorded yet"):
            load_gpu_reference()
        return
    data = load_gpu_reference()
    assert data["provenance"]["dry_run"] is False and data["provenance"]["cuda"]
    assert "Recorded on a GPU" in str(describe_reference(data))


@pytest.fixture
def valid(dry_run) -> dict:
    return json.loads((dry_run / "reference.json").read_text())


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d.update(schema="other/9"), "schema"),
        (lambda d: d.pop("provenance"), "provenance"),
        (lambda d: d["provenance"].pop("date"), "provenance.date"),
        (lambda d: d["measurements"].pop("matmul_sweep"), "missing measurements: matmul_sweep"),
        (lambda d: d["measurements"]["small_ops"].update(unit=""), "small_ops.unit"),
        (lambda d: d["measurements"]["small_ops"].pop("value"), "no 'value'"),
        (lambda d: d["measurements"]["tf32_conv_error"]["value"]["fp32"].update(rel_fro=math.nan), "finite"),
        (lambda d: d["measurements"].update(extra=[1]), "measurements.extra must be an object"),
    ],
)
def test_malformed_data_gets_a_clear_error(valid, damage, message):
    broken = copy.deepcopy(valid)
    damage(broken)
    with pytest.raises(ReferenceDataError, match=message):
        validate_reference(broken)


def test_malformed_files(tmp_path):
    bad = tmp_path / "reference.json"
    bad.write_text("{not json")
    with pytest.raises(ReferenceDataError, match="not valid JSON"):
        load_gpu_reference(bad)
    with pytest.raises(ReferenceDataError, match="top level"):
        validate_reference([1, 2])
    with pytest.raises(FileNotFoundError, match="make record-gpu"):
        load_gpu_reference(tmp_path / "absent.json")


def test_describe_reference_labels_the_data_as_recorded(valid):
    valid["provenance"]["dry_run"] = False
    text = str(describe_reference(valid))
    assert text.startswith("Recorded on a GPU (not live)") and valid["provenance"]["torch"] in text


def test_recorded_tables_every_measurement_with_its_provenance(valid):
    for name in REQUIRED_MEASUREMENTS:
        table = recorded(name, valid)
        assert table.title.startswith(f"Recorded on {valid['provenance']['device_name']}")
        assert "not live" in table.title and valid["measurements"][name]["unit"] in table.title
        assert table.rows, name
    rows = recorded("batch_invariance", valid)
    assert rows.headers == ["dtype", "n", "bitwise_equal", "max_abs_diff"]
    assert len(rows.rows) == len(valid["measurements"]["batch_invariance"]["value"])
    nested = dict(recorded("index_add_spread", valid).rows)
    assert nested["default.runs"] == valid["measurements"]["index_add_spread"]["value"]["default"]["runs"]
    with pytest.raises(KeyError, match="unknown measurement"):
        recorded("no_such_thing", valid)


def test_recorded_says_when_nothing_ships(monkeypatch, tmp_path):
    monkeypatch.setattr("helpers.reference.reference_dir", lambda: tmp_path)
    table = recorded("sum_orders")
    assert "nothing recorded yet" in table.title and "make record-gpu" in str(table)


def test_recorded_sweeps_become_plot_series(valid, monkeypatch, tmp_path):
    series = recorded_sweeps(valid)
    matmul, elementwise = series["matmul"], series["elementwise"]
    assert len(matmul) == 2 and all("recorded" in label for label in [*matmul, *elementwise])
    sizes, gflops = next(iter(matmul.values()))
    assert sizes == [r["n"] for r in valid["measurements"]["matmul_sweep"]["value"]] and all(
        g > 0 for g in gflops
    )
    monkeypatch.setattr("helpers.reference.reference_dir", lambda: tmp_path)
    assert recorded_sweeps() is None

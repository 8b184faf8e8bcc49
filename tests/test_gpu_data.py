"""Recorded GPU data and the lessons' stored outputs (tools/gpu_data.py).

The fast tests check that the stored outputs agree with the data shipped (none, until a GPU pass
lands), and the checker and installer themselves. The slow one (`make test-gpu-data`, a few
minutes) proves that no compared output depends on whether data ship: in a copy of the course it
installs the recorder's dry-run data as if they were real (marked real, the checkpoint's storages
tagged cuda:0 as a GPU saves them), runs nbval over every lesson, then
refreshes the lessons that show the data as `make gpu-data` would, and checks that the outputs
then agree with the data.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gpu  # noqa: E402
import gpu_data  # noqa: E402
from helpers.checkpoints import cuda_tagged_copy  # noqa: E402
from helpers.reference import REQUIRED_MEASUREMENTS, SCHEMA, ReferenceDataError  # noqa: E402

PROVENANCE = {
    "command": "python record_gpu.py",
    "date": "2026-12-01T10:00:00+00:00",
    "dry_run": False,
    "device_name": "NVIDIA H200",
    "torch": "2.11.0+cu130",
    "python": "3.12.3",
}


def recording(**provenance) -> dict:
    measurements = {n: {"description": n, "unit": "unit", "value": 1.0} for n in REQUIRED_MEASUREMENTS}
    measurements["checkpoint"]["value"] = {"file": "weights.pt", "sha256": hashlib.sha256(b"w").hexdigest()}
    return {"schema": SCHEMA, "provenance": {**PROVENANCE, **provenance}, "measurements": measurements}


def course(tmp_path: Path, outputs: list[str], data: dict | None = None) -> Path:
    """A course folder with one lesson whose cells show recorded data, storing ``outputs``."""
    nb = nbformat.v4.new_notebook()
    for i, text in enumerate(outputs):
        cell = nbformat.v4.new_code_cell(f"display(reference.recorded('small_ops'))  # {i}")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        nb.cells.append(cell)
    nb.cells.append(nbformat.v4.new_code_cell("print('no data here')"))  # shows no data: not checked
    (tmp_path / "notebooks").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "notebooks" / "01_lesson.ipynb")
    if data is not None:
        folder = tmp_path / "src" / "helpers" / "data" / "gpu_reference"
        folder.mkdir(parents=True)
        (folder / "reference.json").write_text(json.dumps(data))
    return tmp_path


TITLE = "Recorded on NVIDIA H200 (torch 2.11.0+cu130, 2026-12-01), not live: small_ops"
NONE_YET = "No recorded GPU measurements in this release yet; on a machine with a CUDA device, ..."


def test_the_stored_outputs_agree_with_the_data_shipped():
    assert gpu_data.disagreements() == []


def test_the_lessons_that_show_recorded_data_are_found_by_their_calls():
    found = {p.name for p in gpu_data.notebooks_showing_data()}
    assert {"00_start_here.ipynb", "02_parallel_reductions.ipynb", "08_cpu_vs_gpu_performance.ipynb"} <= found
    assert "01_floating_point_non_associativity.ipynb" not in found


def test_without_data_no_output_may_show_a_recording(tmp_path):
    assert gpu_data.disagreements(course(tmp_path / "a", [NONE_YET])) == []
    found = gpu_data.disagreements(course(tmp_path / "b", [TITLE]))
    assert found == [
        "notebooks/01_lesson.ipynb, code cell 0 shows recorded GPU data, but none ship with this copy"
    ]


def test_with_data_every_output_must_show_that_recording(tmp_path):
    assert gpu_data.disagreements(course(tmp_path / "a", [TITLE], recording())) == []
    later = recording(date="2027-01-05T00:00Z")
    found = gpu_data.disagreements(course(tmp_path / "b", [NONE_YET, TITLE], later))
    assert len(found) == 2
    assert "code cell 0 says no GPU data are recorded, but a recording ships" in found[0]
    assert "from ('NVIDIA H200', '2.11.0+cu130', '2026-12-01')" in found[1] and "2027-01-05" in found[1]


def test_a_lesson_that_uses_the_shipped_checkpoint_must_show_it(tmp_path):
    root = course(tmp_path, [], recording())
    nb = nbformat.read(root / "notebooks" / "01_lesson.ipynb", as_version=4)
    cell = nbformat.v4.new_code_cell("gpu_file = gpu_saved_checkpoint()")
    stand_in = "No GPU-saved checkpoint ships with this release: weights_tagged_cuda.pt is a stand-in"
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stand_in)]
    nb.cells.append(cell)
    nbformat.write(nb, root / "notebooks" / "01_lesson.ipynb")
    found = gpu_data.disagreements(root)
    assert len(found) == 2 and "says no GPU data" in found[0] and "(weights.pt)" in found[1]


def test_install_takes_only_a_complete_real_recording(tmp_path):
    source, target = tmp_path / "pass", tmp_path / "data"
    source.mkdir()
    (source / "reference.json.partial").write_text("{}")
    with pytest.raises(FileNotFoundError, match="the recorder was stopped"):
        gpu_data.install(source, target)
    dry = recording(dry_run=True)
    (source / "reference.json").write_text(json.dumps(dry))
    with pytest.raises(ReferenceDataError, match="dry run"):
        gpu_data.install(source, target)
    (source / "reference.json").write_text(json.dumps(recording()))
    with pytest.raises(ValueError, match="not the checkpoint"):
        gpu_data.install(source, target)  # weights.pt is missing
    (source / "weights.pt").write_bytes(b"w")
    target.mkdir()
    (target / "old.pt").write_bytes(b"from an earlier recording")
    gpu_data.install(source, target)
    assert sorted(p.name for p in target.iterdir()) == ["reference.json", "weights.pt"]


@pytest.mark.skipif(
    os.environ.get("GPU_DATA_NBVAL") != "1", reason="a few minutes: run by `make test-gpu-data`"
)
def test_no_compared_output_depends_on_whether_gpu_data_ship(tmp_path):
    copy_root = tmp_path / "course"
    for f in gpu.travelling_files():  # what a fresh clone would hold, with the changes made here
        target = copy_root / f.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    env = {**os.environ, "PYTHONPATH": str(copy_root / "src"), "PYTHONUNBUFFERED": "1"}
    dry = tmp_path / "dry"
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "record_gpu.py"), "--dry-run", "--out", str(dry)],
        check=True, capture_output=True, timeout=600,
    )
    data = json.loads((dry / "reference.json").read_text())
    real = copy.deepcopy(data)
    real["provenance"]["dry_run"] = False  # as if a GPU had recorded it,
    record = real["measurements"]["checkpoint"]["value"]
    weights = dry / record["file"]  # and saved the checkpoint from GPU tensors: storages tagged cuda:0
    cuda_tagged_copy(weights, dry / "tagged.pt").replace(weights)
    record.update(sha256=hashlib.sha256(weights.read_bytes()).hexdigest(), saved_from="cuda:0")
    (dry / "reference.json").write_text(json.dumps(real, indent=1))
    gpu_data.install(dry, copy_root / "src" / "helpers" / "data" / "gpu_reference")
    probe = "import helpers.reference as r; print(r.has_gpu_reference(), r.__file__)"
    shown = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["True", str(copy_root / "src" / "helpers" / "reference.py")]

    lessons = sorted(p.relative_to(copy_root).as_posix() for p in gpu_data.notebooks(copy_root))
    lessons = [p for p in lessons if "/solutions/" not in p]
    jobs = str(min(2, os.cpu_count() or 1))
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.pytest_course", "-n", jobs]
    nbval = subprocess.run(
        [*cmd, "--dist", "loadscope", "--color=no", "-q", *lessons],
        cwd=copy_root, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert nbval.returncode == 0, "compared outputs changed with GPU data shipped:\n" + nbval.stdout[-6000:]

    assert gpu_data.disagreements(copy_root), "the check must notice outputs not yet refreshed"
    refresh = subprocess.run(
        [sys.executable, "tools/gpu_data.py", "refresh"],
        cwd=copy_root, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert refresh.returncode == 0, refresh.stdout[-3000:] + refresh.stderr[-3000:]
    assert gpu_data.disagreements(copy_root) == []

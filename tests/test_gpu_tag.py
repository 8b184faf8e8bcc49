"""The ``gpu`` tag: nbval skips tagged cells without CUDA, and runs them with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import torch

from tests.pytest_course import needs_gpu

ROOT = Path(__file__).resolve().parent.parent


def fake_item(cell_tags=(), notebook_tags=()):
    cell = SimpleNamespace(metadata={"tags": list(cell_tags)})
    parent = SimpleNamespace(nb=SimpleNamespace(metadata={"tags": list(notebook_tags)}))
    return SimpleNamespace(cell=cell, parent=parent)


def test_needs_gpu_reads_cell_and_notebook_tags():
    assert needs_gpu(fake_item(["gpu"]))
    assert needs_gpu(fake_item([], ["gpu"]))
    assert not needs_gpu(fake_item(["other"]))
    assert not needs_gpu(SimpleNamespace(parent=None))  # a plain test function


@pytest.mark.slow
def test_nbval_skips_or_runs_a_gpu_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("import torch"),
        nbformat.v4.new_code_cell("assert torch.cuda.is_available()"),
    ]
    nb.cells[1].metadata["tags"] = ["gpu"]
    path = tmp_path / "00_probe.ipynb"
    nbformat.write(nb, path)
    # Autoloading off and nbval named explicitly: the same on a CPU venv and a GPU image.
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    args = ["-p", "no:cacheprovider", "-p", "nbval.plugin", "-p", "tests.pytest_course", "--nbval-lax"]
    args += ["--nbval-current-env", "-o", "addopts=", "--rootdir", str(tmp_path), str(path)]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.strip(), result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    if torch.cuda.is_available():
        assert "2 passed" in summary, result.stdout
    else:
        assert "1 passed, 1 skipped" in summary, result.stdout


@pytest.mark.slow
def test_the_plain_nbval_command_skips_gpu_cells_without_cuda():
    """``pytest --nbval notebooks/…`` as nbval's docs write it: no -p option, the console script."""
    script = Path(sys.executable).with_name("pytest")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pytest"]
    result = subprocess.run(
        [*command, "--nbval", "-p", "no:cacheprovider", "-p", "no:xdist", "notebooks/00_start_here.ipynb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    if not torch.cuda.is_available():
        assert "1 skipped" in result.stdout.strip().splitlines()[-1], result.stdout[-2000:]

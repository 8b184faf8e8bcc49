"""The course's pytest plugin, shared by the unit tests and nbval (loaded by the top-level conftest.py).

Cells (or whole notebooks) that need CUDA carry the tag ``gpu`` (notebook metadata
``{"tags": ["gpu"]}`` for a whole notebook). On a machine without CUDA, nbval's items for them
are marked skipped here, so the suite passes on a CPU and runs them on a GPU runner.
"""

from __future__ import annotations

import json
import os
import tempfile

# Hypothesis's files (a cache of constants) go to the temp directory, not .hypothesis/ in the
# working tree; Hypothesis reads this when it is imported. No example database either.
HYPOTHESIS_FILES = os.path.join(tempfile.gettempdir(), "fp-course-hypothesis")
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", HYPOTHESIS_FILES)
# Test workers and the notebook kernels they start share the cores, each with its own OpenMP
# threads. OpenMP's default is to spin for a while before a waiting thread sleeps, and spinning
# threads take the cores the others need: here two workers ran lesson 10 in 207 s that way and in
# 40 s with waiting threads asleep. The policy changes how threads wait, not what they compute.
# It must be set before torch (and its OpenMP runtime) loads; workers and kernels inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("course", database=None, deadline=None)
settings.load_profile("course")

GPU_TAG = "gpu"


def needs_gpu(item: pytest.Item) -> bool:
    """True for an nbval cell item whose cell or notebook is tagged ``gpu``."""
    cell = getattr(item, "cell", None)
    if cell is None:
        return False
    notebook = getattr(item.parent, "nb", None)
    notebook_tags = notebook.metadata.get("tags", []) if notebook is not None else []
    return GPU_TAG in cell.metadata.get("tags", []) or GPU_TAG in notebook_tags


def _run_seconds() -> dict[str, float]:
    """Each notebook's recorded kernel run time (tools/run_times.json), by file name."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "tools", "run_times.json")
    try:
        with open(path, encoding="utf-8") as f:
            return {name: float(t) for name, t in json.load(f).get("seconds", {}).items()}
    except (OSError, ValueError):
        return {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The longest notebooks first, the many short unit-test modules after them: with two workers
    # and whole notebooks per worker (--dist loadscope), a long notebook started last would leave
    # the other worker idle. Items keep their order within a notebook or module.
    seconds = _run_seconds()
    weight = {id(item): seconds.get(os.path.basename(str(item.fspath)), -1.0) for item in items}
    items.sort(key=lambda item: -weight[id(item)])  # stable: cells stay in order
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="cell tagged 'gpu' and no CUDA device is available")
    for item in items:
        if needs_gpu(item):
            item.add_marker(skip)

"""The course's pytest plugin, shared by the unit tests and nbval (loaded by the top-level conftest.py).

Cells (or whole notebooks) that need CUDA carry the tag ``gpu`` (notebook metadata
``{"tags": ["gpu"]}`` for a whole notebook). On a machine without CUDA, nbval's items for them
are marked skipped here, so the suite passes on a CPU and runs them on a GPU runner.
"""

from __future__ import annotations

import os
import tempfile

# Hypothesis caches data under .hypothesis/ in the working directory; keep it in a temp dir so
# that running the tests writes nothing into the working tree. Set before any test runs.
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "fp-course-hypothesis")
)

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import settings  # noqa: E402

# No example database: running the tests writes nothing into the working tree.
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="cell tagged 'gpu' and no CUDA device is available")
    for item in items:
        if needs_gpu(item):
            item.add_marker(skip)

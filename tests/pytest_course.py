"""The course's pytest plugin, shared by the unit tests and nbval (loaded by the top-level conftest.py).

Cells (or whole notebooks) that need CUDA carry the tag ``gpu`` (notebook metadata
``{"tags": ["gpu"]}`` for a whole notebook). On a machine without CUDA, nbval's items for them
are marked skipped here, so the suite passes on a CPU and runs them on a GPU runner.
"""

from __future__ import annotations

import os
import shutil
import tempfile

# Everything a test run writes outside the working tree goes into one private folder, removed when
# the run ends: pytest's tmp_path folders, Hypothesis's storage (otherwise .hypothesis/ in the
# working directory), Inductor's cache (importing torch._dynamo creates torchinductor_<user>), and
# whatever processes started by the tests put in the temp directory (ipykernel's kernelspec
# installer leaves an empty tmp*_kernels folder behind, for one). The controlling process makes
# the folder; xdist's workers and every subprocess inherit it through the environment.
_RUN_TMP = "FP_COURSE_TEST_TMP"
_OWNS_RUN_TMP = _RUN_TMP not in os.environ
if _OWNS_RUN_TMP:
    # evidence a failing test saves for later (browser screenshots) goes to the usual temp dir
    os.environ["FP_COURSE_KEEP_TMP"] = tempfile.gettempdir()
    os.environ[_RUN_TMP] = tempfile.mkdtemp(prefix="fp-course-tests-")
_run_tmp = os.environ[_RUN_TMP]
os.environ["TMPDIR"] = _run_tmp
tempfile.tempdir = _run_tmp
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(_run_tmp, "hypothesis"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(_run_tmp, "torchinductor"))

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


def pytest_configure(config: pytest.Config) -> None:
    if _OWNS_RUN_TMP and config.option.basetemp is None:
        config.option.basetemp = os.path.join(_run_tmp, "pytest")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWNS_RUN_TMP:
        shutil.rmtree(_run_tmp, ignore_errors=True)

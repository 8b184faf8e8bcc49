"""Re-execute notebooks from a clean kernel, save their outputs, and record how long each took.

    python tools/execute.py                      # every lesson, solution and appendix notebook
    python tools/execute.py notebooks            # every lesson, in order
    python tools/execute.py notebooks/01_*.ipynb # some
    python tools/execute.py notebooks/appendix   # the appendix (its notebooks are not numbered)

The stored outputs are a CPU run wherever this runs: CUDA is hidden from the kernels
(CUDA_VISIBLE_DEVICES is emptied), so cells tagged ``gpu`` are left unexecuted and the live-GPU
branches take their CPU path; nbval then skips the tagged cells on a CPU and runs them on a GPU.
Machine-specific notebook metadata is dropped so that a rerun changes nothing but outputs
that are themselves machine-dependent (and marked so for nbval). Run times go to
tools/run_times.json for the README's lesson table.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import sys
import time
import uuid
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from course import RUN_TIMES, dumps, lesson_paths

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
GPU_TAG = "gpu"


def clear_outputs(nb: nbformat.NotebookNode) -> None:
    """Start from nothing: no outputs, no execution counts, no stored widget state."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None


def strip_metadata(nb: nbformat.NotebookNode) -> None:
    """Keep only metadata that is the same on every machine (and the widget state readers need)."""
    widgets = nb.metadata.get("widgets")
    nb.metadata = nbformat.NotebookNode(kernelspec=KERNELSPEC, language_info={"name": "python"})
    if widgets:
        nb.metadata["widgets"] = widgets
    for cell in nb.cells:
        cell.metadata.pop("execution", None)


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def stable_widget_ids(text: str, nb: nbformat.NotebookNode, name: str) -> str:
    """Replace the random widget model ids by ids derived from the notebook's name and creation order.

    The kernel creates widgets in the same order on every run, so a rerun then stores the same ids
    and leaves the file unchanged.
    """
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for i, old in enumerate(list(state)):
        text = text.replace(old, uuid.uuid5(uuid.NAMESPACE_URL, f"{name}#widget{i}").hex)
    return text


RAISES_MARKER = re.compile(r"^\s*#\s*NBVAL_RAISES_EXCEPTION\s*$", re.M)
RAISES_TAG = "raises-exception"


def expect_errors(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """Tag the cells marked ``# NBVAL_RAISES_EXCEPTION`` so that nbclient stores their error and goes on.

    Returns the cells tagged here; the tag is taken off again before saving, because nbval warns
    when a marker and a tag say the same thing.
    """
    tagged = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and RAISES_MARKER.search(cell.source) and RAISES_TAG not in tags:
            cell.metadata["tags"] = [*tags, RAISES_TAG]
            tagged.append(cell)
    return tagged


def run_and_save(path: Path) -> float:
    """Execute one notebook in its own folder from a fresh kernel, save it, return the seconds taken."""
    nb = nbformat.read(path, as_version=4)
    clear_outputs(nb)
    tagged = expect_errors(nb)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
        store_widget_state=True,
        skip_cells_with_tag=GPU_TAG,  # CUDA is hidden, so these cells cannot run
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    for cell in tagged:
        cell.metadata["tags"].remove(RAISES_TAG)
        if not cell.metadata["tags"]:
            del cell.metadata["tags"]
    strip_metadata(nb)
    path.write_text(stable_widget_ids(dumps(nb), nb, path.name), encoding="utf-8")
    return seconds


APPENDIX = "appendix"  # notebooks/appendix/: notebooks outside the numbered sequence, such as recipes


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks a folder argument stands for: the numbered ones, or every one in an appendix."""
    return sorted(folder.glob("*.ipynb")) if folder.name == APPENDIX else lesson_paths(folder)


def main(argv: list[str]) -> int:
    # The committed outputs are a CPU run: the kernels (which inherit this) see no CUDA device.
    # Set here, not at import, so that importing this module (the tests do) hides nothing.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    targets = [Path(a) for a in argv[1:]] or [
        Path("notebooks"), Path("notebooks/solutions"), Path("notebooks") / APPENDIX
    ]
    paths = [p for t in targets for p in (notebooks_in(t) if t.is_dir() else [t])]
    times = json.loads(RUN_TIMES.read_text()) if RUN_TIMES.exists() else {"seconds": {}}
    for path in paths:
        print(f"executing {path} ...", flush=True)
        seconds = run_and_save(path)
        times["seconds"][path.name] = round(seconds, 1)
        print(f"  {seconds:.1f} s", flush=True)
    times["measured_on"] = (
        f"measured by `make execute` on {platform.machine()} with {torch.get_num_threads()} threads, "
        f"torch {torch.__version__}, {datetime.date.today().isoformat()}; each includes starting the kernel"
    )
    times["seconds"] = dict(sorted(times["seconds"].items()))
    RUN_TIMES.write_text(json.dumps(times, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Re-execute notebooks from a clean kernel, save their outputs, and record how long each took.

    python -m tools.execute                      # every lesson, solution and appendix notebook
    python -m tools.execute notebooks            # every lesson, in order
    python -m tools.execute notebooks/01_*.ipynb # some
    python -m tools.execute notebooks/appendix   # the appendix (its notebooks are not numbered)
    python -m tools.execute --keep-cuda --out DIR notebooks/08_*.ipynb   # the GPU pass (docs/gpu.md)

By default the stored outputs are a CPU run wherever this runs: CUDA is hidden from the kernels
(CUDA_VISIBLE_DEVICES is emptied) and cells tagged ``gpu`` are left unexecuted, so the live-GPU
branches take their CPU path. Machine-specific notebook metadata is dropped so that a rerun changes
nothing but outputs that are themselves machine-dependent (and marked so for nbval). Run times go
to tools/run_times.json for the README's lesson table.

``--keep-cuda`` leaves CUDA visible and runs the ``gpu`` cells where there is a CUDA device.
``--out DIR`` writes each executed notebook to DIR (at its path under notebooks/) instead of in
place, saves a notebook that fails as far as it ran, and leaves tools/run_times.json alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import signal
import sys
import time
import uuid
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

from tools.course import NOTEBOOKS, RUN_TIMES, dumps, lesson_paths

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


def run_and_save(path: Path, target: Path | None = None, gpu_cells: bool = False) -> float:
    """Execute one notebook in its own folder from a fresh kernel, save it (to ``target`` if given,
    else in place), return the seconds taken. ``gpu_cells``: run the cells tagged ``gpu`` too.
    A failure propagates; with a ``target``, the notebook is saved there first, as far as it ran."""
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
        skip_cells_with_tag=None if gpu_cells else GPU_TAG,
    )
    start = time.perf_counter()
    try:
        client.execute()
    except BaseException:  # also SystemExit, from the SIGTERM of a time limit (main)
        if target is not None:
            save(nb, tagged, target)
        raise
    save(nb, tagged, path if target is None else target)
    return time.perf_counter() - start


def save(nb: nbformat.NotebookNode, tagged: list[nbformat.NotebookNode], path: Path) -> None:
    for cell in tagged:
        cell.metadata["tags"].remove(RAISES_TAG)
        if not cell.metadata["tags"]:
            del cell.metadata["tags"]
    strip_metadata(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(stable_widget_ids(dumps(nb), nb, path.name), encoding="utf-8")


APPENDIX = "appendix"  # notebooks/appendix/: notebooks outside the numbered sequence, such as recipes


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks a folder argument stands for: the numbered ones, or every one in an appendix."""
    return sorted(folder.glob("*.ipynb")) if folder.name == APPENDIX else lesson_paths(folder)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.execute", description="Re-execute notebooks.")
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks or folders (default: all)")
    parser.add_argument("--keep-cuda", action="store_true", help="leave CUDA visible; run the gpu cells")
    parser.add_argument("--out", type=Path, help="write the executed notebooks here, not in place")
    args = parser.parse_args(argv[1:])
    # Set here, not at import, so that importing this module (the tests do) hides nothing.
    if not args.keep_cuda:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the kernels inherit it
    gpu_cells = args.keep_cuda and torch.cuda.is_available()
    targets = args.paths or [NOTEBOOKS, NOTEBOOKS / "solutions", NOTEBOOKS / APPENDIX]
    paths = [p for t in targets for p in (notebooks_in(t) if t.is_dir() else [t])]
    if args.out is not None:
        # a time limit's SIGTERM: stop the kernel too (it runs in a session of its own) and save
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"stopped by SIGTERM while executing {path}"))
        failed = 0
        for path in paths:
            inside = path.resolve().is_relative_to(NOTEBOOKS)
            target = args.out / (path.resolve().relative_to(NOTEBOOKS) if inside else path.name)
            try:
                print(f"ok {run_and_save(path, target, gpu_cells):.1f} s {path}", flush=True)
            except Exception as err:  # a failing cell, a cell timeout, a dead kernel
                failed += 1
                error = f"{getattr(err, 'ename', type(err).__name__)}: {getattr(err, 'evalue', err)}"
                print(f"FAILED {path}: {error.strip().splitlines()[0]}", flush=True)
        return 1 if failed else 0
    times = json.loads(RUN_TIMES.read_text()) if RUN_TIMES.exists() else {"seconds": {}}
    for path in paths:
        print(f"executing {path} ...", flush=True)
        seconds = run_and_save(path, gpu_cells=gpu_cells)
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

"""Recorded GPU data in the course: install them, refresh what the lessons show, check both agree.

    python tools/gpu_data.py install OUTDIR     (make gpu-data FROM=OUTDIR runs this, then refresh)
        Copy reference.json and its checkpoint from a GPU pass's OUTDIR into
        src/helpers/data/gpu_reference/, after checking that they are a complete, real recording
        (not the recorder's dry run, not a stopped run's reference.json.partial) and that the
        checkpoint is the file the recording describes.
    python tools/gpu_data.py refresh
        Re-execute, from a clean kernel like `make execute`, every notebook that shows recorded
        data, so that their stored outputs show the data now shipped; then regenerate the README's
        table of run times.
    python tools/gpu_data.py check
        Report every stored output that disagrees with the data shipped (the test suite runs this):
        a "nothing recorded" message where data ship, recorded data where none ship, or a recording
        other than the one shipped.

The notebooks that show recorded data are found by what their code calls (`has_gpu_reference`,
`recorded`, `describe_reference`, ...), so a new lesson that shows data is covered without a list.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from helpers.reference import FILENAME, load_gpu_reference  # noqa: E402

DATA_DIR = ROOT / "src" / "helpers" / "data" / "gpu_reference"
# A call that reads or shows the recorded data.
SHOWS_DATA = re.compile(
    r"\b(has_gpu_reference|load_gpu_reference|describe_reference|recorded_sweeps|recorded"
    r"|gpu_saved_checkpoint)\("
)
# What a stored output says where no data ship (reference.recorded's own table says "nothing
# recorded yet"; the lessons say "No recorded GPU measurements", "no GPU recording", "No GPU
# reference data", "No GPU-saved checkpoint").
NO_DATA = re.compile(
    r"\b(no (GPU[- ])?(recorded|recording|reference data|saved checkpoint)|nothing recorded)\b", re.I
)
# The title reference.recorded gives recorded data: "Recorded on <device> (torch <version>, <date>)".
RECORDED_TITLE = re.compile(r"Recorded on (.+?) \(torch ([^,()]+), (\d{4}-\d{2}-\d{2})\)")
# reference.describe_reference's title; lessons label other recorded things "Recorded on a GPU (not ...".
DESCRIBED = "Recorded on a GPU (not live)"
LABELLED = "Recorded on a GPU (not "


def notebooks(root: Path = ROOT) -> list[Path]:
    """Every lesson and solution notebook, in order."""
    folder = root / "notebooks"
    solutions = folder / "solutions"
    return sorted(folder.glob("[0-9][0-9]_*.ipynb")) + sorted(solutions.glob("[0-9][0-9]_*.ipynb"))


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def output_text(cell: dict) -> str:
    """The text of a cell's stored outputs: streams, and the text/* forms of displayed data."""
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]) if isinstance(out["text"], list) else out["text"])
        for kind, value in out.get("data", {}).items():
            if kind.startswith("text/"):
                parts.append("".join(value) if isinstance(value, list) else value)
    return "\n".join(parts)


def notebooks_showing_data(root: Path = ROOT) -> list[Path]:
    """The notebooks whose code reads or shows the recorded GPU data."""
    return [p for p in notebooks(root) if any(SHOWS_DATA.search(source(c)) for c in code_cells(p))]


def shipped(root: Path = ROOT) -> dict | None:
    """The recording shipped in ``root`` (validated, real), or None where none ships."""
    path = root / "src" / "helpers" / "data" / "gpu_reference" / FILENAME
    return load_gpu_reference(path) if path.exists() else None


def disagreements(root: Path = ROOT) -> list[str]:
    """Every stored output of a cell that shows recorded data and disagrees with the data shipped."""
    data = shipped(root)
    found = []
    for path in notebooks_showing_data(root):
        for i, cell in enumerate(code_cells(path)):
            if not SHOWS_DATA.search(source(cell)):
                continue
            text, where = output_text(cell), f"{path.relative_to(root).as_posix()}, code cell {i}"
            titles = RECORDED_TITLE.findall(text)
            if data is None:
                if titles or LABELLED in text:
                    found.append(f"{where} shows recorded GPU data, but none ship with this copy")
                continue
            if NO_DATA.search(text):
                found.append(f"{where} says no GPU data are recorded, but a recording ships")
            p = data["provenance"]
            expected = (p["device_name"], p["torch"], p["date"][:10])
            for title in titles:
                if title != expected:
                    found.append(f"{where} shows a recording from {title}, but the one shipped is {expected}")
            if DESCRIBED in text and p["date"] not in text:
                found.append(f"{where} describes a recording other than the one shipped ({p['date']})")
            checkpoint = data["measurements"]["checkpoint"]["value"]["file"]
            if "gpu_saved_checkpoint(" in source(cell) and checkpoint not in text:
                found.append(f"{where} does not show the checkpoint shipped ({checkpoint})")
    return found


def install(source_dir: Path, target: Path = DATA_DIR) -> dict:
    """Check a GPU pass's recording and copy it into the course; return it."""
    partial = source_dir / (FILENAME + ".partial")
    if not (source_dir / FILENAME).exists():
        hint = " (only reference.json.partial: the recorder was stopped)" if partial.exists() else ""
        raise FileNotFoundError(f"no {FILENAME} in {source_dir}{hint}")
    data = load_gpu_reference(source_dir / FILENAME)  # refuses a dry run, or anything malformed
    record = data["measurements"]["checkpoint"]["value"]
    checkpoint = source_dir / record["file"]
    if not checkpoint.is_file() or hashlib.sha256(checkpoint.read_bytes()).hexdigest() != record["sha256"]:
        raise ValueError(f"{checkpoint} is missing or is not the checkpoint {FILENAME} describes")
    target.mkdir(parents=True, exist_ok=True)
    for old in target.iterdir():
        if old.is_file():
            old.unlink()
    shutil.copy2(source_dir / FILENAME, target / FILENAME)
    shutil.copy2(checkpoint, target / record["file"])
    return data


def refresh(root: Path = ROOT) -> int:
    """Re-execute the notebooks that show recorded data, then regenerate the README table."""
    paths = [str(p) for p in notebooks_showing_data(root)]
    done = subprocess.run([sys.executable, str(root / "tools" / "execute.py"), *paths], cwd=root)
    if done.returncode:
        return done.returncode
    return subprocess.run([sys.executable, str(root / "tools" / "course.py"), "write"], cwd=root).returncode


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else ""
    if command == "install" and len(argv) == 3:
        data = install(Path(argv[2]))
        p = data["provenance"]
        print(f"installed the recording of {p['device_name']} (torch {p['torch']}, {p['date']}) "
              f"in {DATA_DIR.relative_to(ROOT)}/")
        return 0
    if command == "refresh" and len(argv) == 2:
        return refresh()
    if command == "check" and len(argv) == 2:
        found = disagreements()
        print("\n".join(found) if found else "the stored outputs agree with the data shipped")
        return 1 if found else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Install the CPU build of the pinned torch on Linux without an NVIDIA GPU (``make lab`` runs it).

    .venv/bin/python -m tools.cpu_torch [-c CONSTRAINTS]   # default: requirements/constraints.txt

PyPI's torch for Linux (x86-64 and aarch64) depends on NVIDIA's CUDA libraries, more than 1.5 GB
to download, that a machine without an NVIDIA GPU cannot use. ``make lab`` runs this with the
course's virtual environment before it installs the course: where that environment lacks the pinned
torch, on Linux with no NVIDIA driver loaded and no ``nvidia-smi``, it installs the pinned version
from PyTorch's CPU index, torch alone (its dependencies come next, from PyPI at the course's pins).
Elsewhere, or with the pinned torch already there, it does nothing and prints nothing. If the CPU
index cannot be reached it stops with the command to run by hand, since carrying on would download
the CUDA build. A constraints file without a torch pin (the nightly run's ``make test PINS=...``)
means: leave torch alone.

COURSE_TORCH steers the choice: ``cpu`` installs the CPU build on any machine, ``pypi`` leaves torch
to PyPI (on Linux, the build with CUDA), unset or ``auto`` decides as above.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
NVIDIA_DRIVER = Path("/proc/driver/nvidia/version")  # present once the NVIDIA kernel driver is loaded


def pinned_torch(constraints: Path = CONSTRAINTS) -> str | None:
    """The torch version a constraints file pins, e.g. '2.13.0'; None where it pins none."""
    for line in constraints.read_text(encoding="utf-8").splitlines():
        if line.startswith("torch=="):
            return line.removeprefix("torch==").strip()
    return None


def installed_torch() -> str | None:
    """The version of torch in this interpreter's environment, without its local tag ('+cpu')."""
    try:
        return importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return None


def nvidia_gpu_visible() -> bool:
    return NVIDIA_DRIVER.exists() or shutil.which("nvidia-smi") is not None


def wants_cpu_build() -> bool:
    """True where PyPI would bring the CUDA build to a machine that cannot use it, or COURSE_TORCH=cpu."""
    choice = os.environ.get("COURSE_TORCH", "auto")
    if choice not in ("auto", "cpu", "pypi"):
        raise SystemExit(f"COURSE_TORCH={choice}: use cpu, pypi or auto")
    if choice != "auto":
        return choice == "cpu"
    linux = platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")
    return linux and not nvidia_gpu_visible()


def main(argv: list[str] | None = None) -> int:
    """Install the CPU build where it is wanted and missing; 0 when done or not needed, 1 if pip failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", dest="constraints", type=Path, default=CONSTRAINTS, help="the pins make uses")
    version = pinned_torch(parser.parse_args(argv).constraints)
    if not wants_cpu_build() or version is None or installed_torch() == version:
        return 0
    pip = [os.path.relpath(sys.executable), "-m", "pip"]  # this environment's pip, as a learner would type it
    # torch alone: make installs its dependencies next, at the course's pins
    command = [*pip, "install", f"torch=={version}", "--index-url", CPU_INDEX, "--no-deps"]
    why = "COURSE_TORCH=cpu" if os.environ.get("COURSE_TORCH") == "cpu" else "no NVIDIA GPU found"
    print(f"Installing the CPU build of torch {version} ({why}): {shlex.join(command)}", flush=True)
    status = subprocess.run(command).returncode
    if status != 0:
        print(
            f"Could not install torch from {CPU_INDEX} (pip exited with {status}). Where that address is"
            f" reachable, run:\n  {shlex.join(command)}\nthen make lab again; or, to take PyPI's build"
            " with its CUDA libraries (more than 1.5 GB), run: make lab COURSE_TORCH=pypi",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

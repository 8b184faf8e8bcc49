"""Re-resolve the tested versions and rewrite requirements/constraints.txt (``make pins``).

    python -m tools.refresh_pins

Creates a scratch virtual environment, installs the package with its test and docs extras and the
torch release the course targets, and writes every installed version as an exact pin. Then run
``make test``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "requirements" / "constraints.txt"
TORCH = "torch==2.13.0"
HEADER = """\
# The exact versions this course is tested with (Python 3.11, Linux x86-64, CPU).
# Installed with: pip install -c requirements/constraints.txt -e ".[test,docs]"
# Refresh: make pins (re-resolves in a scratch venv and rewrites this file).
"""


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        venv.create(scratch, with_pip=True)
        python = str(Path(scratch) / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "--quiet", TORCH, f"{ROOT}[test,docs]"], check=True)
        frozen = subprocess.run(
            [python, "-m", "pip", "freeze", "--exclude-editable"], check=True, capture_output=True, text=True
        ).stdout.splitlines()
    lines = []
    for line in frozen:
        name = line.split("==")[0].lower()
        if "==" not in line or name == "fp-determinism-course":
            continue
        lines.append("torch==" + line.split("==")[1].split("+")[0] if name == "torch" else line)
    TARGET.write_text(HEADER + "\n".join(sorted(lines, key=str.lower)) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} pins to {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

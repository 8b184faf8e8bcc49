"""A test run leaves nothing behind in the temp directory (tests/pytest_course.py cleans up)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_test_run_leaves_the_temp_directory_as_it_found_it(tmp_path):
    outer = tmp_path / "tmp"
    outer.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FP_COURSE_", "HYPOTHESIS_", "TORCHINDUCTOR_"))}
    env["TMPDIR"] = str(outer)
    # tmp_path, Hypothesis, torch._dynamo's Inductor cache and an ipykernel kernelspec install
    probe = tmp_path / "probe"
    probe.write_text(
        "import subprocess, sys, torch._dynamo\n"
        "from hypothesis import given, strategies as st\n\n"
        "@given(st.integers())\n"
        "def test_hypothesis(n):\n    assert isinstance(n, int)\n\n"
        "def test_tmp_path(tmp_path):\n    (tmp_path / 'f').write_text('x')\n\n"
        "def test_kernelspec(tmp_path):\n"
        "    subprocess.run([sys.executable, '-m', 'ipykernel', 'install', '--prefix', str(tmp_path),"
        " '--name', 'probe'], check=True, capture_output=True)\n",
        encoding="utf-8",
    )
    test_file = tmp_path / "test_probe.py"
    test_file.write_text(probe.read_text(encoding="utf-8"), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "tests.pytest_course",
         "-o", "addopts=-p no:cacheprovider", "--rootdir", str(tmp_path), str(test_file)],
        cwd=ROOT, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout, run.stdout
    assert sorted(p.name for p in outer.iterdir()) == []

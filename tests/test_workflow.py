"""The GitHub Actions workflow users copy is valid and runs the README's commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"


def schema_check(path: Path) -> subprocess.CompletedProcess:
    # check-jsonschema ships SchemaStore's github-workflows schema, so this needs no network.
    cmd = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_workflow_matches_githubs_schema():
    result = schema_check(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_schema_check_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("name: x\non: push\njobs:\n  a:\n    steps: []\n")  # a job needs runs-on
    assert schema_check(broken).returncode != 0


def run_steps(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_cpu_job_runs_make_test_and_gpu_job_runs_make_test_gpu():
    jobs = YAML(typ="safe").load(WORKFLOW.read_text())["jobs"]
    assert jobs["cpu"]["runs-on"] == "ubuntu-latest"
    assert "make test" in run_steps(jobs["cpu"]).splitlines()[-1]
    assert "self-hosted" in jobs["gpu"]["runs-on"] and "gpu" in jobs["gpu"]["runs-on"]
    assert run_steps(jobs["gpu"]).strip().endswith("make test-gpu")
    assert "HAS_GPU_RUNNER" in jobs["gpu"]["if"]  # never waits for a runner that does not exist

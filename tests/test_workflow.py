"""The GitHub Actions workflows users copy are valid and run the README's commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"
SITE_WORKFLOW = ROOT / ".github" / "workflows" / "site.yml"


def schema_check(path: Path) -> subprocess.CompletedProcess:
    # check-jsonschema ships SchemaStore's github-workflows schema, so this needs no network.
    cmd = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.mark.parametrize("workflow", [WORKFLOW, SITE_WORKFLOW], ids=lambda p: p.name)
def test_workflow_matches_githubs_schema(workflow):
    result = schema_check(workflow)
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


def test_site_workflow_builds_with_make_docs_and_publishes_the_site_folder():
    workflow = YAML(typ="safe").load(SITE_WORKFLOW.read_text())
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert workflow["permissions"] == {"contents": "read"}  # only the deploy job may publish
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert run_steps(build).strip().splitlines()[-1] == "make docs"
    step = next(s for s in build["steps"] if s.get("run") == "make docs")
    assert "github.repository" in step["env"]["COURSE_SITE_REPOSITORY"]  # the pages link to it
    upload = [s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload and upload[0]["with"]["path"] == "site"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])

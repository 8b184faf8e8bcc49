"""The GitHub Actions workflows are valid and run the course's own commands."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
# SchemaStore's schema for workflows, as check-jsonschema ships it (no network needed)
SCHEMA = json.loads((files("check_jsonschema.builtin_schemas.vendor") / "github-workflows.json").read_text())


def load(text: str) -> dict:
    return YAML(typ="safe").load(text)  # YAML 1.2: `on:` stays a key, as GitHub reads it


def schema_errors(workflow: dict) -> list[str]:
    return [error.message for error in jsonschema.Draft7Validator(SCHEMA).iter_errors(workflow)]


def run_steps(job: dict) -> list[str]:
    return [step["run"].strip() for step in job["steps"] if "run" in step]


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_workflow_matches_githubs_schema(path):
    assert schema_errors(load(path.read_text(encoding="utf-8"))) == []


def test_the_schema_rejects_a_broken_workflow():
    assert schema_errors(load("name: x\non: push\njobs:\n  a:\n    steps: []\n"))  # a job needs runs-on


def workflow_yml() -> dict:
    return load((WORKFLOWS / "tests.yml").read_text(encoding="utf-8"))


def test_the_tests_workflow_runs_the_ci_entry_point():
    jobs = workflow_yml()["jobs"]
    assert list(jobs) == ["cpu", "newest-python", "torch-nightly", "gpu"]
    assert jobs["cpu"]["runs-on"] == "ubuntu-latest" and "continue-on-error" not in jobs["cpu"]
    assert run_steps(jobs["cpu"])[-1] == "bash .ci/run"


def test_the_newest_python_and_torch_nightly_are_reported_and_allowed_to_fail():
    workflow = workflow_yml()
    newest, nightly = workflow["jobs"]["newest-python"], workflow["jobs"]["torch-nightly"]
    assert newest["continue-on-error"] is True and nightly["continue-on-error"] is True
    python = next(s["with"]["python-version"] for s in newest["steps"] if "setup-python" in s.get("uses", ""))
    assert python == "3.x"  # setup-python's newest stable release
    install = next(run for run in run_steps(nightly) if "--pre torch" in run)
    assert "download.pytorch.org/whl/nightly/cpu" in install
    assert "grep -v '^torch=='" in install            # the other pins stay, torch's goes
    assert run_steps(nightly)[-1] == 'make test PINS="-c $RUNNER_TEMP/constraints.txt"'
    assert "PINS   := -c requirements/constraints.txt" in (ROOT / "Makefile").read_text(encoding="utf-8")
    assert workflow["on"]["schedule"] and "schedule" in nightly["if"]  # weekly, not on every push


def test_the_gpu_job_takes_its_runner_from_a_variable_and_never_runs_a_forks_pull_request():
    gpu = workflow_yml()["jobs"]["gpu"]
    assert gpu["runs-on"] == "${{ vars.GPU_RUNNER }}"
    condition = " ".join(gpu["if"].split())
    assert "vars.GPU_RUNNER != ''" in condition
    assert ("github.event_name != 'pull_request' || "
            "github.event.pull_request.head.repo.full_name == github.repository") in condition
    assert any("tools/gpu_pass.sh run gpu-pass" in run for run in run_steps(gpu))
    upload = next(s for s in gpu["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and upload["with"]["path"] == "gpu-pass"


def test_the_gpu_runner_set_up_is_documented_where_the_workflow_points():
    workflow = (WORKFLOWS / "tests.yml").read_text(encoding="utf-8")
    assert '"Running it on GitHub Actions"' in workflow
    gpu_doc = (ROOT / "docs" / "gpu.md").read_text(encoding="utf-8")
    section = gpu_doc.split("\n## Running it on GitHub Actions\n", 1)[1].split("\n## ", 1)[0]
    for needed in ("`GPU_RUNNER`", "fork", "Tesla T4", "linux_4_core_gpu", "no TF32"):
        assert needed in section, needed


def test_site_workflow_builds_with_make_docs_and_publishes_the_site_folder():
    workflow = load((WORKFLOWS / "site.yml").read_text(encoding="utf-8"))
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert workflow["permissions"] == {"contents": "read"}  # only the deploy job may publish
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert run_steps(build)[-1] == "make docs"
    step = next(s for s in build["steps"] if s.get("run") == "make docs")
    assert "github.repository" in step["env"]["COURSE_SITE_REPOSITORY"]  # the pages link to it
    upload = [s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload and upload[0]["with"]["path"] == "site"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])

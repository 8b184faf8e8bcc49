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


def test_the_tests_workflow_runs_the_ci_entry_point():
    jobs = load((WORKFLOWS / "tests.yml").read_text(encoding="utf-8"))["jobs"]
    assert list(jobs) == ["cpu"] and jobs["cpu"]["runs-on"] == "ubuntu-latest"
    assert run_steps(jobs["cpu"])[-1] == "bash .ci/run"


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

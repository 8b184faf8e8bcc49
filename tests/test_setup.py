"""The set-up files agree: the pins, pyproject's ranges, environment.yml, the README's commands, CI
(and the test run keeps its files out of the working tree)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def name(req: Requirement) -> str:
    return req.name.lower().replace("_", "-")


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "requirements" / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{line}: constraints must be exact pins"
            found[name(req)] = spec.version
    return found


def declared() -> list[Requirement]:
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    assert set(extras) == {"test", "docs"}
    return [Requirement(r) for r in project["dependencies"] + extras["test"] + extras["docs"]]


def test_torch_is_pinned_to_the_tested_release():
    assert pins()["torch"] == "2.13.0"


def test_every_declared_dependency_is_pinned_within_its_lower_bound():
    pinned = pins()
    for req in declared():
        assert name(req) in pinned, f"{req.name} is declared but not pinned"
        assert req.specifier.contains(pinned[name(req)]), f"{req.name}=={pinned[name(req)]} violates {req}"
        assert all(s.operator == ">=" for s in req.specifier), f"{req}: a lower bound, not a pin or a cap"


def test_a_learner_gets_no_test_or_site_tools():
    base = {name(Requirement(r)) for r in PYPROJECT["project"]["dependencies"]}
    assert not base & {"pytest", "nbval", "sphinx", "myst-nb", "selenium", "ruff"}, base
    # make lab installs the package without extras; make test adds both
    lab = MAKEFILE.split("\n$(VENV)/.lab:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r" install .* -e \.$", lab, re.M), lab
    assert '-e ".[test,docs]"' in MAKEFILE


def test_environment_yml_installs_the_package_at_the_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert Version(python.split("=")[1]) >= Version(PYPROJECT["project"]["requires-python"].lstrip(">="))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-c requirements/constraints.txt" in pip and "-e ." in pip
    pinned = pins()
    for line in pip:
        if not line.startswith("-"):  # anything listed besides must agree with the constraints
            req = Requirement(line)
            assert all(pinned.get(name(req)) == s.version for s in req.specifier), line


def test_the_readme_names_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make lab" in readme and "make test" in readme
    targets = re.findall(r"^([a-z-]+):", MAKEFILE, re.M)
    assert {"lab", "test"} <= set(targets)


def test_the_test_target_keeps_each_notebook_on_one_worker():
    recipe = MAKEFILE.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "pytest" in recipe and "--dist loadscope" in recipe


def test_ci_lints_then_runs_the_readme_test_command():
    steps = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "make lint" in steps and "make test" in steps
    assert steps.index("make lint") < steps.index("make test")
    assert "ruff check" in MAKEFILE.split("\nlint:", 1)[1].split("\n\n", 1)[0]


def test_the_tests_keep_hypothesis_files_out_of_the_working_tree():
    from hypothesis.configuration import storage_directory

    home = storage_directory("constants", intent_to_write=False).path
    assert ROOT not in home.parents, home  # tests/pytest_course.py sets it before Hypothesis loads

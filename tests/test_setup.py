"""The set-up files agree with each other: pins, environment.yml, pyproject, Makefile, README, CI."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
ENV = yaml.safe_load((ROOT / "environment.yml").read_text())


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{line}: constraints must be exact pins"
            found[req.name.lower().replace("_", "-")] = spec.version
    return found


def name(req: Requirement) -> str:
    return req.name.lower().replace("_", "-")


def test_torch_is_pinned_to_the_tested_release():
    assert pins()["torch"] == "2.13.0"


def test_every_declared_dependency_is_pinned_within_its_range():
    declared = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    declared += [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"]["test"]]
    pinned = pins()
    for req in declared:
        assert name(req) in pinned, f"{req.name} is declared but not pinned"
        assert req.specifier.contains(pinned[name(req)]), f"{req.name}=={pinned[name(req)]} violates {req}"
        assert str(req.specifier).startswith(">="), (
            f"{req}: declare an honest lower bound, not a pin or a cap"
        )


def test_python_versions_agree():
    floor = PYPROJECT["project"]["requires-python"]
    assert floor == ">=3.11"  # numpy 2.4 and ipython 9, as pinned, need 3.11
    assert "Python 3.11 or 3.12" in README  # the versions tested (README, "Other versions")
    conda_python = next(d for d in ENV["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert Version(conda_python.split("=")[1]) >= Version("3.11")
    # make stops on an older Python with a message, before pip fails on the pins
    assert "sys.version_info >= (3, 11)" in (ROOT / "Makefile").read_text(encoding="utf-8")


def test_declared_ranges_are_the_tested_ones():
    """The Python and torch versions in the README's table of test runs span the declared ranges."""
    table = README[README.index("**Other versions.**"):]
    rows = re.findall(r"^\| (3\.\d+)\.\d+ \| (2\.\d+\.\d+)\S* .*?\| (.*?) \| 20\d\d-", table, flags=re.M)
    assert len(rows) >= 3, rows
    assert all("pass" in result for _, _, result in rows), rows
    pythons = {Version(py) for py, _, _ in rows}
    torches = {Version(t) for _, t, _ in rows}
    floor = Version(PYPROJECT["project"]["requires-python"].removeprefix(">="))
    assert min(pythons) == floor and max(pythons) >= Version("3.12"), pythons
    torch_floor = next(Requirement(r) for r in PYPROJECT["project"]["dependencies"] if r.startswith("torch"))
    (bound,) = torch_floor.specifier  # one lower bound, equal to the oldest torch tested
    assert bound.operator == ">=" and Version(bound.version) == min(torches), (torch_floor, torches)
    assert pins()["torch"] in {str(t) for t in torches}


def test_environment_yml_installs_the_same_pins_and_the_package():
    assert ENV["channels"] == ["conda-forge"]
    pip_section = next(d["pip"] for d in ENV["dependencies"] if isinstance(d, dict))
    assert "-c requirements/constraints.txt" in pip_section
    assert "-e .[test]" in pip_section
    pinned = pins()
    listed = [Requirement(line) for line in pip_section if not line.startswith("-")]
    assert {name(r) for r in listed} >= {"torch", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "nbval"}
    for req in listed:
        (spec,) = req.specifier
        assert spec.version == pinned[name(req)], (
            f"environment.yml says {req}, constraints say {pinned[name(req)]}"
        )


def test_readme_states_the_tested_versions():
    pinned = pins()
    for package in ("torch", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "nbval"):
        assert f"{package}=={pinned[package]}" in README, (
            f"README does not state {package}=={pinned[package]}"
        )


def test_readme_documents_every_make_target():
    targets = re.findall(r"^([a-z-]+):.*## ", MAKEFILE, re.M)
    assert {"lab", "test", "execute"} <= set(targets)
    for target in targets:
        assert f"make {target}" in README, f"README does not document `make {target}`"
    assert "make lab" in README and "make test" in README


def test_test_target_runs_in_parallel_by_scope():
    recipe = MAKEFILE.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "pytest" in recipe and "--dist loadscope" in recipe


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^\s*(exec\s+)?make test\b", ci, re.M)
    assert "make test" in README

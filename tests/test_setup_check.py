"""``helpers.setup_check()``: 0 problems here, a problem that names an old torch, no widget unless asked."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import helpers
from helpers import setup

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def displayed(monkeypatch):
    """What setup_check displays, recorded instead of shown, as if it ran in a Jupyter kernel."""
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    monkeypatch.setattr(setup, "_in_kernel", lambda: True)
    return shown


def test_setup_check_finds_no_problem_here_and_says_so(capsys):
    assert helpers.setup_check(show_widget=False) == []
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "set-up check: 0 problems"
    assert lines[0].startswith("Python ") and " · torch " in lines[0] and " · torchao " in lines[0]


def test_an_old_torch_is_a_problem_that_names_torch(monkeypatch, capsys):
    monkeypatch.setattr(setup.torch, "__version__", "2.10.1+cpu")
    problems = setup.setup_check(show_widget=False)
    assert len(problems) == 1 and problems[0].startswith("torch 2.10.1+cpu is older than the 2.11")
    assert "make lab" in problems[0]
    out = capsys.readouterr().out
    assert "set-up check: 1 problem\n- torch 2.10.1+cpu" in out


def test_a_package_that_does_not_import_is_a_problem(monkeypatch):
    real = setup.importlib.import_module

    def refuse_numpy(name, *args):
        if name == "numpy":
            raise ImportError("No module named 'numpy'")
        return real(name, *args)

    monkeypatch.setattr(setup.importlib, "import_module", refuse_numpy)
    (problem,) = setup.setup_check(show_widget=False)
    assert problem.startswith("numpy does not import (ImportError: No module named 'numpy')")


def test_without_show_widget_nothing_is_displayed(displayed):
    setup.setup_check(show_widget=False)
    assert displayed == []


def test_the_widget_is_a_green_box_or_a_line_saying_widgets_do_not_render(displayed):
    setup.setup_check(show_widget=True)
    (widget,) = displayed
    assert setup.WIDGET_TEXT in widget.value and "#d4edda" in widget.value
    bundle = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == setup.NO_WIDGET_TEXT  # what a front end without widgets shows


def test_outside_a_kernel_no_widget_is_displayed(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    setup.setup_check(show_widget=True)  # pytest is a plain Python process, not a kernel
    assert shown == []


def test_the_minimum_versions_are_pyprojects_lower_bounds():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    bounds = {}
    for line in project["dependencies"]:
        req = Requirement(line)
        for spec in req.specifier:
            if spec.operator == ">=":
                bounds[req.name] = spec.version
    assert {name: bounds[name] for name in setup.MINIMUM} == setup.MINIMUM
    assert project["requires-python"] == ">=" + ".".join(map(str, setup.PYTHON_MINIMUM))


@pytest.mark.parametrize(("version", "expected"), [("2.13.0+cpu", (2, 13)), ("2.11.0a0+git1234", (2, 11)),
                                                    ("0.18", (0, 18)), ("unknown", (0, 0))])
def test_version_tuple_reads_the_first_two_numbers(version, expected):
    assert setup._version_tuple(version) == expected

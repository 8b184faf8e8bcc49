"""`make colab-check` (tools/colab_check.py), guarded without building its environment: the versions
it installs are the ones docs/colab.md states, it runs the first cell the notebooks ship, its stand-in
google.colab is imported at a kernel's start, the widgets follow their controls, and the set-up check
says the right thing on Colab."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import ipywidgets
import nbformat
import pytest

from helpers import setup
from tools import colab_check, course

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "colab.md"
CLONE = Path("/tmp/clone")


def test_the_versions_installed_are_the_ones_the_doc_states():
    rows = dict(re.findall(r"^\| `?([\w-]+)`? \| ([\w.+]+) \|", DOC.read_text(encoding="utf-8"), re.M))
    assert {name: rows.get(name) for name in colab_check.COLAB} == colab_check.COLAB
    assert set(colab_check.KEPT) <= set(colab_check.COLAB)


def test_the_target_is_listed_but_not_part_of_make_test():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^colab-check: +## .+$", makefile, re.M)
    test_recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "colab" not in test_recipe
    assert "/.colab-venv/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_first_line_is_the_generators():
    assert colab_check.SETUP_FIRST_LINE == course.SETUP_FIRST_LINE


def first_cells():
    for path in colab_check.notebook_paths([]):
        yield path, colab_check.setup_cell(nbformat.read(path, as_version=4))


def test_every_notebook_the_check_runs_has_the_first_cell_it_looks_for():
    paths = colab_check.notebook_paths([])
    assert len(paths) == 15 + 14 + 2  # lessons, solutions, appendix
    assert [path.name for path, cell in first_cells() if cell is None] == []


def run_cell(source: str, on_colab: bool, monkeypatch) -> list[list[str]]:
    """Execute a first cell with subprocess.run recorded, not run; return the commands it ran."""
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda command, **kw: ran.append(command))
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE", raising=False)
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(source, "first cell", "exec"), {})
    return ran


def test_the_runner_changes_only_the_address_of_the_first_cell_the_notebooks_carry(monkeypatch):
    address, branch = colab_check.repository_setting()
    for path, cell in first_cells():
        local = colab_check.local_source(cell.source, CLONE)
        assert local == cell.source.replace(f"git+{address}@", f"git+file://{CLONE}@"), path.name
        (command,) = run_cell(local, True, monkeypatch)
        shipped = run_cell(cell.source, True, monkeypatch)[0]
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        assert command[:len(pip)] == shipped[:len(pip)] == pip
        assert command[len(pip)] == f"fp-determinism-course @ git+file://{CLONE}@{branch}"
        assert command[len(pip) + 1:] == shipped[len(pip) + 1:]  # the other packages as shipped
        assert run_cell(local, False, monkeypatch) == []  # elsewhere: nothing


def test_an_added_package_is_installed_by_the_same_command_once(monkeypatch):
    (_, cell), *_ = first_cells()
    local = colab_check.local_source(cell.source, CLONE, ("extra-package==1.0",))
    (command,) = run_cell(local, True, monkeypatch)
    assert command.count("extra-package==1.0") == 1
    assert any(arg.startswith("fp-determinism-course @ git+file://") for arg in command)
    assert '"torchao==' in cell.source  # the cell carries torchao already: --add does not repeat it
    torchao = next(arg for arg in command if arg.startswith("torchao=="))
    assert colab_check.local_source(cell.source, CLONE, (torchao,)).count(torchao) == 1


def test_a_first_cell_that_installs_from_elsewhere_is_refused():
    with pytest.raises(ValueError, match="does not install from"):
        colab_check.local_source("# nothing installed here\n", CLONE)


def test_the_stand_in_is_imported_when_a_kernel_starts(tmp_path):
    colab_check.write_stand_in(tmp_path / "site", tmp_path / "ipython")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "IPYTHONDIR": str(tmp_path / "ipython")}
    code = "import sys; print('google.colab' in sys.modules)"
    shell = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "-c", code], env=env,
                           capture_output=True, text=True, timeout=60)
    assert shell.stdout.strip().endswith("True"), shell.stderr
    plain = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert plain.stdout.strip() == "False"  # importable everywhere, imported only by the kernel's start-up


def test_the_comparison_ignores_what_nbval_ignores():
    patterns = colab_check.sanitizers()
    out = lambda text: {"output_type": "stream", "name": "stdout", "text": text}  # noqa: E731
    stored = colab_check.flattened([out("at 0x7f00aa11bb22\n"), out("done\n")], patterns)
    assert stored == {"stream stdout": ["at 0xADDRESS\ndone\n"]}
    here = colab_check.flattened([out("at 0x55aa99887766\ndone\n")], patterns)
    assert colab_check.first_difference(stored, here) is None
    image = {"output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": "<Figure>"}}
    other = {"output_type": "display_data", "data": {"image/png": "BBBB", "text/plain": "<Figure>"}}
    pictures = (colab_check.flattened([o], patterns) for o in (image, other))
    assert colab_check.first_difference(*pictures) is None  # nbval does not compare images
    changed = colab_check.flattened([out("at 0x55aa99887766\nfailed\n")], patterns)
    assert colab_check.first_difference(stored, changed) == "stream stdout: stored 'done', here 'failed'"


def test_the_widgets_follow_their_controls_here(monkeypatch):
    from helpers.lessons import checklist

    def run_twice(**settings):  # the real one trains a model twice: tests/test_checklist.py covers it
        return checklist.Outcome(checklist.all_settings(settings), True, None, 0.0)

    monkeypatch.setattr(checklist, "run_twice", run_twice)
    lines = colab_check.check_widgets()
    assert len(lines) == 4 and all(line.startswith("ipywidgets 8.") for line in lines)


@pytest.fixture
def on_colab(monkeypatch):
    """As on Colab: google.colab imported, and Colab's ipywidgets."""
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(ipywidgets, "__version__", "7.7.1")


def test_on_colab_its_ipywidgets_is_no_problem_and_the_line_says_where(on_colab, capsys):
    assert setup.hosted() == "Colab"
    assert setup.setup_check(show_widget=False) == []
    first = capsys.readouterr().out.splitlines()[0]
    assert " · ipywidgets 7.7.1 · " in first and first.endswith(" · on Colab, with its own packages")


def test_elsewhere_ipywidgets_7_is_still_a_problem(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE", raising=False)
    monkeypatch.setattr(ipywidgets, "__version__", "7.7.1")
    (problem,) = setup.setup_check(show_widget=False)
    assert problem.startswith("ipywidgets 7.7.1 is older than the 8.0") and "make lab" in problem


def test_on_colab_an_old_torchao_points_to_the_first_cell(on_colab, monkeypatch):
    real = setup.importlib.metadata.version
    old_torchao = lambda name: "0.10.0" if name == "torchao" else real(name)  # noqa: E731
    monkeypatch.setattr(setup.importlib.metadata, "version", old_torchao)
    (problem,) = setup.setup_check(show_widget=False)
    assert problem.startswith("torchao 0.10.0 is older than the 0.18") and "first code cell" in problem
    assert "make lab" not in problem


def test_on_kaggle_an_old_torch_points_to_make_lab_not_to_pypi(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setenv("KAGGLE_KERNEL_RUN_TYPE", "Interactive")
    monkeypatch.setattr(setup.torch, "__version__", "2.10.0+cu126")
    (problem,) = setup.setup_check(show_widget=False)
    assert problem.startswith("torch 2.10.0+cu126 is older than the 2.11") and "Kaggle ships" in problem
    assert "make lab" in problem and "%pip" not in problem  # PyPI's newest torch may not run there

"""Every committed notebook is clean, complete and in sync with the generated navigation.

The rules: names NN_snake_case.ipynb; a title, and (lessons) "What you will learn", "Summary",
"Exercises", (appendix notebooks) an italic summary line and no import from ``helpers``; every code
cell executed, in order, from a clean kernel; no stderr and no error output except in cells marked
to raise; no machine-specific metadata; navigation present and in sync; nothing after a cell
tagged ``gpu`` uses a name that only that cell defines.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tools import course

ROOT = course.ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))
NOTEBOOKS = [p for p in NOTEBOOKS if ".ipynb_checkpoints" not in p.parts]
NAME = re.compile(r"^\d\d_[a-z0-9]+(_[a-z0-9]+)*\.ipynb$")
MARKER = re.compile(r"^\s*#\s*NBVAL_(IGNORE_OUTPUT|SKIP|RAISES_EXCEPTION|CHECK_OUTPUT)\s*$", re.M)
ALLOWED_METADATA = {"kernelspec", "language_info", "widgets"}
ids = [p.relative_to(ROOT / "notebooks").as_posix() for p in NOTEBOOKS]
LESSONS = [p for p in NOTEBOOKS if p.parent == ROOT / "notebooks"]
lesson_ids = [p.name for p in LESSONS]
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
APPENDIX = sorted((ROOT / "notebooks" / "appendix").glob("*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def markers(cell: dict) -> set[str]:
    found = set(MARKER.findall(source(cell)))
    tags = {t.lower() for t in cell.get("metadata", {}).get("tags", [])}
    if tags & {"raises-exception", "nbval-raises-exception"}:
        found.add("RAISES_EXCEPTION")
    return found


def is_gpu(cell: dict) -> bool:
    return "gpu" in cell.get("metadata", {}).get("tags", [])


def test_there_are_lessons():
    assert len(NOTEBOOKS) >= 2 and NOTEBOOKS[0].name == "00_start_here.ipynb"


@pytest.mark.parametrize("path", LESSONS, ids=lesson_ids)
def test_name_and_structure(path):
    assert NAME.match(path.name), f"{path.name}: name should be NN_snake_case.ipynb"
    nb = load(path)
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown" and source(first).startswith("# "), (
        "first cell must be a '# ' title"
    )
    course.describe(path)  # title, summary and hardware lines are readable
    if path.name != course.INDEX:
        text = "\n".join(source(c).lower() for c in nb["cells"] if c["cell_type"] == "markdown")
        for heading in ("## what you will learn", "## summary", "## exercises", "## further reading"):
            assert heading in text, f"{path.name}: no '{heading}' section"
        assert "why your numbers may differ" in text, f"{path.name}: no 'Why your numbers may differ' note"


@pytest.mark.parametrize("path", APPENDIX, ids=[p.name for p in APPENDIX])
def test_appendix_notebook_structure(path):
    # outside the numbered sequence: a '# ' title and an italic summary, and code that stands alone
    cells = load(path)["cells"]
    first = source(cells[0])
    assert cells[0]["cell_type"] == "markdown" and first.startswith("# "), "first cell must be a '# ' title"
    assert course.SUMMARY.search(first), "the first cell needs an italic one-line summary"
    for i, cell in enumerate(c for c in cells if c["cell_type"] == "code"):
        names = {
            (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
            for node in ast.walk(ast.parse(source(cell)))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        assert "helpers" not in names, f"code cell {i} imports helpers: appendix code must stand alone"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_executed_in_order_from_a_clean_kernel(path):
    expected = 1
    for i, cell in enumerate(c for c in load(path)["cells"] if c["cell_type"] == "code"):
        count = cell.get("execution_count")
        if count is None:
            assert is_gpu(cell) or "SKIP" in markers(cell), f"code cell {i} was not executed"
            assert not cell["outputs"], f"code cell {i} has outputs but no execution count"
            continue
        assert count == expected, f"code cell {i}: execution_count {count}, expected {expected}"
        expected += 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_stderr_and_no_unexpected_errors(path):
    for i, cell in enumerate(c for c in load(path)["cells"] if c["cell_type"] == "code"):
        raises = "RAISES_EXCEPTION" in markers(cell)
        kinds = [(o["output_type"], o.get("name")) for o in cell.get("outputs", [])]
        assert ("stream", "stderr") not in kinds, f"code cell {i} wrote to stderr (a warning is a defect)"
        has_error = any(kind == "error" for kind, _ in kinds)
        assert has_error == raises, f"code cell {i}: " + (
            "marked to raise but no stored error" if raises else "stored error without NBVAL_RAISES_EXCEPTION"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_machine_specific_metadata(path):
    nb = load(path)
    assert set(nb["metadata"]) <= ALLOWED_METADATA, (
        f"unexpected metadata keys {set(nb['metadata']) - ALLOWED_METADATA}"
    )
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["metadata"].get("language_info", {}) == {"name": "python"}
    for cell in nb["cells"]:
        assert "execution" not in cell.get("metadata", {}), "cell timing metadata: re-run with make execute"
        assert "collapsed" not in cell.get("metadata", {}) and "scrolled" not in cell.get("metadata", {})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_temporary_files_are_removed(path):
    # tempfile.mkdtemp leaves a folder behind at every run; TemporaryDirectory removes its own
    for i, cell in enumerate(c for c in load(path)["cells"] if c["cell_type"] == "code"):
        assert "mkdtemp(" not in source(cell), f"code cell {i}: use tempfile.TemporaryDirectory"


@pytest.mark.parametrize("path", LESSONS, ids=lesson_ids)
def test_navigation_present(path):
    cells = load(path)["cells"]
    navs = [
        i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and source(c).startswith(course.NAV)
    ]
    assert len(navs) == 2 and navs[0] == 1 and navs[1] == len(cells) - 1, (
        "nav cells belong under the title and at the end"
    )


def test_generated_parts_are_in_sync():
    stale = [str(p.relative_to(ROOT)) for p in course.pending()]
    assert not stale, f"out of date, run `python -m tools.course write`: {stale}"


def _assigned(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def gpu_leaks(cells: list[dict]) -> list[str]:
    """Names that a later ordinary cell reads but only a ``gpu`` cell assigns."""
    everywhere: set[str] = set()
    gpu_only: set[str] = set()
    leaks = []
    for i, cell in enumerate(c for c in cells if c["cell_type"] == "code"):
        lines = source(cell).splitlines()
        text = "\n".join(x for x in lines if not x.lstrip().startswith(("%", "!")))  # drop magics
        tree = ast.parse(text)
        if is_gpu(cell):
            gpu_only |= _assigned(tree) - everywhere
            continue
        assigned = _assigned(tree)
        leaks += [f"code cell {i} uses {name!r}" for name in sorted(_loaded(tree) & (gpu_only - assigned))]
        everywhere |= assigned
        gpu_only -= assigned
    return leaks


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_cell_depends_on_a_gpu_only_cell(path):
    assert gpu_leaks(load(path)["cells"]) == []


def test_gpu_leak_check_catches_a_dependency():
    code = lambda src, tags=(): {"cell_type": "code", "source": src, "metadata": {"tags": list(tags)}}
    cells = [code("x = 1"), code("y = torch.ones(1).cuda()", ["gpu"]), code("print(x, y)")]
    assert gpu_leaks(cells) == ["code cell 2 uses 'y'"]
    cells[2] = code("y = 2\nprint(y)")
    assert gpu_leaks(cells) == []


def test_every_lesson_with_exercises_has_a_solution_notebook():
    from helpers.exercises import exercise_ids

    lessons_with_exercises = sorted({e.split(".")[0] for e in exercise_ids()})
    assert [p.name for p in SOLUTIONS] == [f"{n}_solutions.ipynb" for n in lessons_with_exercises]


@pytest.mark.parametrize("path", LESSONS, ids=[p.name for p in LESSONS])
def test_each_exercise_says_what_kind_of_work_it_asks_for(path):
    from helpers.exercises import KINDS, exercise_ids, kind_of

    cells = load(path)["cells"]  # an exercise may stand inline, before the cell that reveals its answer
    prompts = "\n".join(source(c) for c in cells if c["cell_type"] == "markdown")
    for exercise in [e for e in exercise_ids() if e.startswith(path.name[:2] + ".")]:
        number = int(exercise.split(".")[1])
        label = f"**{number}. {KINDS[kind_of(exercise)]}.**"
        assert label in prompts, f"{path.name}: exercise {exercise} is not introduced as {label}"
        runs = [c for c in cells if c["cell_type"] == "code" and f'check("{exercise}"' in source(c)]
        assert len(runs) == 1, f"{path.name}: exercise {exercise} needs one cell that checks it"


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_solution_notebook_answers_every_exercise_correctly(path):
    from helpers.exercises import exercise_ids

    number = path.name[:2]
    cells = load(path)["cells"]
    title = source(cells[0])
    lesson = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    assert title.startswith(f"# Solutions to lesson {number} · ") and f"(../{lesson.name})" in title
    code = [c for c in cells if c["cell_type"] == "code"]
    for exercise in [e for e in exercise_ids() if e.startswith(number + ".")]:
        solving = [c for c in code if f'check("{exercise}"' in source(c)]
        assert len(solving) == 1, f"{path.name}: no single cell solves {exercise}"
        # the stored verdict is compared when the notebook runs again, so a wrong answer fails
        text, tags = source(solving[0]), solving[0].get("metadata", {}).get("tags", [])
        assert "nbval-skip" not in tags, f"{path.name}: {exercise} is never run"
        if "nbval-ignore-output" in tags:  # a verdict that names machine-dependent numbers
            assert "assert verdict.ok" in text, f"{path.name}: {exercise} is neither compared nor asserted"
        else:  # the verdict shown is compared when the notebook runs again
            last_line = text.rstrip().splitlines()[-1]
            shown_last = last_line.startswith(f'check("{exercise}"')
            assert shown_last, f"{path.name}: {exercise}'s verdict is not shown"
        shown = "".join("".join(o.get("data", {}).get("text/plain", "")) for o in solving[0]["outputs"])
        assert f"Exercise {exercise}: Correct." in shown, f"{path.name}: the stored verdict of {exercise}"


@pytest.mark.parametrize("path", [p for p in LESSONS if p.name != course.INDEX], ids=lambda p: p.name[:2])
def test_every_lesson_from_01_shows_a_figure(path):
    figures = [
        o for c in load(path)["cells"] if c["cell_type"] == "code"
        for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert figures, f"{path.name} has no figure in its stored outputs"

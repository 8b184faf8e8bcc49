"""The generators in tools/: lesson descriptions, navigation, launch links and the set-up cell, tables, and
output refresh helpers."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import nbformat
import pytest

from tools import course, execute


def notebook(first_cell: str, *code: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(first_cell)] + [nbformat.v4.new_code_cell(c) for c in code]
    return nb


FIRST = "# 07 · A lesson\n\n*What it teaches.*\n\nWhy.\n\n**Hardware:** CPU only."


def test_describe_reads_title_summary_and_hardware(tmp_path):
    path = tmp_path / "07_a_lesson.ipynb"
    nbformat.write(notebook(FIRST), path)
    lesson = course.describe(path)
    assert (lesson.number, lesson.title, lesson.summary, lesson.hardware) == (
        "07",
        "A lesson",
        "What it teaches.",
        "CPU only.",
    )


@pytest.mark.parametrize(
    "first, message",
    [
        (FIRST.replace("**Hardware:** CPU only.", ""), "hardware"),
        (FIRST.replace("*What it teaches.*", ""), "summary"),
        (FIRST.replace("# 07 · A lesson", "# A lesson"), "title"),
        (FIRST.replace("# 07", "# 08"), "says lesson 08"),
    ],
)
def test_describe_names_what_is_missing(tmp_path, first, message):
    path = tmp_path / "07_a_lesson.ipynb"
    nbformat.write(notebook(first), path)
    with pytest.raises(ValueError, match=message):
        course.describe(path)


def lessons():
    return [course.Lesson(Path(f"{n}_x.ipynb"), n, f"T{n}", "s", "CPU only.") for n in ("00", "01", "02")]


def test_navigation_links_neighbours_and_index():
    first, middle, last = (course.nav_source(lessons(), i) for i in range(3))
    assert first == course.NAV + "\n[Index](00_start_here.ipynb) | [01 · T01 →](01_x.ipynb)"
    assert (
        middle
        == course.NAV + "\n[← 00 · T00](00_x.ipynb) | [Index](00_start_here.ipynb) | [02 · T02 →](02_x.ipynb)"
    )
    assert last.endswith("[Index](00_start_here.ipynb)")


SETTING = ("https://github.com/owner/name", "branch")
BLOB = "owner/name/blob/branch/notebooks"


def test_launch_line_opens_the_notebook_in_colab_and_kaggle():
    assert course.launch_line("solutions/03_s.ipynb", SETTING) == (
        f"[Open in Colab](https://colab.research.google.com/github/{BLOB}/solutions/03_s.ipynb) · "
        f"[Open in Kaggle](https://kaggle.com/kernels/welcome?src=https://github.com/{BLOB}/solutions/03_s.ipynb)"
    )


def test_the_repository_setting_is_read_from_pyproject_and_must_be_on_github(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "PYPROJECT", tmp_path / "pyproject.toml")
    setting = '[tool.course]\nrepository = "https://github.com/someone/fork/"\nbranch = "dev"\n'
    course.PYPROJECT.write_text(setting, encoding="utf-8")
    assert course.repository() == ("https://github.com/someone/fork", "dev")
    course.PYPROJECT.write_text(setting.replace("github.com", "gitlab.com"), encoding="utf-8")
    with pytest.raises(ValueError, match="must be https://github.com/<owner>/<name>"):
        course.repository()


def test_the_set_up_cell_wraps_a_long_address_at_110_columns(monkeypatch):
    short = course.setup_source(("https://github.com/o/n", "main")).splitlines()
    assert short[-2].endswith('"fp-determinism-course @ git+https://github.com/o/n@main",')
    assert short[-1].endswith(f'"{course._TORCHAO}"], check=True)')
    monkeypatch.setattr(course, "SETUP_PACKAGES", course.SETUP_PACKAGES[:1])  # the helpers alone, last
    long = course.setup_source(("https://github.com/" + "o" * 25 + "/n", "main")).splitlines()
    assert long[-1] == " " * 19 + "check=True)" and max(map(len, long)) <= 110
    for lines in (short, long):
        compile("\n".join(lines), "<set-up cell>", "exec")


def companion(path: Path) -> None:
    nb = notebook("# Recipes\n\n*What to do.*", "import torch", "x = 1", "gpu_only()")
    nb.cells.insert(2, nbformat.v4.new_markdown_cell("Words."))
    nb.cells[1].execution_count, nb.cells[3].execution_count = 1, 2  # the gpu cell was not run
    nbformat.write(nb, path)


def test_a_companion_gets_its_launch_line_and_a_set_up_cell_numbered_as_a_clean_run(tmp_path):
    path = tmp_path / "recipes.ipynb"
    companion(path)
    path.write_text(course.updated_companion(path, "appendix/recipes.ipynb", SETTING), encoding="utf-8")
    cells = course.read(path).cells
    assert cells[1].source == course.LAUNCH + "\n" + course.launch_line("appendix/recipes.ipynb", SETTING)
    assert course.is_setup(cells[2]) and cells[2].source == course.setup_source(SETTING)
    code = [(c.source, c.execution_count) for c in cells if c.cell_type == "code"]
    assert code[1:] == [("import torch", 2), ("x = 1", 3), ("gpu_only()", None)]
    assert code[0][1] == 1 and cells[2].outputs == []
    # writing again changes nothing; another repository changes the links and the cell, nothing else
    before = path.read_text(encoding="utf-8")
    assert course.updated_companion(path, "appendix/recipes.ipynb", SETTING) == before
    moved = course.updated_companion(path, "appendix/recipes.ipynb", ("https://github.com/x/y", "main"))
    assert moved != before and "owner/name" not in moved
    counts = [c.execution_count for c in nbformat.reads(moved, as_version=4).cells if c.cell_type == "code"]
    assert counts == [1, 2, 3, None]


def test_a_notebook_never_run_gets_a_set_up_cell_never_run(tmp_path):
    path = tmp_path / "recipes.ipynb"
    nbformat.write(notebook("# Recipes\n\n*What to do.*", "import torch"), path)
    text = course.updated_companion(path, "appendix/recipes.ipynb", SETTING)
    cells = nbformat.reads(text, as_version=4).cells
    assert course.is_setup(cells[2]) and [c.execution_count for c in cells[2:]] == [None, None]


def test_a_lessons_top_navigation_carries_the_launch_line_and_its_bottom_one_does_not(tmp_path):
    written = []
    for lesson in lessons():
        path = tmp_path / lesson.name
        nbformat.write(notebook(FIRST, "1 + 1"), path)  # no navigation yet: the pair is built
        written.append(course.Lesson(path, lesson.number, lesson.title, lesson.summary, lesson.hardware))
    text = course.updated_notebook(written, 1, SETTING)
    cells = nbformat.reads(text, as_version=4).cells
    nav = course.nav_source(written, 1)
    assert cells[1].source == nav + "\n\n" + course.launch_line("01_x.ipynb", SETTING)
    assert cells[-1].source == nav
    assert course.is_setup(cells[2]) and cells[3].source == "1 + 1"
    written[1].path.write_text(text, encoding="utf-8")
    assert course.updated_notebook(written, 1, SETTING) == text


def test_check_fails_when_the_links_name_another_repository(monkeypatch, capsys):
    monkeypatch.setattr(course, "repository", lambda: ("https://github.com/someone/fork", "main"))
    assert course.main(["course", "check"]) == 1  # nothing is written by check
    stale = capsys.readouterr().out
    for name in ("00_start_here.ipynb", "solutions/03_solutions.ipynb", "appendix/recipes.ipynb"):
        assert f"out of date: notebooks/{name}" in stale, name


def test_readme_table_shows_learning_and_run_times_or_says_not_measured(tmp_path):
    written = []
    for lesson in lessons():
        path = tmp_path / lesson.name
        nbformat.write(notebook(FIRST, "1 + 1"), path)
        written.append(course.Lesson(path, lesson.number, lesson.title, lesson.summary, lesson.hardware))
    table = course.readme_table(written, {"measured_on": "here", "seconds": {"01_x.ipynb": 4.46}})
    rows = table.splitlines()
    assert rows[0] == course.TABLE_START and rows[-1] == course.TABLE_END
    assert "| 5 min | 4 s |" in rows[4] and "| 5 min | not measured |" in rows[3]
    assert "Kernel run times: here." in table and f"{course.WORDS_PER_MINUTE} words a minute" in table


def test_learning_time_counts_words_cells_and_exercises_and_sets_optional_parts_apart(tmp_path):
    words = " ".join(["word"] * (course.WORDS_PER_MINUTE * 20))  # 20 minutes of reading
    nb = notebook(FIRST, *["x = 1"] * 9)  # 10 minutes of code cells (FIRST has one)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("## 7.1 Core\n\n" + words))
    nb.cells.append(nbformat.v4.new_markdown_cell("**1. Code.** Write it."))  # 12 minutes
    nb.cells.append(nbformat.v4.new_code_cell("assert x == 1", metadata={"jupyter": {"source_hidden": True}}))
    collapsed = "<details><summary>Sources</summary>\n\n" + words + "\n</details>"
    nb.cells.append(nbformat.v4.new_markdown_cell(collapsed))
    nb.cells.append(nbformat.v4.new_markdown_cell("## 7.2 (Optional) Deep\n\n" + words))
    nb.cells.append(nbformat.v4.new_markdown_cell("[a link](https://example.org/" + "x" * 50 + ")"))
    note = "> " + course.OPTIONAL_NOTE + " "
    nb.cells.append(nbformat.v4.new_markdown_cell("## 7.3 Core again\n\n" + note + words))
    nb.cells.append(nbformat.v4.new_markdown_cell("## 7.4 Core\n\n### (Optional) Deeper\n\n" + words))
    nb.cells.append(nbformat.v4.new_markdown_cell("### Core: the same level ends it\n\n" + words))
    path = tmp_path / "07_a_lesson.ipynb"
    nbformat.write(nb, path)
    time = course.learning_time(path)
    # the generated cells take no time: the launch line and the set-up cell
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(course.LAUNCH + "\n" + course.launch_line("x", SETTING)))
    nb.cells.insert(2, nbformat.v4.new_code_cell(course.setup_source(SETTING)))
    nbformat.write(nb, path)
    assert course.learning_time(path) == time
    assert time.core == 65  # 20 + 10 + 12 + 20 + a few heading words, rounded up to 5; <details> not read
    assert time.full == 125  # and three times 20 minutes of optional reading


def test_clear_and_strip_leave_nothing_machine_specific():
    nb = notebook(FIRST, "1 + 1")
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="x")]
    nb.cells[1].execution_count = 3
    nb.cells[1].metadata["execution"] = {"iopub.status.busy": "2026-01-01"}
    nb.metadata.update(colab={"x": 1}, language_info={"name": "python", "version": "3.11.7"})
    execute.clear_outputs(nb)
    execute.strip_metadata(nb)
    assert nb.cells[1].outputs == [] and nb.cells[1].execution_count is None
    assert "execution" not in nb.cells[1].metadata
    assert dict(nb.metadata) == {"kernelspec": execute.KERNELSPEC, "language_info": {"name": "python"}}


def test_widget_ids_become_stable():
    nb = notebook(FIRST)
    ids = ["a" * 32, "b" * 32]
    nb.metadata["widgets"] = {execute.WIDGET_STATE: {"state": {i: {} for i in ids}}}
    text = course.dumps(nb) + f'"IPY_MODEL_{ids[1]}"'
    once = execute.stable_widget_ids(text, nb, "07_a_lesson.ipynb")
    assert ids[0] not in once and ids[1] not in once
    assert once == execute.stable_widget_ids(text, nb, "07_a_lesson.ipynb")
    assert once != execute.stable_widget_ids(text, nb, "08_other.ipynb")


def test_importing_the_executor_hides_no_device(monkeypatch):
    # Only `make execute` itself hides CUDA from its kernels; importing the module must not.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    importlib.reload(execute)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"


def test_expect_errors_tags_only_cells_marked_to_raise():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("# NBVAL_RAISES_EXCEPTION\n1 / 0"),
        nbformat.v4.new_code_cell("x = 1  # NBVAL_RAISES_EXCEPTION is not on a line of its own"),
        nbformat.v4.new_markdown_cell("# NBVAL_RAISES_EXCEPTION"),
    ]
    tagged = execute.expect_errors(nb)
    assert tagged == [nb.cells[0]] and nb.cells[0].metadata["tags"] == ["raises-exception"]
    assert "tags" not in nb.cells[1].metadata and "tags" not in nb.cells[2].metadata


def test_work_copy_adds_what_is_missing_and_keeps_a_learners_changes(tmp_path):
    notebooks, work = tmp_path / "notebooks", tmp_path / "work"
    (notebooks / "solutions").mkdir(parents=True)
    (notebooks / ".ipynb_checkpoints").mkdir()
    for name in ("00_a.ipynb", "solutions/01_s.ipynb", ".ipynb_checkpoints/00_a-checkpoint.ipynb"):
        (notebooks / name).write_text("course", encoding="utf-8")
    copied = course.copy_work(work, notebooks)
    assert sorted(p.relative_to(work).as_posix() for p in copied) == ["00_a.ipynb", "solutions/01_s.ipynb"]
    (work / "00_a.ipynb").write_text("my answers", encoding="utf-8")
    (work / "solutions" / "01_s.ipynb").unlink()  # the learner wants this one afresh
    assert course.copy_work(work, notebooks) == [work / "solutions" / "01_s.ipynb"]
    assert (work / "00_a.ipynb").read_text(encoding="utf-8") == "my answers"


def test_work_folder_is_ignored_by_git():
    assert "/work/" in (course.ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_kernel_make_lab_registers_is_the_one_the_notebooks_store():
    # a notebook whose stored kernelspec differs from the running kernel's is marked modified on opening
    makefile = (course.ROOT / "Makefile").read_text(encoding="utf-8")
    install = next(line for line in makefile.splitlines() if "ipykernel install" in line)
    assert f"--name {execute.KERNELSPEC['name']}" in install
    assert "--display-name" not in install  # ipykernel's default, "Python 3 (ipykernel)", is the stored one
    assert execute.KERNELSPEC["display_name"] == "Python 3 (ipykernel)"

"""Generate what must stay in sync with the lessons: navigation cells, the lesson map in
00_start_here, the lesson table in README.md, and in every notebook (lessons, solutions, appendix)
a line of links that open it in Colab or Kaggle and a first code cell that sets it up there; and
the workshop kit: the timed plans and the instructor notes' minutes (tools/plans.py), the slides and
the handout (tools/workshop.py).

    python -m tools.course write   # rewrite whatever is out of date, list what changed
    python -m tools.course check   # exit 1 and list what is out of date
    python -m tools.course work    # copy into work/ (git-ignored) the notebooks it lacks: make lab

Each lesson's first markdown cell is the single source: its '# NN · Title' heading, an italic
one-line summary, and a '**Hardware:**' line. The links name the repository and branch set in
pyproject.toml ([tool.course]). Generated markdown cells are found by an HTML comment marker, the
set-up cell by its first line, so rerunning is safe.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"
PYPROJECT = ROOT / "pyproject.toml"
RUN_TIMES = ROOT / "tools" / "run_times.json"
INDEX = "00_start_here.ipynb"
NAV = "<!-- nav -->"
MAP = "<!-- lesson-map -->"
LAUNCH = "<!-- launch -->"  # marks the launch line of a solution or appendix notebook (a lesson's: nav-top)
TABLE_START, TABLE_END = "<!-- lessons:start -->", "<!-- lessons:end -->"
TITLE = re.compile(r"^# (\d\d) · (.+)$", re.M)
SUMMARY = re.compile(r"^\*([^*].*[^*])\*$", re.M)
HARDWARE = re.compile(r"^\*\*Hardware:\*\* (.+)$", re.M)
GITHUB = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+$")
SETUP_FIRST_LINE = (
    "# Colab or Kaggle only: install the course's helpers, keeping the platform's torch. Elsewhere: nothing."
)
# What the set-up cell installs on Colab and Kaggle, with --no-deps: the platform's torch, NumPy,
# matplotlib and ipywidgets stay as they are. {repository} and {branch} are the [tool.course] setting.
# torchao at the course's pin too: lesson 09 needs 0.18's Int8Tensor, and Colab's image has 0.10
# (docs/colab.md); without dependencies it leaves torch alone.
_TORCHAO = next(line for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
                if line.startswith("torchao=="))
SETUP_PACKAGES = ("fp-determinism-course @ git+{repository}@{branch}", _TORCHAO)


@dataclass(frozen=True)
class Lesson:
    path: Path
    number: str
    title: str
    summary: str
    hardware: str

    @property
    def name(self) -> str:
        return self.path.name


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def dumps(nb: nbformat.NotebookNode) -> str:
    """The one on-disk form of a notebook (every writer here uses it, so rewrites are stable)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def lesson_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))


def describe(path: Path) -> Lesson:
    """Read a lesson's title, summary and hardware line from its first cell."""
    nb = read(path)
    first = nb.cells[0].source if nb.cells and nb.cells[0].cell_type == "markdown" else ""
    found = {
        key: rx.search(first) for key, rx in (("title", TITLE), ("summary", SUMMARY), ("hardware", HARDWARE))
    }
    missing = [key for key, m in found.items() if m is None]
    if missing:
        raise ValueError(f"{path.name}: the first cell lacks its {', '.join(missing)} line(s)")
    number, title = found["title"].group(1), found["title"].group(2).strip()
    if not path.name.startswith(number + "_"):
        raise ValueError(f"{path.name}: the title says lesson {number}")
    return Lesson(path, number, title, found["summary"].group(1).strip(), found["hardware"].group(1).strip())


def repository() -> tuple[str, str]:
    """The course's repository on GitHub and its branch: the [tool.course] setting in pyproject.toml."""
    setting = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["course"]
    address, branch = setting["repository"].rstrip("/"), setting["branch"]
    if not GITHUB.match(address):
        raise ValueError(f"[tool.course] repository must be https://github.com/<owner>/<name>, not {address}")
    return address, branch


def colab_url(address: str, branch: str, path: str) -> str:
    """Colab's page for the notebook at ``path`` in the GitHub repository at ``address``."""
    return f"https://colab.research.google.com/github/{address.removeprefix('https://github.com/')}/blob/{branch}/{path}"


def kaggle_url(address: str, branch: str, path: str) -> str:
    """Kaggle's page that imports the notebook at ``path`` in the GitHub repository at ``address``."""
    return f"https://kaggle.com/kernels/welcome?src={address}/blob/{branch}/{path}"


def launch_line(name: str, setting: tuple[str, str]) -> str:
    """Links that open ``name`` (a path under notebooks/) in Colab and in Kaggle."""
    path = f"notebooks/{name}"
    return f"[Open in Colab]({colab_url(*setting, path)}) · [Open in Kaggle]({kaggle_url(*setting, path)})"


def setup_source(setting: tuple[str, str]) -> str:
    """The first code cell of every notebook: on Colab or Kaggle it installs the course's helpers."""
    address, branch = setting
    lines = [
        SETUP_FIRST_LINE,
        "import os, subprocess, sys",
        'if "google.colab" in sys.modules or "KAGGLE_KERNEL_RUN_TYPE" in os.environ:',
        '    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",',
    ]
    packages = [" " * 20 + f'"{p.format(repository=address, branch=branch)}"' for p in SETUP_PACKAGES]
    lines += [p + "," for p in packages[:-1]]
    if len(packages[-1] + "], check=True)") <= 110:  # the course's line length
        lines.append(packages[-1] + "], check=True)")
    else:
        lines += [packages[-1] + "],", " " * 19 + "check=True)"]
    return "\n".join(lines)


def is_setup(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(SETUP_FIRST_LINE)


def nav_source(lessons: list[Lesson], i: int) -> str:
    parts = []
    if i > 0:
        parts.append(f"[← {lessons[i - 1].number} · {lessons[i - 1].title}]({lessons[i - 1].name})")
    if lessons[i].name != INDEX:
        parts.append(f"[Index]({INDEX})")
    if i + 1 < len(lessons):
        parts.append(f"[{lessons[i + 1].number} · {lessons[i + 1].title} →]({lessons[i + 1].name})")
    return NAV + "\n" + " | ".join(parts)


def map_source(lessons: list[Lesson]) -> str:
    """The lessons as a short list of links, and what each teaches one click away."""
    links = [f"- {x.number} · [{x.title}]({x.name})" for x in lessons if x.name != INDEX]
    rows = [f"| {x.number} | [{x.title}]({x.name}) | {x.summary} | {x.hardware} |" for x in lessons]
    head = "| # | Lesson | What it teaches | Hardware |\n|---|---|---|---|"
    table = "<details><summary>What each lesson teaches, and the hardware it needs</summary>\n\n"
    table += head + "\n" + "\n".join(rows) + "\n\n</details>"
    return MAP + "\n" + "\n".join(links) + "\n\n" + table


def load_run_times() -> dict:
    if not RUN_TIMES.exists():
        return {"measured_on": "not measured yet", "seconds": {}}
    return json.loads(RUN_TIMES.read_text(encoding="utf-8"))


# Learning time is an estimate from each notebook's content, with the pace measured of a learner
# who knows PyTorch but not numerical analysis: prose read at WORDS_PER_MINUTE, each code cell read,
# run and its output looked at in MINUTES_PER_CELL, and each exercise by its kind (the bold
# "**N. Kind**" that opens it), rounded up to 5 minutes. Text inside <details> is not counted:
# it is one click away, for a reader who wants it.
WORDS_PER_MINUTE, MINUTES_PER_CELL = 110, 1.0
EXERCISE_MINUTES = {"recall": 2, "predict": 4, "decide": 5, "work it out": 6, "measure": 6, "code": 12}
EXERCISE = re.compile(r"\*\*\s*\d+\.\s*(Recall|Work it out|Predict|Code|Decide|Measure)\b", re.I)
DETAILS = re.compile(r"<details\b.*?</details>", re.S | re.I)
OPTIONAL_NOTE = "**Optional deep dive.**"
URL = re.compile(r"\]\([^)]*\)|https?://\S+")


@dataclass(frozen=True)
class LearningTime:
    core: int  # minutes without the sections marked optional
    full: int  # minutes with them


@dataclass(frozen=True)
class SectionTime:
    heading: str  # the '## ' heading without its hashes ("1.4 The same numbers..."); "" before the first
    core: float  # minutes at the learner's pace, without the optional parts
    full: float  # with them

    @property
    def number(self) -> str:
        """'1.4' for '1.4 The same numbers...', '' for an unnumbered section (Summary, Exercises)."""
        found = re.match(r"(\d+\.\d+)\b", self.heading)
        return found[1] if found else ""


def section_times(path: Path) -> list[SectionTime]:
    """Minutes per '## ' section of a notebook at the learner's pace, unrounded; they add up to
    ``learning_time``. What precedes the first '## ' heading counts in the first section.

    A part is optional from a heading that says "(Optional)", or from a cell with the note
    OPTIONAL_NOTE, up to the next heading of the same or a higher level.
    """
    sections: list[list] = []  # [heading, core, full]
    optional_level, level = 0, 1  # 0: not in an optional part; level: that of the last heading
    for cell in read(path).cells:
        text = cell.source
        if cell.cell_type == "markdown":
            if text.startswith((NAV, MAP, LAUNCH)):
                continue
            for heading in re.finditer(r"^(#+) (.*)$", text, flags=re.M):
                level = len(heading.group(1))
                if optional_level and level <= optional_level:
                    optional_level = 0
                if "(optional" in heading.group(2).lower():
                    optional_level = level
                if level == 2:
                    sections.append([heading.group(2).strip(), 0.0, 0.0])
            if OPTIONAL_NOTE in text and not optional_level:
                optional_level = level
            prose = URL.sub("", DETAILS.sub(" ", text))
            minutes = len(re.findall(r"[A-Za-z0-9]+", prose)) / WORDS_PER_MINUTE
            minutes += sum(EXERCISE_MINUTES[kind.lower()] for kind in EXERCISE.findall(text))
        elif is_setup(cell):  # it does nothing outside Colab and Kaggle, and there it only installs
            continue
        elif cell.cell_type == "code":  # a collapsed check is one click away: not read on a first pass
            minutes = 0 if cell.metadata.get("jupyter", {}).get("source_hidden") else MINUTES_PER_CELL
        else:
            continue
        if not sections:
            sections.append(["", 0.0, 0.0])
        sections[-1][2] += minutes
        if not optional_level:
            sections[-1][1] += minutes
    return [SectionTime(heading, core, full) for heading, core, full in sections]


def round_up(minutes: float) -> int:
    """Rounded up to 5 minutes, at least 5: a planning figure, not a measurement."""
    return max(5, 5 * -(-round(minutes) // 5))


def learning_time(path: Path) -> LearningTime:
    """Estimated minutes to work through a notebook, with and without its optional parts."""
    sections = section_times(path)
    return LearningTime(core=round_up(sum(s.core for s in sections)),
                        full=round_up(sum(s.full for s in sections)))


def readme_table(lessons: list[Lesson], run_times: dict) -> str:
    seconds = run_times.get("seconds", {})
    rows, total = [], LearningTime(0, 0)
    for lesson in lessons:
        t = seconds.get(lesson.name)
        shown = f"{t:.0f} s" if isinstance(t, (int, float)) else "not measured"
        time = learning_time(lesson.path)
        total = LearningTime(core=total.core + time.core, full=total.full + time.full)
        learn = f"{time.full} min"
        if time.core != time.full:
            learn += f" ({time.core} without optional parts)"
        rows.append(
            f"| {lesson.number} | [{lesson.title}](notebooks/{lesson.name}) | {lesson.summary} "
            f"| {learn} | {shown} |"
        )
    head = (
        "| # | Lesson | What it teaches | Learning time (estimate) | Kernel run time |\n"
        "|---|---|---|---|---|"
    )
    measured = run_times.get("measured_on", "not measured yet")
    note = (
        f"\nLearning time is an estimate from each notebook's content at the pace measured of a learner"
        f" new to numerical analysis: prose at {WORDS_PER_MINUTE} words a minute, {MINUTES_PER_CELL:g}"
        f" minute per code cell (collapsed notes and checks not counted), and each exercise by its kind"
        f" (recall 2, predict 4, decide 5, work it out or measure 6, code 12 minutes), rounded up to 5"
        f" minutes. The whole course: about {total.full / 60:.1f} hours ({total.core / 60:.1f} without"
        f" optional parts)."
        f" Kernel run times: {measured}."
    )
    return "\n".join([TABLE_START, head, *rows, note, TABLE_END])


def _set_marked_cell(nb, marker: str, source: str, position: int | None, cell_id: str) -> None:
    """Replace every cell that starts with ``marker``; insert one at ``position`` if there is none."""
    hits = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith(marker)]
    for cell in hits:
        cell.source = source
    if not hits and position is not None:
        cell = nbformat.v4.new_markdown_cell(source)
        cell.id = cell_id
        nb.cells.insert(position if position >= 0 else len(nb.cells), cell)


def _set_setup_cell(nb, source: str) -> None:
    """Give the set-up cell ``source``; insert it before the first code cell if there is none."""
    hits = [c for c in nb.cells if is_setup(c)]
    for cell in hits:
        cell.source = source
    if hits:
        return
    code = [c for c in nb.cells if c.cell_type == "code"]
    cell = nbformat.v4.new_code_cell(source)
    cell.id = "launch-setup"
    if any(c.execution_count is not None for c in code):  # numbered as a run from a clean kernel would be
        cell.execution_count = 1
        for c in code:
            if c.execution_count is not None:
                c.execution_count += 1
    nb.cells.insert(nb.cells.index(code[0]) if code else len(nb.cells), cell)


def updated_notebook(lessons: list[Lesson], i: int, setting: tuple[str, str]) -> str:
    nb = read(lessons[i].path)
    nav = nav_source(lessons, i)
    top = nav + "\n\n" + launch_line(lessons[i].name, setting)  # the launch line goes under the title only
    navs = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith(NAV)]
    if len(navs) < 2:  # a missing pair is (re)built: one under the title, one at the end
        nb.cells = [c for c in nb.cells if c not in navs]
        _set_marked_cell(nb, NAV, top, 1, "nav-top")
        last = nbformat.v4.new_markdown_cell(nav)
        last.id = "nav-bottom"
        nb.cells.append(last)
    else:
        navs[0].source = top
        for cell in navs[1:]:
            cell.source = nav
    if lessons[i].name == INDEX:
        if not any(c.cell_type == "markdown" and c.source.startswith(MAP) for c in nb.cells):
            raise ValueError(f"{INDEX} needs a markdown cell starting with {MAP} for the lesson map")
        _set_marked_cell(nb, MAP, map_source(lessons), None, "")
    _set_setup_cell(nb, setup_source(setting))
    return dumps(nb)


def updated_companion(path: Path, name: str, setting: tuple[str, str]) -> str:
    """A solution or appendix notebook (``name``: its path under notebooks/), with its launch line
    under the title and its set-up cell."""
    nb = read(path)
    _set_marked_cell(nb, LAUNCH, LAUNCH + "\n" + launch_line(name, setting), 1, "launch")
    _set_setup_cell(nb, setup_source(setting))
    return dumps(nb)


def companion_paths(folder: Path = NOTEBOOKS) -> list[Path]:
    """The solution and appendix notebooks."""
    return sorted((folder / "solutions").glob("*.ipynb")) + sorted((folder / "appendix").glob("*.ipynb"))


def updated_readme(lessons: list[Lesson]) -> str:
    text = README.read_text(encoding="utf-8")
    if TABLE_START not in text or TABLE_END not in text:
        raise ValueError(f"README.md needs the markers {TABLE_START} and {TABLE_END}")
    before, rest = text.split(TABLE_START, 1)
    after = rest.split(TABLE_END, 1)[1]
    return before + readme_table(lessons, load_run_times()) + after


def pending() -> dict[Path, str | bytes]:
    """Every generated file whose content would change, with its new content."""
    lessons = [describe(p) for p in lesson_paths()]
    if not lessons or lessons[0].name != INDEX:
        raise ValueError(f"the collection must start with {INDEX}")
    setting = repository()
    new = {lesson.path: updated_notebook(lessons, i, setting) for i, lesson in enumerate(lessons)}
    for path in companion_paths():
        new[path] = updated_companion(path, path.relative_to(NOTEBOOKS).as_posix(), setting)
    new[README] = updated_readme(lessons)
    changed = {path: text for path, text in new.items() if path.read_text(encoding="utf-8") != text}
    from tools import plans, workshop  # the workshop kit: timed from, and built from, the lessons

    return changed | plans.pending() | workshop.pending()


WORK = ROOT / "work"


def copy_work(work: Path = WORK, notebooks: Path = NOTEBOOKS) -> list[Path]:
    """Copy into ``work`` every notebook of ``notebooks`` that ``work`` lacks; return the copies.

    ``work/`` is git-ignored: a learner's answers, outputs and autosaves land there, never in the
    course's own notebooks. A notebook already in ``work`` is left as the learner left it; deleting
    it (or the whole folder) brings a fresh copy at the next ``make lab``.
    """
    copied = []
    for source in sorted(notebooks.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in source.parts:
            continue
        target = work / source.relative_to(notebooks)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied.append(target)
    return copied


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] == "work":
        copied = copy_work()
        print(f"work/: {len(copied)} notebooks copied, the others kept as you left them. "
              "To start a lesson afresh, delete its copy in work/ and run make lab again.")
        return 0
    if len(argv) != 2 or argv[1] not in ("write", "check"):
        print(__doc__)
        return 2
    changes = pending()
    for path, text in changes.items():
        rel = path.relative_to(ROOT)
        if argv[1] == "write" and isinstance(text, bytes):  # the handout's PDF
            path.write_bytes(text)
            print(f"updated {rel}")
        elif argv[1] == "write":
            path.write_text(text, encoding="utf-8")
            print(f"updated {rel}")
        else:
            print(f"out of date: {rel} (run: python -m tools.course write)")
    return 1 if changes and argv[1] == "check" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Build the course's website from the executed notebooks (``make docs``).

    python -m tools.build_docs [--out site]

The site is built with Sphinx, myst-nb and the Sphinx Book Theme (``tools/site/conf.py``): a
sidebar with every lesson, solution and appendix page in order, full-text search, previous and
next links, rendered math and a light and a dark mode. The builder stages a copy of
``notebooks/`` with a generated ``index.md`` (the lesson table from each lesson's first cell, and
the table of contents) in a temporary folder, and runs Sphinx on it. The staged lessons lose
their own previous/index/next lines: the sidebar and the footer's links replace them. The staged
notebooks also lose their Colab and Kaggle links and their set-up cell (``tools/course.py``): each
page's launch menu replaces them, and opens the notebook, both included, from the repository.

- Nothing is re-executed (``nb_execution_mode = "off"``): the pages show exactly the outputs stored
  in the notebooks, the committed CPU run. A notebook with a code cell that was never run (other
  than a cell tagged ``gpu``) stops the build.
- Saved widget state is embedded in the page, and the ipywidgets HTML manager renders it.
- Warnings are errors (``-W``): a link to a missing notebook or section stops the build, and so
  does any relative link or script in the finished pages that points at no file.
- The site works offline: MathJax, RequireJS and the widget manager are copied into ``_static``
  from their npm packages (fetched once with ``npm pack`` into ``.cache/docs-vendor``), instead
  of being loaded from CDNs.
- Sphinx writes into a temporary folder (myst-nb puts a ``jupyter_execute`` folder next to its
  output), and only the finished site is moved to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat

from tools.course import LAUNCH, NAV, ROOT, SUMMARY, describe, is_setup, lesson_paths, repository

CONF = ROOT / "tools" / "site"
VENDOR = ROOT / ".cache" / "docs-vendor"
# npm package -> (folder under _static, files to keep: prefixes inside the package, and endings
# to leave out among them)
PACKAGES = {
    # MathJax 2, not 3: the widget manager typesets widget labels through MathJax 2's API.
    "mathjax@2.7.7": (
        "mathjax",
        (
            "MathJax.js",
            "config/TeX-AMS_CHTML-full.js",
            "config/Safe.js",
            "extensions/",
            "jax/input/TeX/",
            "jax/output/CommonHTML/",
            "jax/element/",
            "fonts/HTML-CSS/TeX/woff/",
            "localization/en/",
        ),
        (".map",),
    ),
    "requirejs@2.3.8": ("requirejs", ("require.js",), ()),
    # the AMD bundle and the icon fonts in the formats browsers load (woff2, woff)
    "@jupyter-widgets/html-manager@1.0.15": (
        "widgets",
        ("dist/embed-amd.js", "dist/"),
        (".map", "dist/embed.js", "libembed-amd.js", ".eot", ".ttf", ".svg", ".txt"),
    ),
}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    "*On this page the widget above shows the state it was saved in, and its controls change "
    "nothing. Open the lesson in JupyterLab to use it.*"
)


def intro() -> str:
    # the repository the pages link to, as in conf.py: the site workflow's, or pyproject.toml's
    address = os.environ.get("COURSE_SITE_REPOSITORY") or repository()[0]
    return f"""\
# Same code, different numbers

*Why PyTorch gives different numbers on the CPU and the GPU, from run to run, and after moving a \
model between devices, and what to do about it.*

These pages show each lesson with the outputs it printed when the notebooks were last executed, \
on a CPU; cells that need a GPU were not run there. Your own numbers may differ in the last \
digits, and each lesson says why. To run a lesson yourself, open it in Colab or Kaggle from the \
launch menu (the rocket) at the top of its page, or clone [the course's repository]({address}) and \
follow its README: `make lab` sets it up and opens JupyterLab.
"""


def vendor() -> Path:
    """The offline copies of MathJax, RequireJS and the widget manager, fetched once with npm.

    A lock file keeps two builds (two test workers, say) from filling the folder at once.
    """
    import fcntl

    VENDOR.parent.mkdir(parents=True, exist_ok=True)
    with open(VENDOR.parent / "docs-vendor.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = VENDOR / ".complete"
        wanted = json.dumps(PACKAGES, indent=1)  # what was fetched, and what was kept of it
        if stamp.exists() and stamp.read_text() == wanted:
            return VENDOR
        if shutil.which("npm") is None:
            raise SystemExit("make docs needs npm once, to fetch MathJax, RequireJS and the widget manager")
        shutil.rmtree(VENDOR, ignore_errors=True)
        VENDOR.mkdir(parents=True)
        for spec, (folder, keep, leave_out) in PACKAGES.items():
            name, version = spec.rsplit("@", 1)
            subprocess.run(["npm", "pack", spec, "--silent"], cwd=VENDOR, check=True, capture_output=True)
            tarball = VENDOR / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
            target = VENDOR / folder
            with tarfile.open(tarball) as tar:
                for member in tar.getmembers():
                    inner = member.name.removeprefix("package/")
                    if member.isfile() and inner.startswith(keep) and not inner.endswith(leave_out):
                        member.name = inner
                        tar.extract(member, target, filter="data")
            tarball.unlink()
        stamp.write_text(wanted)
    return VENDOR


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("href", "src") and value:
                self.links.append(value)


def broken_links(site: Path) -> list[str]:
    """Relative links and sources in the site's pages that point at no file.

    Files under ``_static`` are the theme's assets (some are template fragments), not pages.
    """
    broken = []
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.relative_to(site).parts:
            continue
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", link) or link.startswith(("#", "//")):
                continue  # external (http:, data:, mailto:) or an anchor on the same page
            target = (page.parent / link.split("#")[0].split("?")[0]).resolve()
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {link}")
    return broken


def unexecuted(nb: nbformat.NotebookNode) -> list[int]:
    return [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and c.execution_count is None and "gpu" not in c.metadata.get("tags", [])
    ]


def appendix_paths(notebooks: Path = ROOT / "notebooks") -> list[Path]:
    return sorted((notebooks / "appendix").glob("*.ipynb"))


def describe_appendix(path: Path) -> tuple[str, str]:
    """An appendix notebook's title (its '# ' heading) and its italic one-line summary."""
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0].source if nb.cells and nb.cells[0].cell_type == "markdown" else ""
    title, summary = re.search(r"^# (.+)$", first, re.M), SUMMARY.search(first)
    if title is None or summary is None:
        raise SystemExit(f"{path.name}: its first cell needs a '# ' title and an italic one-line summary")
    return title.group(1).strip(), summary.group(1).strip()


def toctree(caption: str, docs: list[str]) -> str:
    options = [f":caption: {caption}", ":hidden:", ":titlesonly:"]
    return "\n".join(["```{toctree}", *options, "", *docs, "```", ""])


def index_source(lessons: list[Path], solutions: list[Path], appendix: list[Path]) -> str:
    """The home page: what the course is, a table of the lessons, and the sidebar's contents."""
    rows = ["| # | Lesson | What it teaches | |", "|---|---|---|---|"]
    for path in lessons:
        info = describe(path)
        solved = [s for s in solutions if s.stem.startswith(info.number + "_")]
        answers = f"[solutions](solutions/{solved[0].name})" if solved else ""
        rows.append(f"| {info.number} | [{info.title}]({path.name}) | {info.summary} | {answers} |")
    parts = [intro(), "## The lessons", "", "\n".join(rows), ""]
    if appendix:
        parts += ["## Appendix", ""]
        for path in appendix:
            title, summary = describe_appendix(path)
            parts.append(f"- [{title}](appendix/{path.name}): {summary}")
        parts.append("")
    parts.append(toctree("Lessons", [p.stem for p in lessons]))
    parts.append(toctree("Solutions", [f"solutions/{p.stem}" for p in solutions]))
    if appendix:
        parts.append(toctree("Appendix", [f"appendix/{p.stem}" for p in appendix]))
    return "\n".join(parts)


def with_widget_note(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The cell, followed by a note where it shows a widget (on a static page it cannot respond)."""
    shows_widget = any(WIDGET_VIEW in out.get("data", {}) for out in cell.get("outputs", []))
    return [cell, nbformat.v4.new_markdown_cell(WIDGET_NOTE)] if shows_widget else [cell]


def stage(source: Path, notebooks: Path) -> None:
    """Copy the notebooks the site shows into ``source``, with the generated home page."""
    lessons = lesson_paths(notebooks)
    solutions = lesson_paths(notebooks / "solutions")
    appendix = appendix_paths(notebooks)
    for path in lessons + solutions + appendix:
        nb = nbformat.read(path, as_version=4)
        missing = unexecuted(nb)
        if missing:
            raise SystemExit(f"{path.name}: code cells {missing} were never run; run `make execute` first")
        # the lessons' own previous/index/next lines: the site's sidebar and page footers replace them;
        # the launch links and the set-up cell: the page's launch menu replaces them
        nb.cells = [
            c for c in nb.cells
            if not (c.cell_type == "markdown" and c.source.startswith((NAV, LAUNCH))) and not is_setup(c)
        ]
        nb.cells = [cell for c in nb.cells for cell in with_widget_note(c)]
        for c in nb.cells:  # a check collapsed in JupyterLab is collapsed on the site too
            if c.cell_type == "code" and c.metadata.get("jupyter", {}).get("source_hidden"):
                c.metadata["tags"] = [*c.metadata.get("tags", []), "hide-input"]
        target = source / path.relative_to(notebooks)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
    (source / "index.md").write_text(index_source(lessons, solutions, appendix), encoding="utf-8")


def build(out: Path, notebooks: Path = ROOT / "notebooks") -> Path:
    """Build the site of ``notebooks`` into ``out`` (replacing it) and return it.

    Any Sphinx warning (a link to a missing notebook or section, among others) or a broken link in
    the finished pages stops the build with SystemExit, which says what is wrong.
    """
    vendored = vendor()
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="fp-course-site-") as scratch:
        source, doctrees, html = (Path(scratch) / name for name in ("source", "doctrees", "html"))
        stage(source, notebooks)
        command = [
            sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
            "-c", str(CONF), "-d", str(doctrees), str(source), str(html),
        ]  # fmt: skip
        env = {**os.environ, "COURSE_SITE_VENDOR": str(vendored), "TMPDIR": scratch}  # read by conf.py
        # from the root, where conf.py finds tools.site.course_site
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            report = f"{result.stdout}{result.stderr}".replace(scratch, "<staged>")
            raise SystemExit(f"the site did not build:\n{report}")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(html, out)
    # the download button offers the notebooks as they are, not the staged copies made for the site
    shown = [*lesson_paths(notebooks), *lesson_paths(notebooks / "solutions"), *appendix_paths(notebooks)]
    for path in shown:
        shutil.copyfile(path, out / "_sources" / path.relative_to(notebooks))
    shutil.rmtree(out / ".doctrees", ignore_errors=True)
    (out / ".buildinfo").unlink(missing_ok=True)
    broken = broken_links(out)
    if broken:
        raise SystemExit("broken links in the site:\n  " + "\n  ".join(broken))
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="output folder (default: site/)")
    args = parser.parse_args(argv[1:])
    start = time.perf_counter()
    site = build(args.out)
    pages = len([p for p in site.rglob("*.html") if "_static" not in p.parts])
    print(f"built {pages} pages in {site} in {time.perf_counter() - start:.0f} s; open {site / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

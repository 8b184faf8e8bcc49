"""Build the static HTML site of the course from the executed notebooks (``make docs``).

    python tools/build_docs.py [--out site]

Each lesson, solution and appendix notebook (``notebooks/appendix/``, whose pages go under
``appendix/`` and are listed below the lessons on the index page) is converted with nbconvert's
HTML exporter, from the outputs stored in it: nothing is re-executed, so the site shows exactly
the committed CPU run (a notebook with a code cell that was never run, other than a cell tagged
``gpu``, stops the build). Plots are embedded as images and widget state as JSON, which the
ipywidgets HTML manager turns back into live-looking widgets. Links between notebooks become
links between pages, and the build fails if any relative link or script points at a file that is
not in the site.

The site works offline: MathJax, RequireJS and the widget manager are copied into ``_static``
from their npm packages (fetched once with ``npm pack`` into ``.cache/docs-vendor``), instead of
being loaded from CDNs.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tarfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from course import SUMMARY, describe, lesson_paths  # noqa: E402

VENDOR = ROOT / ".cache" / "docs-vendor"
PACKAGES = {  # npm package -> (folder under _static, files to keep: prefixes inside the package)
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
    ),
    "requirejs@2.3.8": ("requirejs", ("require.js",)),
    "@jupyter-widgets/html-manager@1.0.15": ("widgets", ("dist/",)),
}
FAVICON = '<link rel="icon" href="data:,">'
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.5; }
td, th { padding: 0.3rem 0.6rem; vertical-align: top; text-align: left; }
tr:nth-child(even) { background: #f4f6f8; }
"""


def vendor() -> Path:
    """The offline copies of MathJax, RequireJS and the widget manager, fetched once with npm."""
    stamp = VENDOR / ".complete"
    if stamp.exists():
        return VENDOR
    if shutil.which("npm") is None:
        raise SystemExit("make docs needs npm once, to fetch MathJax, RequireJS and the widget manager")
    shutil.rmtree(VENDOR, ignore_errors=True)
    VENDOR.mkdir(parents=True)
    for spec, (folder, keep) in PACKAGES.items():
        name, version = spec.rsplit("@", 1)
        subprocess.run(["npm", "pack", spec, "--silent"], cwd=VENDOR, check=True, capture_output=True)
        tarball = VENDOR / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
        target = VENDOR / folder
        with tarfile.open(tarball) as tar:
            for member in tar.getmembers():
                inner = member.name.removeprefix("package/")
                if (
                    member.isfile()
                    and inner.startswith(keep)
                    and not inner.endswith((".map", "dist/embed.js"))
                ):
                    member.name = inner
                    tar.extract(member, target, filter="data")
        tarball.unlink()
    stamp.write_text("ok\n")
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
    """Relative links and sources in the site's pages that point at no file."""
    broken = []
    for page in sorted(site.rglob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        scripted = re.findall(r"widgetRendererSrc = '([^']+)'", page.read_text(encoding="utf-8"))
        for link in parser.links + scripted:
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


def convert(path: Path, out: Path, static: str) -> None:
    nb = nbformat.read(path, as_version=4)
    missing = unexecuted(nb)
    if missing:
        raise SystemExit(f"{path.name}: code cells {missing} were never run; run `make execute` first")
    from nbconvert import HTMLExporter  # imported here: the link check and its tests do not need it

    exporter = HTMLExporter(
        template_name="lab",
        mathjax_url=f"{static}/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
        require_js_url=f"{static}/requirejs/require.js",
        widget_renderer_url=f"{static}/widgets/dist/embed-amd.js",
    )
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    body = body.replace("<head>", f"<head>\n{FAVICON}", 1)  # no favicon request, no 404 in the console
    # links between notebooks become links between pages
    body = re.sub(r'href="([^":#]+)\.ipynb(#[^"]*)?"', lambda m: f'href="{m[1]}.html{m[2] or ""}"', body)
    out.write_text(body, encoding="utf-8")


def appendix_paths() -> list[Path]:
    return sorted((ROOT / "notebooks" / "appendix").glob("*.ipynb"))


def describe_appendix(path: Path) -> tuple[str, str]:
    """An appendix notebook's title (its '# ' heading) and its italic one-line summary."""
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0].source if nb.cells and nb.cells[0].cell_type == "markdown" else ""
    title, summary = re.search(r"^# (.+)$", first, re.M), SUMMARY.search(first)
    if title is None or summary is None:
        raise SystemExit(f"{path.name}: its first cell needs a '# ' title and an italic one-line summary")
    return title.group(1).strip(), summary.group(1).strip()


def index_page(lessons: list[Path], solutions: list[Path], appendix: list[Path] | None = None) -> str:
    rows = []
    for path in lessons:
        info = describe(path)
        solution = f"solutions/{info.number}_solutions.html"
        answers = (
            f'<a href="{solution}">solutions</a>'
            if any(s.stem.startswith(info.number) for s in solutions)
            else ""
        )
        rows.append(
            f'<tr><td>{info.number}</td><td><a href="{path.stem}.html">{html.escape(info.title)}</a></td>'
            f"<td>{html.escape(info.summary).replace('`', '')}</td><td>{answers}</td></tr>"
        )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{FAVICON}'
        "<title>Same code, different numbers: floating point, devices and determinism in PyTorch</title>"
        f"<style>{STYLE}</style></head><body>"
        "<h1>Same code, different numbers</h1>"
        "<p>Why PyTorch gives different numbers on the CPU and the GPU, from run to run, and after moving "
        "a model between devices, and what to do about it. These pages show the lessons as they ran on "
        "the course's reference CPU; to run them yourself, see the README.</p>"
        "<table><tr><th>#</th><th>Lesson</th><th>What it teaches</th><th></th></tr>"
        + "".join(rows)
        + "</table>"
        + appendix_section(appendix or [])
        + "</body></html>\n"
    )


def appendix_section(appendix: list[Path]) -> str:
    if not appendix:
        return ""
    items = []
    for path in appendix:
        title, summary = describe_appendix(path)
        items.append(
            f'<li><a href="appendix/{path.stem}.html">{html.escape(title)}</a>: '
            f"{html.escape(summary).replace('`', '')}</li>"
        )
    return "<h2>Appendix</h2><ul>" + "".join(items) + "</ul>"


def build(out: Path) -> Path:
    lessons = lesson_paths(ROOT / "notebooks")
    solutions = lesson_paths(ROOT / "notebooks" / "solutions")
    appendix = appendix_paths()
    shutil.rmtree(out, ignore_errors=True)
    (out / "solutions").mkdir(parents=True)
    shutil.copytree(vendor(), out / "_static", ignore=shutil.ignore_patterns(".complete"))
    for path in lessons:
        convert(path, out / f"{path.stem}.html", "_static")
    for path in solutions:
        convert(path, out / "solutions" / f"{path.stem}.html", "../_static")
    if appendix:
        (out / "appendix").mkdir()
    for path in appendix:
        convert(path, out / "appendix" / f"{path.stem}.html", "../_static")
    (out / "index.html").write_text(index_page(lessons, solutions, appendix), encoding="utf-8")
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
    site = build(args.out)
    pages = len(list(site.rglob("*.html")))
    print(f"built {pages} pages in {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

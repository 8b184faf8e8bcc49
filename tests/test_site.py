"""The site's builder (``tools/build_docs.py``): what it refuses to publish, and the launch menu
that opens each page's notebook in Colab or Kaggle.

The finished site itself is checked in a browser in ``tests/test_browser.py``. The tests that build
a site are marked slow (a build takes a while); the others are fast.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from tools import build_docs, course


def test_link_check_finds_broken_links_in_pages_but_not_in_theme_assets(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "a.html").write_text(
        '<a href="b.html#x">b</a> <a href="missing.html">m</a> <a href="https://x.org">x</a>'
    )
    (tmp_path / "b.html").write_text("<script src='sub/c.js?v=1'></script> <a href='#top'>top</a>")
    (tmp_path / "sub" / "page.html").write_text('<img src="../_static/plot.png">')
    # a template fragment the theme ships among its assets, not a page
    (tmp_path / "_static" / "macros.html").write_text("<link href=\"{{ pathto('x.css', 1) }}\">")
    assert build_docs.broken_links(tmp_path) == [
        "a.html -> missing.html",
        "b.html -> sub/c.js?v=1",
        "sub/page.html -> ../_static/plot.png",
    ]


def lesson(number: str, title: str, body: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    first = f"# {number} · {title}\n\n*What lesson {number} teaches.*\n\n**Hardware:** CPU only."
    # a stored output that running the cell would not print: the site must show what is stored
    code = nbformat.v4.new_code_cell("print(1 + 1)", execution_count=1)
    code.outputs = [nbformat.v4.new_output("stream", text="stored output, 2\n")]
    nav = "<!-- nav -->\n[Index](00_start_here.ipynb)"  # as tools/course.py writes it into each lesson
    nb.cells = [
        nbformat.v4.new_markdown_cell(first),
        nbformat.v4.new_markdown_cell(nav),
        nbformat.v4.new_markdown_cell(body),
        code,
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def small_course(folder: Path, link: str) -> Path:
    """Two lessons, a solution and an appendix page; lesson 01 links to ``link``."""
    (folder / "solutions").mkdir(parents=True)
    (folder / "appendix").mkdir()
    start = lesson("00", "Start here", "## Set-up check\n\nWords.\n\n## Glossary\n\nWords.")
    nbformat.write(start, folder / "00_start_here.ipynb")
    nbformat.write(lesson("01", "Sums", f"See [this]({link})."), folder / "01_sums.ipynb")
    solution = lesson("01", "Sums", "Answers.")
    solution.cells[0].source = "# Solutions to lesson 01 · Sums"
    nbformat.write(solution, folder / "solutions" / "01_solutions.ipynb")
    recipes = lesson("00", "Recipes", "Recipes.")
    recipes.cells[0].source = "# Recipes\n\n*What to do.*"
    nbformat.write(recipes, folder / "appendix" / "recipes.ipynb")
    return folder


needs_sphinx = pytest.mark.skipif(
    importlib.util.find_spec("myst_nb") is None
    or (not (build_docs.VENDOR / ".complete").exists() and shutil.which("npm") is None),
    reason="building the site needs Sphinx with myst-nb, and npm once for MathJax and the widget manager",
)


@pytest.mark.slow
@needs_sphinx
def test_a_small_site_builds_with_its_links_and_jupyterlab_section_anchors_without_nav_lines(tmp_path):
    # a JupyterLab anchor: spaces become hyphens, case stays (the build fails if it names no section)
    notebooks = small_course(tmp_path / "notebooks", "00_start_here.ipynb#Set-up-check")
    site = build_docs.build(tmp_path / "site", notebooks)
    page = (site / "01_sums.html").read_text(encoding="utf-8")
    anchor = re.search(r'href="00_start_here\.html#([\w-]+)"', page)
    assert anchor and anchor[1].lower() == "set-up-check", page[-3000:]
    start = (site / "00_start_here.html").read_text(encoding="utf-8")
    assert f'id="{anchor[1]}"' in start and 'id="Set-up-check"' in start
    for shown in ("solutions/01_solutions.html", "appendix/recipes.html"):
        assert (site / shown).is_file(), shown
    # the lesson's own navigation line gives way to the site's sidebar and footer links
    assert not re.search(r">(<span[^>]*>)?Index(</span>)?</a>", page)
    # nothing was executed: the page shows the stored output
    assert "stored output, 2" in page
    for name in ("index.html", "search.html", "searchindex.js", "_static/mathjax/MathJax.js"):
        assert (site / name).is_file(), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notebooks", "site"]  # nothing beside the site


@pytest.mark.slow
@needs_sphinx
@pytest.mark.parametrize("where", ["01_sums.ipynb", "solutions/01_solutions.ipynb", "appendix/recipes.ipynb"])
def test_a_notebook_that_was_never_run_stops_the_build(tmp_path, where):
    notebooks = small_course(tmp_path / "notebooks", "00_start_here.ipynb")
    nb = nbformat.read(notebooks / where, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))  # never run
    nb.cells.append(nbformat.v4.new_code_cell("gpu_only()", metadata={"tags": ["gpu"]}))  # may stay unrun
    nbformat.write(nb, notebooks / where)
    name = where.split("/")[-1]
    with pytest.raises(SystemExit, match=rf"{name}: code cells \[4\] were never run"):
        build_docs.build(tmp_path / "site", notebooks)


@pytest.mark.slow
@needs_sphinx
def test_a_widget_on_a_page_says_it_shows_its_saved_state(tmp_path):
    notebooks = small_course(tmp_path / "notebooks", "00_start_here.ipynb")
    nb = nbformat.read(notebooks / "01_sums.ipynb", as_version=4)
    view = {"version_major": 2, "version_minor": 0, "model_id": "abc"}
    nb.cells[-1].outputs = [
        nbformat.v4.new_output("display_data", data={build_docs.WIDGET_VIEW: view, "text/plain": "Box()"})
    ]
    nbformat.write(nb, notebooks / "01_sums.ipynb")
    page = (build_docs.build(tmp_path / "site", notebooks) / "01_sums.html").read_text(encoding="utf-8")
    assert page.count("Open the lesson in JupyterLab to use it.") == 1
    assert page.index(build_docs.WIDGET_VIEW) < page.index("Open the lesson in JupyterLab")  # under it
    # the download button offers the notebook as it is, without the site's note
    offered = tmp_path / "site" / "_sources" / "01_sums.ipynb"
    assert offered.read_bytes() == (notebooks / "01_sums.ipynb").read_bytes()
    assert "Open the lesson in JupyterLab" not in (tmp_path / "site" / "00_start_here.html").read_text()


@pytest.mark.slow
@needs_sphinx
@pytest.mark.parametrize(
    "link, complaint",
    [("02_missing.ipynb", "02_missing.ipynb"), ("00_start_here.ipynb#Nowhere", "Nowhere")],
)
def test_a_link_to_a_missing_notebook_or_section_stops_the_build(tmp_path, link, complaint):
    notebooks = small_course(tmp_path / "notebooks", link)
    with pytest.raises(SystemExit) as stopped:
        build_docs.build(tmp_path / "site", notebooks)
    message = str(stopped.value)
    assert "the site did not build" in message and complaint in message and "01_sums" in message


@pytest.mark.slow
@needs_sphinx
def test_the_pages_link_to_the_repository_and_launch_their_notebooks_from_it(tmp_path, monkeypatch):
    notebooks = small_course(tmp_path / "notebooks", "00_start_here.ipynb")
    address = "https://github.com/example/course"
    monkeypatch.setenv("COURSE_SITE_REPOSITORY", address)
    site = build_docs.build(tmp_path / "site", notebooks)
    home, lesson_page = (site / "index.html").read_text(), (site / "01_sums.html").read_text()
    assert re.search(rf'href="{address}"[^>]*>the course’s repository', home)  # the home page's text
    assert f'href="{address}"' in lesson_page  # the header's repository button
    _, branch = course.repository()
    for page in ("01_sums", "solutions/01_solutions", "appendix/recipes"):
        html = (site / f"{page}.html").read_text()
        blob = f"example/course/blob/{branch}/notebooks/{page}.ipynb"
        assert f'href="https://colab.research.google.com/github/{blob}"' in html, page
        assert f'href="https://kaggle.com/kernels/welcome?src=https://github.com/{blob}"' in html, page
    assert "kaggle.com" not in home  # the home page is no notebook: no launch menu
    # without the variable, the pages link to the repository that pyproject.toml names
    monkeypatch.delenv("COURSE_SITE_REPOSITORY")
    site = build_docs.build(tmp_path / "site", notebooks)
    assert address not in (site / "index.html").read_text()
    assert f'href="{course.repository()[0]}"' in (site / "index.html").read_text()


def site_conf(monkeypatch, repository: str | None = None):
    """tools/site/conf.py as Sphinx reads it, with or without COURSE_SITE_REPOSITORY."""
    monkeypatch.setenv("COURSE_SITE_VENDOR", "vendor")  # only named in a setting, not read
    if repository:
        monkeypatch.setenv("COURSE_SITE_REPOSITORY", repository)
    else:
        monkeypatch.delenv("COURSE_SITE_REPOSITORY", raising=False)
    spec = importlib.util.spec_from_file_location("site_conf", build_docs.CONF / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


class Config(dict):
    """A stand-in for Sphinx's configuration, which answers both config["name"] and config.name."""

    __getattr__ = dict.__getitem__


def launch_menu(conf, page: str) -> dict[str, str]:
    """The launch menu of a notebook's page: what the theme builds from conf.py, and what
    tools/site/course_site.py adds, as each does it for every page of a build (without the build)."""
    launch = pytest.importorskip("sphinx_book_theme.header_buttons.launch")
    from sphinx_book_theme.header_buttons import update_context_with_repository_info

    from tools.site import course_site

    app = SimpleNamespace(
        builder=None,
        config=Config(html_theme_options=conf.html_theme_options, html_context=dict(conf.html_context)),
        env=SimpleNamespace(
            doc2path=lambda name: f"/staged/{name}.ipynb",
            metadata=defaultdict(lambda: {"kernelspec": {"name": "python3"}}),
        ),
    )
    update_context_with_repository_info(app)  # at the start of a build
    context = {**app.config.html_context, "header_buttons": [], "pagename": page}
    context["sourcename"] = f"{page}.ipynb"
    launch.add_launch_buttons(app, page, "page.html", context, None)  # for each page, in this order
    course_site.add_kaggle_button(app, page, "page.html", context, None)
    menus = [b for b in context["header_buttons"] if b.get("label") == "launch-buttons"]
    assert len(menus) == 1
    return {button["text"]: button["url"] for button in menus[0]["buttons"]}


@pytest.mark.parametrize("page", ["05_seeds_and_generators", "solutions/05_solutions", "appendix/recipes"])
def test_a_notebooks_page_opens_that_notebook_in_colab_and_kaggle(monkeypatch, page):
    address, branch = course.repository()
    assert (course.NOTEBOOKS / f"{page}.ipynb").is_file()  # the page's notebook, under notebooks/
    blob = f"{address.removeprefix('https://github.com/')}/blob/{branch}/notebooks/{page}.ipynb"
    assert launch_menu(site_conf(monkeypatch), page) == {
        "Colab": f"https://colab.research.google.com/github/{blob}",
        "Kaggle": f"https://kaggle.com/kernels/welcome?src=https://github.com/{blob}",
    }


def test_a_forks_site_opens_the_forks_notebooks(monkeypatch):
    menu = launch_menu(site_conf(monkeypatch, "https://github.com/someone/fork"), "appendix/symptoms")
    assert "github/someone/fork/blob/" in menu["Colab"]
    assert "src=https://github.com/someone/fork/blob/" in menu["Kaggle"]


def test_the_kaggle_entry_joins_only_a_launch_menu_and_loads_nothing_from_elsewhere():
    from tools.site import course_site

    app = SimpleNamespace(config=SimpleNamespace(html_theme_options={}))
    context = {"header_buttons": [{"type": "group", "label": "download-buttons", "buttons": []}]}
    course_site.add_kaggle_button(app, "index", "page.html", context, None)  # the home page: no menu
    assert context["header_buttons"][0]["buttons"] == []
    options = {"repository_url": "https://github.com/o/n/", "repository_branch": "b", "path_to_docs": "nb/"}
    app = SimpleNamespace(config=SimpleNamespace(html_theme_options=options))
    context = {"header_buttons": [{"type": "group", "label": "launch-buttons", "buttons": []}]}
    course_site.add_kaggle_button(app, "appendix/recipes", "page.html", context, None)
    (button,) = context["header_buttons"][0]["buttons"]
    assert button["url"] == "https://kaggle.com/kernels/welcome?src=https://github.com/o/n/blob/b/nb/appendix/recipes.ipynb"
    assert button["icon"].startswith("fa")  # the theme's icon font, not an image from another site


def test_the_staged_notebooks_leave_their_navigation_launch_links_and_set_up_cell_to_the_site(tmp_path):
    notebooks = small_course(tmp_path / "notebooks", "00_start_here.ipynb")
    setting = ("https://github.com/example/course", "main")
    lessons = [course.describe(p) for p in course.lesson_paths(notebooks)]
    for i, lesson in enumerate(lessons[1:], start=1):  # this 00 has no lesson map to fill in
        lesson.path.write_text(course.updated_notebook(lessons, i, setting), encoding="utf-8")
    for path in course.companion_paths(notebooks):
        name = path.relative_to(notebooks).as_posix()
        path.write_text(course.updated_companion(path, name, setting), encoding="utf-8")
    build_docs.stage(tmp_path / "staged", notebooks)
    generated = lambda c: c.source.startswith((course.NAV, course.LAUNCH)) or course.is_setup(c)  # noqa: E731
    for name in ("01_sums.ipynb", "solutions/01_solutions.ipynb", "appendix/recipes.ipynb"):
        original = nbformat.read(notebooks / name, as_version=4).cells
        staged = nbformat.read(tmp_path / "staged" / name, as_version=4).cells
        assert "Open in Kaggle" in original[1].source and sum(map(course.is_setup, original)) == 1, name
        assert [c.source for c in staged] == [c.source for c in original if not generated(c)], name

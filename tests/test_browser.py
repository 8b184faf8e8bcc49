"""Real-browser tests: the built site, and JupyterLab running a lesson's widget.

They drive headless Chromium from the system's packages (Debian: ``apt-get install chromium
chromium-driver``) with Selenium; no browser is downloaded. Where Chromium or its driver is
missing, every test here is skipped with the reason, which pytest prints in its summary (``-rs``
is on in ``pyproject.toml``), so a skip is never silent. On failure, a screenshot is saved to a
temporary folder and its path is in the failure message.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MISSING_MODULES = [m for m in ("selenium", "jupyterlab") if importlib.util.find_spec(m) is None]
# kept after the run, unlike the run's own temp folder (tests/pytest_course.py)
SCREENSHOTS = Path(os.environ.get("FP_COURSE_KEEP_TMP", tempfile.gettempdir())) / "fp-course-screenshots"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None or DRIVER is None,
        reason="no headless Chromium here (apt-get install chromium chromium-driver): browser tests skipped",
    ),
    pytest.mark.skipif(
        bool(MISSING_MODULES),
        reason=f"browser tests need {', '.join(MISSING_MODULES)}: browser tests skipped",
    ),
]


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        # nothing outside this machine resolves: a page that fetches from a CDN gets a console error
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium and chromedriver leave profile folders (org.chromium.Chromium.*, scoped_dir*) in the
    # temp directory: give them their own, removed when the browser has quit.
    # In the usual temp dir, not in the test run's deeper one (tests/pytest_course.py): with the
    # longer path Chromium exited at start ("session not created") on this project's machines.
    with tempfile.TemporaryDirectory(
        prefix="fp-course-chromium-", dir=os.environ.get("FP_COURSE_KEEP_TMP"), ignore_cleanup_errors=True
    ) as scratch:
        options.add_argument(f"--user-data-dir={scratch}/profile")
        service = Service(DRIVER, env={**os.environ, "TMPDIR": scratch})
        driver = webdriver.Chrome(service=service, options=options)
        try:
            driver.set_page_load_timeout(60)
            yield driver
        finally:
            driver.quit()


def screenshot_on_failure(driver, name: str, check, describe=None):
    """Run ``check()``; on failure save a screenshot and add its path (and ``describe()``) to the error."""
    try:
        return check()
    except Exception as exc:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}-{int(time.time())}.png"
        driver.save_screenshot(str(path))
        details = f"\n{describe()}" if describe else ""
        raise AssertionError(f"{exc} (screenshot: {path}){details}") from exc


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built into a temp folder and served on localhost while the tests run."""
    import build_docs

    if importlib.util.find_spec("myst_nb") is None:
        pytest.skip("the site is built with Sphinx and myst-nb, which are not installed: site tests skipped")
    if not (build_docs.VENDOR / ".complete").exists() and shutil.which("npm") is None:
        pytest.skip(
            "the site's offline copies of MathJax and the widget manager need npm once: site tests skipped"
        )
    folder = build_docs.build(tmp_path_factory.mktemp("site") / "site")
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


def severe_console_entries(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_every_page_loads_offline_without_console_errors_and_shows_its_plots(browser, site):
    from selenium.webdriver.support.ui import WebDriverWait

    folder, base = site
    pages = sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*.html") if "_static" not in p.parts
    )
    assert "index.html" in pages and len(pages) >= 20
    browser.get_log("browser")  # start from an empty log
    shown = {}  # page -> (plots, formulas)
    for page in pages:
        browser.get(f"{base}/{page}")

        def loaded_cleanly(page=page):
            # every formula typeset by the site's own MathJax (a callback queued after the typesetting)
            WebDriverWait(browser, 60).until(lambda d: d.execute_script(MATHJAX_DONE), message="MathJax")
            formulas = browser.find_elements("css selector", "span.math, div.math")
            typeset = browser.find_elements("css selector", ".math .MathJax_CHTML")
            assert len(typeset) == len(formulas), f"{page}: {len(formulas) - len(typeset)} formulas untypeset"
            errors = severe_console_entries(browser)
            assert not errors, f"{page}: console errors: {errors}"
            # everything the page loaded came from the site itself: no CDN, no web font service
            loaded = browser.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"
            )
            assert all(url.startswith(base) for url in loaded), [u for u in loaded if not u.startswith(base)]
            images = browser.find_elements("css selector", ".cell_output img")
            for img in images:
                WebDriverWait(browser, 30).until(lambda d, img=img: d.execute_script(IMAGE_DECODED, img))
                assert img.is_displayed(), f"{page}: a plot is hidden"
            return len(images), len(formulas)

        shown[page] = screenshot_on_failure(browser, page.replace("/", "_"), loaded_cleanly)
    plots, formulas = shown["01_floating_point_non_associativity.html"]
    assert plots >= 3 and formulas > 10, f"lesson 01 shows {plots} plots and {formulas} formulas"


# True once the image has loaded and has a size (a plot that failed to load never gets one).
IMAGE_DECODED = "return arguments[0].complete && arguments[0].naturalWidth > 0;"

# True once MathJax has typeset the page (or where the page loads no MathJax): a callback queued
# now runs after the typesetting queued before it.
MATHJAX_DONE = """
if (!window.MathJax) return !document.querySelector('script[src*="MathJax.js"]');
if (!window.MathJax.Hub || !window.MathJax.Hub.Queue) return false;
if (window.courseMathJaxDone === undefined) {
  window.courseMathJaxDone = false;
  MathJax.Hub.Queue(function () { window.courseMathJaxDone = true; });
}
return window.courseMathJaxDone;
"""


def expected_contents() -> list[tuple[str, str]]:
    """(page, title) of every lesson, solution and appendix page, in the order the sidebar lists them."""
    import build_docs
    import course

    notebooks = ROOT / "notebooks"
    entries = []
    for folder, prefix in ((notebooks, ""), (notebooks / "solutions", "solutions/")):
        for path in course.lesson_paths(folder):
            entries.append((f"{prefix}{path.stem}.html", first_heading(path)))
    for path in build_docs.appendix_paths():
        entries.append((f"appendix/{path.stem}.html", first_heading(path)))
    return entries


def page_of(url: str, base: str) -> str:
    """A link's page relative to the site's root, without the anchor (the current page links to #)."""
    return url.removeprefix(f"{base}/").split("#")[0]


def first_heading(path: Path) -> str:
    import nbformat

    first = nbformat.read(path, as_version=4).cells[0].source
    return next(line[2:].strip() for line in first.splitlines() if line.startswith("# "))


def test_the_sidebar_lists_every_lesson_and_solution_in_order_with_previous_and_next(browser, site):
    _, base = site
    expected = expected_contents()
    assert len(expected) >= 27  # 14 lessons and 13 solutions at least
    for page in ("index.html", "solutions/05_solutions.html"):
        browser.get(f"{base}/{page}")
        links = browser.find_elements(
            "css selector", "nav.bd-docs-nav ul.bd-sidenav:not(.bd-sidenav__home-link) a"
        )
        listed = [
            (page_of(a.get_attribute("href"), base), a.get_attribute("textContent").strip()) for a in links
        ]
        assert listed == expected, page
    # the page after lesson 13 is the first solution; the theme's previous and next links follow the list
    for i in (1, 13):
        page, _ = expected[i]
        browser.get(f"{base}/{page}")
        previous = browser.find_element("css selector", ".prev-next-area a.left-prev").get_attribute("href")
        following = browser.find_element("css selector", ".prev-next-area a.right-next").get_attribute("href")
        assert previous == f"{base}/{expected[i - 1][0]}" and following == f"{base}/{expected[i + 1][0]}"


def test_search_finds_a_term_and_its_first_result_opens_the_lesson(browser, site):
    from selenium.webdriver.support.ui import WebDriverWait

    _, base = site
    browser.get(f"{base}/index.html")
    # the search page, as the search box's form sends a query to it
    box = browser.find_element("css selector", "form.bd-search input[name='q']")
    browser.execute_script("arguments[0].value = 'map_location'; arguments[0].form.submit();", box)

    def first_result(d):
        found = d.find_elements("css selector", "#search-results ul.search li a")
        return found[0] if found else False

    def search_and_open():
        link = WebDriverWait(browser, 30).until(first_result, message="the search found nothing")
        assert "search.html?q=map_location" in browser.current_url
        assert "07_checkpoints_across_devices.html" in link.get_attribute("href"), link.get_attribute("href")
        link.click()
        WebDriverWait(browser, 30).until(lambda d: "07_checkpoints_across_devices.html" in d.current_url)
        assert browser.find_element("css selector", "article h1").text.startswith("07 ·")
        assert "map_location" in browser.find_element("css selector", "article").text

    screenshot_on_failure(browser, "site-search", search_and_open)


def test_static_widget_state_renders_in_the_page(browser, site):
    from selenium.webdriver.support.ui import WebDriverWait

    _, base = site
    checks = {
        # lesson 10's tolerance playground: three sliders over the picture of what passes
        "10_validating_across_devices.html": lambda d: (
            len(d.find_elements("css selector", ".widget-slider")) >= 3
            and "correct float32 results pass" in d.page_source
            and d.find_elements("css selector", ".widget-html-content img[alt='tolerance band']")
        ),
        # lesson 05's reproducibility checklist: eight boxes, a button and the report of two runs
        "05_seeds_and_generators.html": lambda d: (
            len(d.find_elements("css selector", ".widget-checkbox input[type='checkbox']")) == 8
            and d.find_elements("css selector", "button.jupyter-button, button.widget-button")
            and any(
                "The two runs differ. First difference: the initial weights" in e.text
                for e in d.find_elements("css selector", ".widget-html-content")
            )
        ),
        # lesson 01's float explorer: a number and a format menu
        "01_floating_point_non_associativity.html": lambda d: d.find_elements(
            "css selector", ".widget-dropdown select"
        ),
    }
    for page, rendered in checks.items():
        browser.get(f"{base}/{page}")

        def widget_rendered(rendered=rendered, page=page):
            WebDriverWait(browser, 30).until(rendered, message=f"{page}: the widget did not render")

        screenshot_on_failure(browser, f"static-widget-{page}", widget_rendered)
        assert not severe_console_entries(browser), page
        note = "Open the lesson in JupyterLab to use it."
        assert note in browser.find_element("css selector", "article").text, page


class Lab(NamedTuple):
    url: str
    token: str
    log: Path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a free localhost port, serving a copy of the notebooks (the repository stays clean).

    The page exposes the application as ``window.jupyterapp``, so tests can ask it what it is doing
    (which widget is current, the kernel's status, whether a command is enabled) instead of guessing
    from what is drawn.
    """
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    config = tmp_path_factory.mktemp("lab-config")
    port, token = free_port(), "course-test-token"
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTERLAB_SETTINGS_DIR": str(config / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(config / "workspaces"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--ServerApp.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log_path = config / "lab.log"
    log = open(log_path, "w")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError(f"JupyterLab did not start: {log_path.read_text()[-2000:]}")
        yield Lab(url, token, log_path)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


# What the notebook at ``arguments[0]`` is doing, as JupyterLab itself knows it: "ready" once its
# kernel is idle and connected; after running, the result of Run All and the cells' state.
LAB_STATE = """
const app = window.jupyterapp;
if (!app) return 'the application is not exposed yet';
const path = arguments[0];
const panel = Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
if (!panel) return path + ' is not open';
const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
const cells = panel.content.widgets.filter(c => c.model.type === 'code');
const prompts = cells.map(c => (c.promptNode ? c.promptNode.textContent : '?').trim());
const errors = cells.flatMap(c => c.model.outputs.toJSON())
  .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue);
const dialogs = Array.from(document.querySelectorAll('.jp-Dialog')).map(d => d.innerText);
const state = {
  panel: panel.id,
  kernel: kernel ? kernel.status + ' / ' + kernel.connectionStatus : 'none',
  current: app.shell.currentWidget === panel,
  runAll: window.courseRunAll || 'not started',
  prompts: prompts.slice(0, 12).join(' '), errors, dialogs,
};
state.ready = !!kernel && kernel.status === 'idle' && kernel.connectionStatus === 'connected';
return JSON.stringify(state);
"""

# Run > Run All Cells, through JupyterLab's own command, addressed to one notebook by its widget id
# (so neither focus nor which tab is current matters); the outcome is kept in the page.
RUN_ALL = """
window.courseRunAll = 'running';
window.jupyterapp.commands.execute('notebook:run-all-cells', {widgetId: arguments[0]}).then(
  ok => { window.courseRunAll = ok ? 'every cell ran' : 'a cell failed'; },
  err => { window.courseRunAll = 'error: ' + err; });
"""


def lab_state(browser, path: str) -> dict:
    import json

    raw = browser.execute_script(LAB_STATE, path)
    return json.loads(raw) if raw.startswith("{") else {"ready": False, "app": raw}


def run_all_cells(browser, wait, path: str) -> None:
    """Once the kernel of the notebook at ``path`` is idle, run all its cells (not waiting for them).

    ``ran_all`` waits for the outcome; ``lab_diagnosis`` reports the state if a test fails.
    """
    from selenium.webdriver.common.by import By

    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell"))
    panel = wait.until(lambda d: (state := lab_state(d, path))["ready"] and state["panel"])
    browser.execute_script(RUN_ALL, panel)


def ran_all(browser, wait, path: str) -> dict:
    """Wait until Run All has finished in the notebook at ``path``; its state, which says how it ended."""
    return wait.until(lambda d: (state := lab_state(d, path))["runAll"] != "running" and state)


def run_every_cell(browser, wait, path: str) -> None:
    """Run all cells of the notebook at ``path`` and require that every one ran without an error."""
    run_all_cells(browser, wait, path)
    state = ran_all(browser, wait, path)
    assert state["runAll"] == "every cell ran", state


def lab_diagnosis(browser, lab, path: str) -> str:
    """The notebook's state and the server log's tail, for a failure message."""
    try:
        state = lab_state(browser, path)
    except Exception as exc:  # the page itself may be what broke
        state = f"unreadable ({exc})"
    return f"JupyterLab state: {state}\nlab.log (end):\n{lab.log.read_text()[-1500:]}"


def shows(driver, text: str) -> bool:
    """Whether a widget's HTML view in the notebook's outputs shows ``text``."""
    views = driver.find_elements("css selector", ".jp-OutputArea .widget-html-content")
    return any(text in view.text for view in views)


def test_jupyterlab_runs_lesson_01_and_its_widget_responds(browser, lab):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    url, token = lab.url, lab.token
    path = "notebooks/01_floating_point_non_associativity.ipynb"
    browser.get(f"{url}/lab/tree/{path}?token={token}")
    wait = WebDriverWait(browser, 300)  # Run All can take minutes while other tests load the machine

    def run_and_poke():
        # the whole lesson runs in JupyterLab without an error; the kernel answers the widget only
        # after that, as it handles messages in order
        run_every_cell(browser, wait, path)
        wait.until(lambda d: shows(d, "0.1 as float32"))
        number = wait.until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-OutputArea .widget-text input[type='number']")
        )[0]
        # Replace the value; Ctrl+A can race the widget's first render, so select with script and
        # check the field before pressing Enter.
        for _ in range(5):
            browser.execute_script("arguments[0].focus(); arguments[0].select();", number)
            number.send_keys("0.5")
            if number.get_attribute("value") == "0.5":
                break
            time.sleep(0.5)
        assert number.get_attribute("value") == "0.5", number.get_attribute("value")
        number.send_keys(Keys.ENTER)
        wait.until(lambda d: shows(d, "0.5 as float32"))

    screenshot_on_failure(
        browser, "jupyterlab-widget", run_and_poke, lambda: lab_diagnosis(browser, lab, path)
    )


WIDGETS_NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "imports", "metadata": {}, "outputs": [],
         "source": "from helpers.widgets import reproducibility_checklist, tolerance_playground"},
        {"cell_type": "code", "execution_count": None, "id": "playground", "metadata": {}, "outputs": [],
         "source": "tolerance_playground(log10_rtol=-5.0, log10_atol=-5.0, log2_k=10)"},
        {"cell_type": "code", "execution_count": None, "id": "checklist", "metadata": {}, "outputs": [],
         "source": "reproducibility_checklist()"},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_jupyterlab_runs_the_teaching_widgets_and_they_respond(browser, lab):
    """The tolerance playground and the reproducibility checklist, as lessons 10 and 05 build them."""
    import json

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    url, token = lab.url, lab.token
    with urllib.request.urlopen(  # a notebook of its own, written through the server's contents API
        urllib.request.Request(
            f"{url}/api/contents/notebooks/widgets_check.ipynb?token={token}",
            data=json.dumps({"type": "notebook", "format": "json", "content": WIDGETS_NOTEBOOK}).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
    ) as reply:
        assert reply.status in (200, 201)
    path = "notebooks/widgets_check.ipynb"
    browser.get(f"{url}/lab/tree/{path}?token={token}")
    wait = WebDriverWait(browser, 300)  # Run All can take minutes while other tests load the machine

    def run_and_poke():
        run_every_cell(browser, wait, path)
        # the playground: its text counts what passes; a looser rtol, typed into the slider's readout,
        # lets the 0.1% bug through
        wait.until(lambda d: "correct float32 results pass" in d.page_source)
        assert "catches 0 of 1024" not in browser.page_source
        readout = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-OutputArea .widget-readout"))[0]
        for _ in range(5):
            browser.execute_script("arguments[0].focus(); document.execCommand('selectAll');", readout)
            readout.send_keys("-1")
            if readout.text.strip() == "-1":
                break
            time.sleep(0.5)
        assert readout.text.strip() == "-1", readout.text
        readout.send_keys(Keys.ENTER)
        wait.until(lambda d: "catches 0 of 1024" in d.page_source)
        # the checklist: nothing ticked, the runs differ at the initial weights; tick the torch seed
        # and run twice: the first difference moves to the first batch
        wait.until(lambda d: "First difference: the initial weights" in d.page_source)
        box = wait.until(
            lambda d: d.find_elements(
                By.XPATH, "//div[contains(@class,'widget-checkbox')][.//span[text()='torch seed']]//input"
            )
        )[0]
        box.click()
        browser.find_element(By.XPATH, "//button[contains(., 'Run twice')]").click()
        wait.until(lambda d: "First difference: the batch of step 1" in d.page_source)

    screenshot_on_failure(
        browser, "jupyterlab-teaching-widgets", run_and_poke, lambda: lab_diagnosis(browser, lab, path)
    )

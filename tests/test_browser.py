"""Real-browser tests of the built site: pages, sidebar, search, and widgets rendered from saved state.

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
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest

from tools import build_docs, course

ROOT = course.ROOT
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
SCREENSHOTS = Path(tempfile.gettempdir()) / "fp-course-screenshots"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None or DRIVER is None,
        reason="no headless Chromium here (apt-get install chromium chromium-driver): browser tests skipped",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("selenium") is None,
        reason="browser tests need selenium (the docs extra): browser tests skipped",
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
    with tempfile.TemporaryDirectory(prefix="fp-course-chromium-", ignore_cleanup_errors=True) as scratch:
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


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built into a temp folder and served on localhost while the tests run."""
    if importlib.util.find_spec("myst_nb") is None:
        pytest.skip("the site is built with Sphinx and myst-nb, which are not installed: site tests skipped")
    if not (build_docs.VENDOR / ".complete").exists() and shutil.which("npm") is None:
        pytest.skip(
            "the site's offline copies of MathJax and the widget manager need npm once: site tests skipped"
        )
    folder = build_docs.build(tmp_path_factory.mktemp("site") / "site")
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # a free port
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

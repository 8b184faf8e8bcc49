"""``import helpers`` must stay cheap: no matplotlib or ipywidgets until a plot or widget is used."""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def test_import_helpers_does_not_load_plotting_or_widgets():
    lazy = ("matplotlib", "ipywidgets", "IPython")
    out = _run(f"import sys, helpers; print(sorted(m for m in {lazy!r} if m in sys.modules))")
    assert out.strip() == "[]"


def test_import_helpers_adds_little_to_import_torch():
    # Best of two, each in a fresh interpreter, so a busy machine does not fail the test.
    code = "import time, torch; t = time.perf_counter(); import helpers; print(time.perf_counter() - t)"
    best = min(float(_run(code)) for _ in range(2))
    assert best < 0.3, f"import helpers took {best:.3f} s after torch"

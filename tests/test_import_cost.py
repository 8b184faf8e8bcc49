"""``import helpers`` must stay cheap: no matplotlib or ipywidgets until a plot or widget is used."""

import subprocess
import sys


def test_import_helpers_does_not_load_plotting_or_widgets():
    lazy = ("matplotlib", "ipywidgets", "IPython")
    code = f"import sys, helpers; print(sorted(m for m in {lazy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"

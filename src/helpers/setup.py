"""``setup_check()``: one call that says whether this machine can run the course. Introduced in lesson 00."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import re
import sys

import torch

__all__ = ["HOSTED_MINIMUM", "MINIMUM", "hosted", "setup_check"]

# The oldest versions the course works with: pyproject.toml's lower bounds (tests/test_setup_check.py
# keeps the two equal). The tested versions are pinned in requirements/constraints.txt.
PYTHON_MINIMUM = (3, 11)
MINIMUM = {"torch": "2.11", "numpy": "1.24", "matplotlib": "3.7", "ipywidgets": "8.0", "torchao": "0.18"}

FIX = "run `make lab` from the repository root, which installs the tested versions"
# On Colab and Kaggle the lessons run with the platform's packages, not the pins; the notebook's first
# cell adds the helpers and torchao. ipywidgets 7.7, Colab's, works there (`make colab-check`).
HOSTED_MINIMUM = {**MINIMUM, "ipywidgets": "7.7"}
HOSTED_FIX = ("run this notebook's first code cell, which installs the course's helpers and torchao here, "
              "then run this cell again")
HOSTED_UPGRADE = ("{platform} ships an older one; upgrade it with `%pip install --upgrade {name}` and "
                  "restart the session, or run the course on your own machine with `make lab`")
# torch is the exception: PyPI's newest is built for a newer CUDA than the platform's driver may run,
# and without kernels for its older GPUs (the P100), so only the course's own set-up is advised.
HOSTED_OLD_TORCH = "{platform} ships an older one: run the course on your own machine with `make lab`"
WIDGET_TEXT = (
    "Widgets work here: if you read this in a green box, the lessons' sliders and checklists work too."
)
NO_WIDGET_TEXT = (
    "Widgets do not render in this front end (you see this line, not a green box), so the lessons' "
    "sliders and checklists will not either: open the lessons in JupyterLab with make lab."
)


def _version_tuple(version: str) -> tuple[int, int]:
    """``"2.13.0+cpu"`` -> ``(2, 13)``: the first two numbers, whatever follows them."""
    numbers = re.match(r"(\d+)\.(\d+)", version)
    return (int(numbers[1]), int(numbers[2])) if numbers else (0, 0)


def hosted() -> str | None:
    """``"Colab"`` or ``"Kaggle"`` where the notebook runs there (as its first cell tells), else None."""
    if "google.colab" in sys.modules:
        return "Colab"
    if "KAGGLE_KERNEL_RUN_TYPE" in os.environ:
        return "Kaggle"
    return None


def _too_old(name: str, version: str, where: str | None = None) -> str | None:
    """A problem when ``version`` is below the minimum; on Colab or Kaggle (``where``) the platform's
    minimum, and a fix that works there."""
    minimum = (HOSTED_MINIMUM if where else MINIMUM)[name]
    if _version_tuple(version) >= _version_tuple(minimum):
        return None
    if where is None:
        fix = FIX
    elif name == "torchao":  # the first cell installs it
        fix = HOSTED_FIX
    elif name == "torch":
        fix = HOSTED_OLD_TORCH.format(platform=where)
    else:
        fix = HOSTED_UPGRADE.format(platform=where, name=name)
    return f"{name} {version} is older than the {minimum} the course needs: {fix}"


def _widget():
    """A green box, as a widget; a front end that cannot render widgets shows ``NO_WIDGET_TEXT``."""
    import ipywidgets

    modern = hasattr(ipywidgets.HTML, "_repr_mimebundle_")  # ipywidgets 8; 7 (Colab's) displays itself

    class WidgetProbe(ipywidgets.HTML):
        def _repr_mimebundle_(self, **kwargs):
            if modern:
                data = super()._repr_mimebundle_(**kwargs)
            else:  # the bundle ipywidgets 7 builds in _ipython_display_
                view = {"version_major": 2, "version_minor": 0, "model_id": self.model_id}
                data = {"application/vnd.jupyter.widget-view+json": view}
            if data:  # the text a front end shows when it cannot draw the widget
                data["text/plain"] = NO_WIDGET_TEXT
            return data

        if not modern:
            def _ipython_display_(self, **kwargs):
                from IPython.display import display

                display(self._repr_mimebundle_(), raw=True)
                self._handle_displayed(**kwargs)

    style = "background:#d4edda;color:#155724;padding:4px 8px;border-radius:4px"
    return WidgetProbe(f'<div style="{style}">{WIDGET_TEXT}</div>')


def _in_kernel() -> bool:
    """True inside a Jupyter kernel, where a widget can be displayed; False in a plain Python."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


def setup_check(show_widget: bool = True) -> list[str]:
    """Check the Python version and the packages the lessons import; print and return the problems.

    Prints one line of what it found (each package's version), then ``set-up check: N problems``
    and, for each, what to do. With ``show_widget`` it also displays a small widget between the two
    lines: where the front end (JupyterLab, VS Code, Colab...) renders widgets, a green box appears;
    where it cannot, a line of text says so, and the lessons' widgets will not work there either.
    Outside a Jupyter kernel (a plain ``python``) there is nothing to display a widget in: only the
    two lines are printed.
    Introduced in lesson 00.
    """
    found: dict[str, str] = {"Python": platform.python_version()}
    problems: list[str] = []
    where = hosted()
    if sys.version_info < PYTHON_MINIMUM:
        problems.append(f"Python {found['Python']} is older than the 3.11 the course needs (3.11 and 3.12 "
                        "are tested): make lab PYTHON=python3.11")
    found["torch"] = torch.__version__
    for package in ("helpers", "numpy", "matplotlib", "ipywidgets"):
        try:
            found[package] = getattr(importlib.import_module(package), "__version__", "installed")
        except Exception as err:  # any failure to import is a problem to report
            problems.append(f"{package} does not import ({type(err).__name__}: {err}): {FIX}")
    try:
        from helpers.lessons.inference import load_int8_quantization

        load_int8_quantization()  # imports torchao without its GPU-kernel warnings (lesson 09)
        found["torchao"] = importlib.metadata.version("torchao")
    except Exception as err:  # torchao fails to import in several ways with a mismatched torch
        problems.append(f"torchao does not import ({type(err).__name__}: {err}): lesson 09's int8 part "
                        f"needs it; {HOSTED_FIX if where else FIX}")
    for name, version in found.items():
        problem = _too_old(name, version, where) if name in MINIMUM else None
        if problem:
            problems.append(problem)
    summary = " · ".join(f"{name} {version}" for name, version in found.items())
    print(summary + (f" · on {where}, with its own packages" if where else ""))
    if show_widget and "ipywidgets" in found and _in_kernel():
        from IPython.display import display

        display(_widget())
    count = f"{len(problems)} problem" + ("" if len(problems) == 1 else "s")
    print(f"set-up check: {count}" + "".join(f"\n- {p}" for p in problems))
    return problems

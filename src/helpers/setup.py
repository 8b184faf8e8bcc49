"""``setup_check()``: one call that says whether this machine can run the course. Introduced in lesson 00."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import re
import sys

import torch

__all__ = ["MINIMUM", "setup_check"]

# The oldest versions the course works with: pyproject.toml's lower bounds (tests/test_setup_check.py
# keeps the two equal). The tested versions are pinned in requirements/constraints.txt.
PYTHON_MINIMUM = (3, 11)
MINIMUM = {"torch": "2.11", "numpy": "1.24", "matplotlib": "3.7", "ipywidgets": "8.0", "torchao": "0.18"}

FIX = "run `make lab` from the repository root, which installs the tested versions"
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


def _too_old(name: str, version: str) -> str | None:
    if _version_tuple(version) < _version_tuple(MINIMUM[name]):
        return f"{name} {version} is older than the {MINIMUM[name]} the course needs: {FIX}"
    return None


def _widget():
    """A green box, as a widget; a front end that cannot render widgets shows ``NO_WIDGET_TEXT``."""
    import ipywidgets

    class WidgetProbe(ipywidgets.HTML):
        def _repr_mimebundle_(self, **kwargs):
            data = super()._repr_mimebundle_(**kwargs)
            if data:  # the text a front end shows when it cannot draw the widget
                data["text/plain"] = NO_WIDGET_TEXT
            return data

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
                        f"needs it; {FIX}")
    for name, version in found.items():
        problem = _too_old(name, version) if name in MINIMUM else None
        if problem:
            problems.append(problem)
    print(" · ".join(f"{name} {version}" for name, version in found.items()))
    if show_widget and "ipywidgets" in found and _in_kernel():
        from IPython.display import display

        display(_widget())
    count = f"{len(problems)} problem" + ("" if len(problems) == 1 else "s")
    print(f"set-up check: {count}" + "".join(f"\n- {p}" for p in problems))
    return problems

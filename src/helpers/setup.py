"""``setup_check()``: one call that says whether this machine can run the course; ``setup_line()``: the same
and what the machine is, as one line to paste before a workshop. Both introduced in lesson 00.

    python -m helpers.setup    # print that line (widgets are checked only in lesson 00)
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import re
import sys

import torch

__all__ = ["HOSTED_MINIMUM", "MARKER", "MINIMUM", "hosted", "make_setup_line", "setup_check", "setup_line"]

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
    """A green box, as a widget; a front end that cannot render widgets shows ``NO_WIDGET_TEXT``.

    Its ``drawn`` turns True when a front end reports a view of it: with ``_view_count`` set to 0, the
    widget manager of @jupyter-widgets/base (ipywidgets 7 and 8) adds 1 to the count once it has put a
    view on the page, and sends the count back to the kernel. A widget manager that cannot load the
    widget's class puts an error box there instead, and counts that too (JupyterLab 4.6 does so for an
    ipywidgets 7 kernel, which the check reports as a problem outside Colab and Kaggle).
    """
    import ipywidgets
    from traitlets import observe

    modern = hasattr(ipywidgets.HTML, "_repr_mimebundle_")  # ipywidgets 8; 7 (Colab's) displays itself

    class WidgetProbe(ipywidgets.HTML):
        drawn = False

        @observe("_view_count")
        def _count_views(self, change):
            if change["new"]:
                self.drawn = True

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
    return WidgetProbe(f'<div style="{style}">{WIDGET_TEXT}</div>', _view_count=0)


def _in_kernel() -> bool:
    """True inside a Jupyter kernel, where a widget can be displayed; False in a plain Python."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return getattr(get_ipython(), "kernel", None) is not None


_probe = None  # the widget setup_check displayed last in this kernel; setup_line says whether it was drawn


def _find() -> tuple[dict[str, str], list[str], str | None]:
    """What setup_check checks, without printing: the versions found, the problems, Colab or Kaggle."""
    found: dict[str, str] = {"Python": platform.python_version()}
    problems: list[str] = []
    where = hosted()
    if _version_tuple(found["Python"]) < PYTHON_MINIMUM:
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
    return found, problems, where


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
    global _probe
    found, problems, where = _find()
    summary = " · ".join(f"{name} {version}" for name, version in found.items())
    print(summary + (f" · on {where}, with its own packages" if where else ""))
    if show_widget and "ipywidgets" in found and _in_kernel():
        from IPython.display import display

        _probe = _widget()
        display(_probe)
    count = f"{len(problems)} problem" + ("" if len(problems) == 1 else "s")
    print(f"set-up check: {count}" + "".join(f"\n- {p}" for p in problems))
    return problems


# --- the line to paste before a workshop (tools/setup_tally.py reads it) ---------------------------

MARKER = "fp-course-setup v1"  # the format's name and version: a new field order or meaning is a new version
FIELDS = ("os", "arch", "python", "torch", "build", "cpu", "threads", "widgets", "gpu", "problems")
NOT_CHECKED_HERE = "not checked (run lesson 00)"


def _os_name() -> str:
    """``macOS 14.5``, ``Windows 11 (10.0.22631)``, ``Linux ubuntu 22.04``; then ``(WSL)``, ``(Colab)``..."""
    system = platform.system()
    if system == "Darwin":
        name = f"macOS {platform.mac_ver()[0]}"
    elif system == "Windows":
        name = f"Windows {platform.release()} ({platform.version()})"
    else:
        name = f"{system} {platform.release()}"
        if system == "Linux":
            try:
                release = platform.freedesktop_os_release()
                name = f"Linux {release.get('ID', '')} {release.get('VERSION_ID', '')}".rstrip()
            except OSError:  # no /etc/os-release: the kernel's release it is
                pass
            if "microsoft" in platform.release().lower():
                name += " (WSL)"
    where = hosted()
    return name + (f" ({where})" if where else "")


def _torch_build() -> str:
    """``CPU``, ``CUDA 12.8``, ``ROCm 6.4`` or ``CPU+MPS``: what this torch was built for."""
    if torch.version.hip:
        return "ROCm " + ".".join(str(n) for n in _version_tuple(torch.version.hip))
    if torch.version.cuda:
        return f"CUDA {torch.version.cuda}"
    return "CPU+MPS" if torch.backends.mps.is_built() else "CPU"


def _gpu() -> str:
    """The first GPU's name and compute capability (``2x`` before it for two), ``Apple MPS``, or ``none``."""
    try:
        if torch.cuda.is_available():
            count = torch.cuda.device_count()
            major, minor = torch.cuda.get_device_capability(0)
            several = f"{count}x " if count > 1 else ""
            return f"{several}{torch.cuda.get_device_name(0)} cc {major}.{minor}"
        if torch.backends.mps.is_available():
            return "Apple MPS"
    except Exception as err:  # a driver that half works is worth reporting, not a crash
        return f"error ({type(err).__name__})"
    return "none"


def _widgets_seen() -> str:
    """Whether the front end drew the set-up check's widget, as far as the kernel has heard."""
    if not _in_kernel():
        return NOT_CHECKED_HERE
    if _probe is None:
        return "not checked (run the set-up check first)"
    return "shown" if _probe.drawn else "not shown"


def _short(problem: str) -> str:
    """A problem in a few words, without its fix: ``torch too old (2.10.1 < 2.11)``."""
    old = re.match(r"(\S+) (\S+) is older than the (\S+) the course needs", problem)
    if old:
        return f"{old[1]} too old ({old[2]} < {old[3]})"
    broken = re.match(r"(\S+) does not import \((\w+)", problem)
    if broken:
        return f"{broken[1]} does not import ({broken[2]})"
    return problem.split(": ")[0][:60]


def _clean(value: object) -> str:
    """A field's value as the line needs it: ASCII, one line, no ``|`` (it separates the fields) and no
    ``"`` (so that a form's CSV export quotes the line as it is)."""
    text = " ".join(str(value).split()).replace("|", "/").replace('"', "'")
    return text.encode("ascii", "replace").decode("ascii")


def make_setup_line() -> str:
    """The line ``setup_line()`` prints: ``fp-course-setup v1 | os=... | ... | problems=N: ...``."""
    _, problems, _ = _find()
    count = str(len(problems)) + "".join(
        (": " if i == 0 else "; ") + _short(p).replace(";", ",") for i, p in enumerate(problems))
    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: "unknown")()
    values = (_os_name(), platform.machine(), platform.python_version(), torch.__version__, _torch_build(),
              capability, torch.get_num_threads(), _widgets_seen(), _gpu(), count)
    fields = [f"{key}={_clean(value)}" for key, value in zip(FIELDS, values, strict=True)]
    return " | ".join([MARKER, *fields])


def setup_line() -> None:
    """Print one line that says what this machine is and whether it is ready for the course, to paste
    where a workshop's instructor asks (``python -m tools.setup_tally`` counts the lines pasted).

    In lesson 00, run after the set-up check, it also says whether the front end drew that check's
    widget; ``python -m helpers.setup`` prints the same line from a terminal, without that.
    Introduced in lesson 00.
    """
    line = make_setup_line()
    if _probe is None or _probe.drawn or not _in_kernel():
        print(line)
        return
    # Not drawn yet, as far as the kernel knows: a front end's report is a message the kernel reads only
    # between cells, so after "Run All" it arrives when the last cell has run. Then the line is redrawn.
    from IPython.display import display

    handle = display({"text/plain": line}, raw=True, display_id=True)
    probe = _probe

    def redraw(change):
        if change["new"]:
            shown = line.replace("| widgets=not shown |", "| widgets=shown |")
            handle.update({"text/plain": shown}, raw=True)
            probe.unobserve(redraw, "_view_count")

    probe.observe(redraw, "_view_count")


if __name__ == "__main__":
    setup_line()

"""Run every notebook as Colab would, on this machine: Colab's versions, the notebooks' own first cell,
and no repository around each notebook. `make colab-check`; docs/colab.md explains it.

    python3 -m tools.colab_check                          # every lesson, solution and appendix notebook
    python3 -m tools.colab_check notebooks/09_*.ipynb     # some
    python3 -m tools.colab_check --widgets-only           # only the widget check
    python3 -m tools.colab_check --add "torchao==0.18.0"  # try the first cell with one more package
    python3 -m tools.colab_check --out colab-run          # also keep each notebook as it ran

Steps: (1) build .colab-venv/ with Python 3.13 and Colab's versions (reused while they are right);
(2) clone this checkout, working-tree changes included, to stand in for the GitHub repository;
(3) give the venv a stand-in ``google.colab`` package, which the kernel imports at start-up as
Colab's does; (4) for each notebook, copy it alone into a folder of its own, point its first cell
at the clone, uninstall the helpers, and execute it to the end with nbclient; check that the first
cell left Colab's versions alone; (5) print a table of notebooks, seconds and results, then the
stored outputs that differ from this run, compared as nbval does; (6) build each widget the
lessons build and change its controls as a front end would. Exit status 1 if anything failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
VENV = ROOT / ".colab-venv"
PYTHON313 = os.environ.get("PYTHON313", str(Path.home() / ".pyenv/versions/3.13.0/bin/python"))

# Colab's image in late 2026 (googlecolab/backend-info, pip-freeze.gpu.txt), installed exactly.
# pytest is there for the appendix's recipes, torchao for lesson 09 and the set-up check.
COLAB = {
    "torch": "2.11.0",
    "numpy": "2.1.3",
    "matplotlib": "3.10.0",
    "ipywidgets": "7.7.1",
    "ipykernel": "6.17.1",
    "ipython": "7.34.0",
    "torchao": "0.10.0",
    "pytest": "8.4.2",
}
# What the first cell must leave as the platform has them.
KEPT = ("torch", "numpy", "matplotlib", "ipywidgets", "ipykernel", "ipython")
# Only to execute the notebooks (the course's pins of them).
RUNNER = {"nbclient": "0.11.0", "nbformat": "5.11.1"}
# Where this machine cannot have exactly what Colab has, and why.
NOT_EXACT = {
    "Python": "Colab has 3.13.15; here the newest 3.13 installed, 3.13.0 unless PYTHON313 says otherwise",
    "torch": "Colab has the 2.11.0+cu128 build from download.pytorch.org; here PyPI's 2.11.0, built for "
    "CUDA 13.0 (download.pytorch.org is out of reach); both run these notebooks on the CPU",
}

SETUP_FIRST_LINE = (
    "# Colab or Kaggle only: install the course's helpers, keeping the platform's torch. Elsewhere: nothing."
)
PACKAGE = "fp-determinism-course"
STAND_IN = '"""A stand-in for Colab\'s google.colab (tools/colab_check.py): only its presence matters."""\n'
STARTUP = "import google.colab  # Colab's kernel imports it at start-up; the first cell looks for it\n"
GPU_TAG = "gpu"
RAISES = re.compile(r"^\s*#\s*NBVAL_RAISES_EXCEPTION\s*$", re.M)


# --- the environment ------------------------------------------------------------------------------

def venv_python() -> Path:
    return VENV / "bin" / "python"


def versions(python: Path, names) -> dict[str, str | None]:
    """The installed version of each distribution in ``python``'s environment (None where absent)."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "def v(n):\n"
        "    try:\n        return m.version(n)\n"
        "    except m.PackageNotFoundError:\n        return None\n"
        "print(json.dumps({n: v(n) for n in sys.argv[1:]}))"
    )
    out = subprocess.run([str(python), "-c", code, *names], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def build_venv() -> None:
    """Create .colab-venv with Python 3.13 and install Colab's versions, unless they are there already."""
    wanted = {**COLAB, **RUNNER}
    if not venv_python().exists():
        subprocess.run([PYTHON313, "-m", "venv", str(VENV)], check=True)
    uninstall_helpers(venv_python())  # each notebook's first cell installs them
    if versions(venv_python(), wanted) == wanted:
        print(f"{VENV.name}: reused, its versions are Colab's")
    else:
        print(f"{VENV.name}: installing Colab's versions (torch is a large download, once)", flush=True)
        restore(venv_python(), wanted)
    python = subprocess.run([str(venv_python()), "-c", "import platform; print(platform.python_version())"],
                            check=True, capture_output=True, text=True).stdout.strip()
    if not python.startswith("3.13."):
        sys.exit(f"{VENV.name} has Python {python}, not 3.13: remove it and set PYTHON313")
    print(f"Python {python}; " + ", ".join(f"{n} {v}" for n, v in wanted.items()))
    for name, why in NOT_EXACT.items():
        print(f"  not exactly Colab's: {name}: {why}")


def restore(python: Path, wanted: dict[str, str]) -> None:
    """Install ``wanted``'s versions where ``python``'s environment has others."""
    changed = [f"{n}=={wanted[n]}" for n, v in versions(python, wanted).items() if v != wanted[n]]
    if changed:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *changed], check=True)
    got = versions(python, wanted)
    if got != wanted:
        sys.exit(f"{python} has {got}, not {wanted}")


def uninstall_helpers(python: Path) -> None:
    subprocess.run([str(python), "-m", "pip", "uninstall", "--quiet", "--yes", PACKAGE],
                   check=True, capture_output=True)


def site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def write_stand_in(site: Path, ipython_dir: Path) -> None:
    """A ``google.colab`` package in ``site`` (importable everywhere, as on Colab) and an IPython
    start-up file in ``ipython_dir`` that imports it in every kernel, as Colab's kernel does."""
    (site / "google" / "colab").mkdir(parents=True, exist_ok=True)
    (site / "google" / "colab" / "__init__.py").write_text(STAND_IN, encoding="utf-8")
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-google-colab.py").write_text(STARTUP, encoding="utf-8")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_clone(dest: Path, branch: str) -> Path:
    """A clone of this checkout with its uncommitted changes committed, on ``branch``: the GitHub stand-in."""
    git("clone", "--quiet", str(ROOT), str(dest), cwd=ROOT)
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    for name in filter(None, listed):
        source, target = ROOT / name, dest / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif target.exists():  # deleted in the working tree, not yet in a commit
            target.unlink()
    git("add", "-A", cwd=dest)
    git("-c", "user.name=colab-check", "-c", "user.email=colab-check@localhost", "commit", "--quiet",
        "--allow-empty", "-m", "the working tree of the checkout", cwd=dest)
    git("checkout", "--quiet", "-B", branch, cwd=dest)
    return dest


# --- the first cell -------------------------------------------------------------------------------

def repository_setting() -> tuple[str, str]:
    """The repository address and branch the notebooks' first cell installs from (pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return project["tool"]["course"]["repository"], project["tool"]["course"]["branch"]


def setup_cell(nb):
    """The notebook's first cell, found by its first line, or None."""
    hits = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(SETUP_FIRST_LINE)]
    return hits[0] if hits else None


def local_source(source: str, clone: Path, added: tuple[str, ...] = ()) -> str:
    """The first cell's source with the repository's address replaced by the clone's, nothing else,
    and ``added`` packages appended to what it installs."""
    address, _ = repository_setting()
    old = f"git+{address}@"
    if source.count(old) != 1:
        raise ValueError(f"the first cell does not install from {old!r} exactly once")
    source = source.replace(old, f"git+file://{clone}@")
    for package in added:
        if json.dumps(package) not in source:  # a package the cell carries already is not added twice
            source = source.replace('"--no-deps",', f'"--no-deps", {json.dumps(package)},', 1)
    return source


# --- executing the notebooks (in .colab-venv) -----------------------------------------------------

def notebook_paths(args: list[str]) -> list[Path]:
    if args:
        return [Path(a).resolve() for a in args]
    lessons = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    solutions = sorted((NOTEBOOKS / "solutions").glob("[0-9][0-9]_solutions.ipynb"))
    return lessons + solutions + sorted((NOTEBOOKS / "appendix").glob("*.ipynb"))


def helpers_origin(python: Path) -> str | None:
    """Where the installed helpers came from (direct_url.json's url), or None when not installed."""
    code = (
        "import importlib.metadata as m, json\n"
        f"try:\n    d = m.distribution({PACKAGE!r})\nexcept m.PackageNotFoundError:\n    print('null')\n"
        "else:\n    print(json.dumps(json.loads(d.read_text('direct_url.json') or '{}').get('url')))"
    )
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def execute(path: Path, work: Path, clone: Path, added: tuple[str, ...], timeout: int):
    """Execute one notebook alone in a folder of its own; return (seconds, error line or None, notebook)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    cell = setup_cell(nb)
    if cell is None:
        return 0.0, "no first cell that installs the helpers", nb
    cell.source = local_source(cell.source, clone, added)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
            tags = c.metadata.setdefault("tags", [])
            if RAISES.search(c.source) and "raises-exception" not in tags:
                tags.append("raises-exception")
    folder = work / "content" / path.stem  # Colab opens a notebook in /content, without the repository
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / path.name)
    # a fresh session: Colab's packages as the image has them, and no helpers until the first cell
    uninstall_helpers(Path(sys.executable))
    restore(Path(sys.executable), COLAB)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(folder)}}, store_widget_state=True)

    def too_long(*_):
        raise TimeoutError(f"still running after {timeout} s")

    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(timeout)
    start, error = time.perf_counter(), None
    try:
        client.execute()
    except BaseException as err:  # a failing cell, the time limit, a dead kernel
        text = f"{getattr(err, 'ename', type(err).__name__)}: {getattr(err, 'evalue', err)}".strip()
        error = text.splitlines()[0] if text else type(err).__name__
    finally:
        signal.alarm(0)
    seconds = time.perf_counter() - start
    origin = helpers_origin(Path(sys.executable))
    if error is None and origin != f"file://{clone}":
        error = f"the first cell did not install the helpers from the clone (installed from: {origin})"
    changed = {n: v for n, v in versions(Path(sys.executable), KEPT).items() if v != COLAB[n]}
    if error is None and changed:
        error = f"the first cell replaced Colab's {changed}"
    return seconds, error, nb


# --- comparing outputs as nbval does ---------------------------------------------------------------

# nbval's own list of output keys it does not compare (nbval/plugin.py, without --nbdime)
SKIP_COMPARE = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}


def sanitizers() -> list[tuple[str, str]]:
    """The regex replacements of tests/nbval_sanitize.cfg, in order."""
    pairs, regex = [], None
    for line in (ROOT / "tests" / "nbval_sanitize.cfg").read_text(encoding="utf-8").splitlines():
        if line.startswith("regex: "):
            regex = line[len("regex: "):]
        elif line.startswith("replace: ") and regex is not None:
            pairs.append((regex, line[len("replace: "):]))
            regex = None
    return pairs


def flattened(outputs, patterns) -> dict[str, list]:
    """nbval's view of a cell's outputs: streams merged by name, each key a list of sanitized values."""
    merged, streams = [], {}
    for out in outputs:
        if out.get("output_type") == "stream":
            if out["name"] in streams:
                streams[out["name"]]["text"] += out["text"]
                continue
            out = streams.setdefault(out["name"], {"output_type": "stream", "name": out["name"],
                                                   "text": out["text"]})
        merged.append(out)
    result: dict[str, list] = {}
    for out in merged:
        for key, value in out.items():
            if key in SKIP_COMPARE:
                continue
            items = value.items() if key == "data" else [(key if out.get("output_type") != "stream"
                                                           else f"stream {out['name']}", value)]
            for k, v in items:
                if k in SKIP_COMPARE:
                    continue
                v = "".join(v) if isinstance(v, list) else v
                if isinstance(v, str):
                    for regex, replace in patterns:
                        v = re.sub(regex, replace, v)
                result.setdefault(k, []).append(v)
    return result


def first_difference(ref: dict, test: dict) -> str | None:
    if set(ref) != set(test):
        return f"output kinds: stored {sorted(ref)}, here {sorted(test)}"
    for key in ref:
        for a, b in zip(ref[key], test[key], strict=False):
            if a != b:
                pairs = zip(str(a).splitlines(), str(b).splitlines(), strict=False)
                lines = [(x, y) for x, y in pairs if x != y]
                x, y = lines[0] if lines else (str(a)[-80:], str(b)[-80:])
                return f"{key}: stored {x.strip()[:90]!r}, here {y.strip()[:90]!r}"
        if len(ref[key]) != len(test[key]):
            return f"{key}: {len(ref[key])} stored, {len(test[key])} here"
    return None


def compare(path: Path, executed) -> tuple[int, list[str]]:
    """How many cells nbval would compare, and those whose outputs differ from the stored ones."""
    import nbformat

    stored = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    ran = [c for c in executed.cells if c.cell_type == "code"]
    patterns, lines, compared = sanitizers(), [], 0
    for number, (old, new) in enumerate(zip(stored, ran, strict=True)):
        tags = set(old.metadata.get("tags", []))
        marked = re.search(r"^\s*#\s*NBVAL_(IGNORE_OUTPUT|SKIP)\s*$", old.source, re.M)
        if old.source.startswith(SETUP_FIRST_LINE) or tags & {"nbval-ignore-output", "nbval-skip", GPU_TAG} \
                or marked:
            continue
        compared += 1
        why = first_difference(flattened(old.outputs, patterns), flattened(new.outputs, patterns))
        if why:
            lines.append(f"{path.name} code cell {number}: {why}")
    return compared, lines


# --- the widgets ----------------------------------------------------------------------------------

def check_widgets() -> list[str]:
    """Build each widget the lessons build; change its controls as a front end does (``set_state``, a
    click); check that the callbacks ran. Returns one line per widget; raises AssertionError if not."""
    import ipywidgets
    import torch

    from helpers import setup
    from helpers.lessons.checklist import reproducibility_checklist
    from helpers.show.widgets import float_explorer, tolerance_playground

    done = []
    probe = setup._widget()  # lesson 00: the set-up check's green box
    bundle = probe._repr_mimebundle_()
    assert bundle["text/plain"] == setup.NO_WIDGET_TEXT, bundle
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == probe.model_id, bundle
    done.append("set-up check's box (00): a widget view, and a line of text where widgets do not render")

    explorer = float_explorer(0.1)  # lesson 01
    (number, menu), view = explorer.children[0].children, explorer.children[1]
    before = view.value
    number.set_state({"value": 0.5})
    assert view.value != before and number.value == 0.5, "float_explorer does not follow its number box"
    before = view.value
    menu.set_state({"index": [value for _, value in menu.options].index(torch.bfloat16)})
    assert menu.value is torch.bfloat16 and view.value != before, "float_explorer does not follow its menu"
    done.append("float_explorer (01): the view follows the number box and the dtype menu")

    checklist = reproducibility_checklist()  # lesson 05
    grid, button, view = checklist.children
    grid.children[0].set_state({"value": True})
    before = view.value
    button.click()
    assert repr(checklist).endswith("=True)") and view.value != before, "the checklist's button did nothing"
    done.append("reproducibility_checklist (05): a ticked box and a click train twice and report")

    playground = tolerance_playground(-5.0, -5.0, 12)  # lesson 10
    (rtol, atol, k), view = playground.children[0].children, playground.children[1]
    for control, value in ((rtol, -1.0), (atol, 0.0), (k, 3)):
        before = view.value
        control.set_state({"value": value})
        assert view.value != before, f"tolerance_playground does not follow {control.description}"
    assert "reduction_tolerances(torch.float32, 8," in view.value
    done.append("tolerance_playground (10): the text and picture follow all three sliders")
    return [f"ipywidgets {ipywidgets.__version__}: {line}" for line in done]


# --- the two halves -------------------------------------------------------------------------------

def inside(args) -> int:
    """Run in .colab-venv: execute the notebooks, print the table and the differences, check widgets."""
    import nbformat

    work, clone = Path(args.work), Path(args.clone)
    rows, differences, failed, compared = [], [], 0, 0
    for path in notebook_paths(args.paths):
        seconds, error, nb = execute(path, work, clone, tuple(args.add), args.timeout)
        failed += error is not None
        rows.append((path.relative_to(NOTEBOOKS).as_posix(), seconds, error))
        print(f"{'ok' if error is None else 'FAILED'} {seconds:6.1f} s {rows[-1][0]}"
              + (f": {error}" if error else ""), flush=True)
        if error is None:
            count, lines = compare(path, nb)
            compared, differences = compared + count, differences + lines
        if args.out:  # the notebook as it ran, outputs and all, to read
            target = Path(args.out) / rows[-1][0]
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
    print("\n| notebook | seconds | result |\n|---|---|---|")
    for name, seconds, error in rows:
        print(f"| {name} | {seconds:.1f} | {'ok' if error is None else 'failed: ' + error} |")
    print(f"\n{len(rows) - failed} of {len(rows)} ran to the end; {failed} failed.")
    print(f"\nOutputs compared with the stored ones as nbval does: {compared} cells of those that ran; "
          f"{len(differences)} differ:")
    print("\n".join(differences) or "none")
    if rows:  # the helpers stay installed from the last notebook's first cell
        print("\nWidgets:")
        try:
            print("\n".join(check_widgets()))
        except Exception as err:
            failed += 1
            print(f"FAILED: {type(err).__name__}: {err}")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.colab_check", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="notebooks (default: every lesson, solution and appendix)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one notebook may take (900)")
    parser.add_argument("--add", action="append", default=[], help="a package the first cell also installs")
    parser.add_argument("--out", help="write each notebook as it ran into this folder")
    parser.add_argument("--widgets-only", action="store_true", help="only the widget check")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--clone", help=argparse.SUPPRESS)
    args = parser.parse_args(argv[1:])
    if args.inside:
        return inside(args)
    build_venv()
    with tempfile.TemporaryDirectory(prefix="colab-check-") as scratch:
        work = Path(scratch)
        clone = make_clone(work / "course", repository_setting()[1])
        print(f"the GitHub stand-in: a clone of this checkout with its changes, in {clone}")
        write_stand_in(site_packages(venv_python()), work / "ipython")
        env = {**os.environ, "IPYTHONDIR": str(work / "ipython"), "JUPYTER_DATA_DIR": str(work / "jupyter"),
               "JUPYTER_CONFIG_DIR": str(work / "jupyter-config"),
               "PYDEVD_DISABLE_FILE_VALIDATION": "1"}  # quiets debugpy's note on Python 3.13's frozen modules
        env.pop("PYTHONPATH", None)
        command = [str(venv_python()), "-m", "tools.colab_check", "--inside", "--work", str(work),
                   "--clone", str(clone), "--timeout", str(args.timeout)]
        command += [f"--add={package}" for package in args.add]
        command += [f"--out={Path(args.out).resolve()}"] if args.out else []
        if args.widgets_only:
            subprocess.run([str(venv_python()), "-m", "pip", "install", "--quiet", "--no-deps",
                            f"{PACKAGE} @ git+file://{clone}@{repository_setting()[1]}"], check=True)
            code = "from tools.colab_check import check_widgets; print('\\n'.join(check_widgets()))"
            return subprocess.run([str(venv_python()), "-c", code], cwd=ROOT, env=env).returncode
        command += [str(Path(p).resolve()) for p in args.paths]
        return subprocess.run(command, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))

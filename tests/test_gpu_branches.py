"""The GPU code paths of every lesson run on the CPU, with "cuda" mapped to the CPU.

A CPU-only machine never executes a lesson's ``if torch.cuda.is_available():`` branch or its
``gpu``-tagged cells, so a typo there would first show on a GPU runner. Here each notebook's code
runs in a fresh Python process with ``torch.cuda.is_available()`` replaced by ``True``, the device
name by a label and the string ``"cuda"`` (in either quotes) by ``"cpu"``, and with CUDA events and
``torch.cuda.synchronize`` timed on the CPU clock and ``pin_memory`` a no-op: the branches must run
to the end. This
checks that the code runs, not what a GPU computes.

Only where there is no CUDA: on a GPU machine the mapping would test a hybrid that no machine runs
(the notebooks' own code on the CPU, while helpers and torch see real CUDA, with CUDA events and
synchronisation replaced for the whole process). There the branches run for real, live, under nbval
(`tools/gpu_pass.sh`), and this test is skipped in favour of that.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks" / "appendix").glob("*.ipynb")
)

RUNNER = textwrap.dedent(
    """
    import json, sys, time, traceback
    import matplotlib
    import torch

    class Event:  # torch.cuda.Event and synchronize, on the CPU clock
        def __init__(self, enable_timing=False):
            self.t = None
        def record(self, stream=None):
            self.t = time.perf_counter()
        def elapsed_time(self, other):
            return (other.t - self.t) * 1000.0
        def synchronize(self):
            pass

    torch.cuda.Event = Event
    torch.cuda.synchronize = lambda device=None: None
    torch.Tensor.pin_memory = lambda self, device=None: self  # nothing to pin for without a GPU
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.show = lambda *a, **k: plt.close("all")
    cells = json.loads(sys.stdin.read())
    import __main__  # run the cells in __main__, as IPython does, so that pickling finds their classes
    namespace = __main__.__dict__
    namespace["display"] = lambda *a, **k: None
    for i, (source, may_raise) in enumerate(cells):
        try:
            exec(compile(source, f"<code cell {i}>", "exec"), namespace)
        except Exception:
            if not may_raise:
                traceback.print_exc()
                sys.exit(f"code cell {i} failed with cuda mapped to the CPU")
    """
)


def as_if_cuda(source: str) -> str:
    """The cell's code, rewritten so that its CUDA branch runs on the CPU."""
    return (
        source.replace("torch.cuda.is_available()", "True")
        .replace("torch.cuda.get_device_name(0)", "'cuda mapped to cpu'")
        .replace('"cuda"', '"cpu"')
        .replace("'cuda'", "'cpu'")
    )


def raises(cell: dict) -> bool:
    """True for a cell meant to raise: the ``raises-exception`` tag or the older comment marker."""
    tags = {t.lower() for t in cell.get("metadata", {}).get("tags", [])}
    return bool(tags & {"raises-exception", "nbval-raises-exception"}) or "NBVAL_RAISES_EXCEPTION" in "".join(
        cell["source"]
    )


def takes_gpu_path(cell: dict) -> bool:
    """True for a cell with a CUDA branch or the ``gpu`` tag: the cells the mapping changes."""
    source = "".join(cell["source"])
    return "gpu" in cell.get("metadata", {}).get("tags", []) or as_if_cuda(source) != source


def names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell binds and the names it reads (at any depth: an over-estimate of both)."""
    bound, read = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, read


def gpu_slice(cells: list[dict]) -> list[dict]:
    """The cells a notebook's GPU paths need: each GPU cell, and every earlier cell that binds a
    name a needed cell reads (imports included). The rest only costs time here."""
    last = max(i for i, c in enumerate(cells) if takes_gpu_path(c))
    needed, keep = set(), []
    for cell in reversed(cells[: last + 1]):
        bound, read = names(as_if_cuda("".join(cell["source"])))
        if takes_gpu_path(cell) or bound & needed:
            keep.append(cell)
            needed |= read
    return keep[::-1]


def gpu_aware(path: Path) -> bool:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return any(takes_gpu_path(c) for c in cells if c["cell_type"] == "code")


def test_rewrite_maps_the_cuda_branch_to_the_cpu():
    source = 'if torch.cuda.is_available():\n    x = y.to("cuda")'
    assert as_if_cuda(source) == 'if True:\n    x = y.to("cpu")'
    assert takes_gpu_path({"source": [source]}) and not takes_gpu_path({"source": ["x = y.to('cpu')"]})
    assert takes_gpu_path({"source": ["print(1)"], "metadata": {"tags": ["gpu"]}})


def test_the_slice_keeps_what_a_gpu_cell_needs_and_drops_the_rest():
    cells = [{"source": [s]} for s in (
        "import torch", "x = torch.ones(2)", "slow = sum(range(10**6))", "y = x * 2",
        'if torch.cuda.is_available():\n    print(y.to("cuda"))', "z = y + 1",
    )]
    assert ["".join(c["source"]) for c in gpu_slice(cells)] == [
        "import torch", "x = torch.ones(2)", "y = x * 2",
        'if torch.cuda.is_available():\n    print(y.to("cuda"))',
    ]


@pytest.mark.slow
@pytest.mark.skipif(
    torch.cuda.is_available(), reason="CUDA is here: nbval runs the GPU branches live, not mapped to the CPU"
)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if gpu_aware(p)], ids=lambda p: p.name)
def test_gpu_branches_run(path: Path):
    code = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    cells = [(as_if_cuda("".join(c["source"])), raises(c)) for c in gpu_slice(code)]
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(cells),
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_runner_reports_a_failing_branch():
    source = 'import torch\nif torch.cuda.is_available():\n    torch.zeros(1, device="cuda") + typo'
    cells = [(as_if_cuda(source), False)]
    done = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(cells), capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "NameError" in done.stderr and "code cell 0 failed" in done.stderr

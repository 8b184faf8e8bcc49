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


def gpu_aware(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return "torch.cuda.is_available()" in text or '"gpu"' in text


def test_rewrite_maps_the_cuda_branch_to_the_cpu():
    source = 'if torch.cuda.is_available():\n    x = y.to("cuda")'
    assert as_if_cuda(source) == 'if True:\n    x = y.to("cpu")'


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="CUDA is here: nbval runs the GPU branches live, not mapped to the CPU"
)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if gpu_aware(p)], ids=lambda p: p.name)
def test_gpu_branches_run(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = [
        (as_if_cuda("".join(c["source"])), raises(c))
        for c in nb["cells"]
        if c["cell_type"] == "code"
    ]
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(cells),
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_runner_reports_a_failing_branch():
    source = 'import torch\nif torch.cuda.is_available():\n    torch.zeros(1, device="cuda") + typo'
    cells = [(as_if_cuda(source), False)]
    done = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(cells), capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "NameError" in done.stderr and "code cell 0 failed" in done.stderr

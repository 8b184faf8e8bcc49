"""The GPU code paths of every notebook run on the CPU, with "cuda" mapped to the CPU, as on three GPUs.

A CPU-only machine never executes a notebook's ``if torch.cuda.is_available():`` branch or its
``gpu``-tagged cells, so a typo there would first show on a GPU runner. Here each notebook's code
runs in a fresh Python process with ``torch.cuda.is_available()`` replaced by ``True`` and the
string ``"cuda"`` (in either quotes) by ``"cpu"``, with CUDA events and ``torch.cuda.synchronize``
timed on the CPU clock and ``pin_memory`` a no-op: the branches must run to the end. This checks
that the code runs, not what a GPU computes.

The process also answers torch's questions about the device as one of three GPUs would (``GPUS``):
a Tesla T4 (Turing, compute capability 7.5, the GPU free notebook services usually lend), an A100
(Ampere, 8.0) and an H100 (Hopper, 9.0): name, compute capability, SMs, memory, and
``is_bf16_supported``/``is_tf32_supported`` as torch's own code answers on that capability. A
notebook whose GPU code asks any of that runs as each of the three, and its TF32 cells must say the
right thing: on the T4 that TF32 does not exist there, on the others that the comparison is made.
The other notebooks' GPU code reads no property of the GPU (its name only labels what it prints),
so it runs once, as a T4, which keeps this slow test's run time down.

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
import types
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = (
    sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    + sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
    + sorted((ROOT / "notebooks" / "appendix").glob("*.ipynb"))
)

# Three GPUs, as torch describes them. SM counts: NVIDIA's for these models; memory: round figures.
GPUS = {
    "T4": {"name": "Tesla T4", "capability": (7, 5), "sms": 40, "memory_gib": 15},
    "A100": {"name": "NVIDIA A100-SXM4-40GB", "capability": (8, 0), "sms": 108, "memory_gib": 40},
    "H100": {"name": "NVIDIA H100 80GB HBM3", "capability": (9, 0), "sms": 132, "memory_gib": 80},
}

# Run in the subprocess with `gpu` set to one of GPUS: torch's device queries answer for that GPU.
FAKE_GPU = textwrap.dedent(
    """
    major, minor = gpu["capability"]
    props = types.SimpleNamespace(name=gpu["name"], major=major, minor=minor,
                                  multi_processor_count=gpu["sms"], total_memory=gpu["memory_gib"] * 2**30)
    torch.cuda.get_device_properties = lambda device=None: props
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.get_device_name = lambda device=None: props.name
    # torch/cuda/__init__.py on a CUDA build: bfloat16 is native from major 8 on, and below that counts
    # as supported, by emulation, where a bfloat16 tensor can be made (as on these GPUs); TF32: native only
    torch.cuda.is_bf16_supported = lambda including_emulation=True: major >= 8 or including_emulation
    torch.cuda.is_tf32_supported = lambda: torch.cuda.is_bf16_supported(including_emulation=False)
    """
)

# What a notebook's GPU code reads of the GPU itself; a notebook that reads any runs as each GPU.
DEVICE_QUERIES = ("get_device_capability", "get_device_properties", "is_bf16_supported", "is_tf32_supported",
                  "multi_processor_count")

# What the TF32 cells must print: (only on a GPU without TF32, only on a GPU with it, on every GPU).
SAYS = {
    "00_start_here.ipynb": ("no TF32 (it needs 8.0)", ": has TF32", "compute capability"),
    "03_reduced_precision.ipynb": ("'high' is accepted and keeps float32 arithmetic", "(TF32 allowed)",
                                   "1024.5 @ I gives"),
    "06_moving_models.ipynb": (", no TF32 here", ", cuDNN may use TF32", "max rel error"),
    "13_myths_and_facts.ipynb": ("has no TF32 (compute capability 7.5; TF32 needs 8.0)", None,
                                 "the same, conv.fp32_precision = 'ieee'"),
}

RUNNER = textwrap.dedent(
    """
    import json, sys, time, traceback, types
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
    job = json.loads(sys.stdin.read())
    gpu = job["gpu"]
    exec(job["fake_gpu"])
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.show = lambda *a, **k: plt.close("all")
    import __main__  # run the cells in __main__, as IPython does, so that pickling finds their classes
    namespace = __main__.__dict__
    namespace["display"] = lambda *a, **k: None
    for i, (source, may_raise) in enumerate(job["cells"]):
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


def asks_for_cuda(source: str) -> bool:
    """True if the code calls ``torch.cuda.is_available()`` (a comment that names it does not count)."""
    return any(
        isinstance(node, ast.Call) and ast.unparse(node.func) == "torch.cuda.is_available"
        for node in ast.walk(ast.parse(source))
    )


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


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def gpu_aware(path: Path) -> bool:
    """A notebook with a CUDA branch (a call of ``torch.cuda.is_available()``) or a ``gpu`` cell."""
    return any(
        "gpu" in c.get("metadata", {}).get("tags", []) or asks_for_cuda("".join(c["source"]))
        for c in code_cells(path)
    )


def reads_the_gpu(path: Path) -> bool:
    """True if the notebook's GPU code asks torch about the GPU itself (DEVICE_QUERIES)."""
    sliced = "".join("".join(c["source"]) for c in gpu_slice(code_cells(path)))
    return any(query in sliced for query in DEVICE_QUERIES)


def runs() -> list:
    """(notebook, GPU) pairs: every GPU that matters to the notebook."""
    pairs = []
    for path in filter(gpu_aware, NOTEBOOKS):
        for gpu in GPUS if reads_the_gpu(path) else ["T4"]:
            pairs.append(pytest.param(path, gpu, id=f"{path.name}-{gpu}"))
    return pairs


def run_cells(cells: list[tuple[str, bool]], gpu: str, cwd: Path | None = None, timeout: int = 300):
    job = {"gpu": GPUS[gpu], "fake_gpu": FAKE_GPU, "cells": cells}
    return subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(job), capture_output=True, text=True, cwd=cwd,
        timeout=timeout,
    )


def test_rewrite_maps_the_cuda_branch_to_the_cpu():
    source = 'if torch.cuda.is_available():\n    x = y.to("cuda")'
    assert as_if_cuda(source) == 'if True:\n    x = y.to("cpu")'
    assert takes_gpu_path({"source": [source]}) and not takes_gpu_path({"source": ["x = y.to('cpu')"]})
    assert takes_gpu_path({"source": ["print(1)"], "metadata": {"tags": ["gpu"]}})


def test_a_cuda_branch_is_a_call_not_a_comment():
    assert asks_for_cuda("device = 'cuda' if torch.cuda.is_available() else 'cpu'")
    assert not asks_for_cuda("# no torch.cuda.is_available() guard here\nx = 'cuda'")


def test_the_slice_keeps_what_a_gpu_cell_needs_and_drops_the_rest():
    cells = [{"source": [s]} for s in (
        "import torch", "x = torch.ones(2)", "slow = sum(range(10**6))", "y = x * 2",
        'if torch.cuda.is_available():\n    print(y.to("cuda"))', "z = y + 1",
    )]
    assert ["".join(c["source"]) for c in gpu_slice(cells)] == [
        "import torch", "x = torch.ones(2)", "y = x * 2",
        'if torch.cuda.is_available():\n    print(y.to("cuda"))',
    ]


def test_the_tf32_notebooks_run_as_each_gpu():
    params = runs()
    for name in SAYS:
        assert sorted(p.values[1] for p in params if p.values[0].name == name) == sorted(GPUS), name


@pytest.mark.parametrize("gpu", GPUS)
def test_the_fake_gpu_answers_as_torch_does(monkeypatch, gpu):
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace())  # FAKE_GPU sets its functions here
    exec(FAKE_GPU, {"torch": fake, "types": types, "gpu": GPUS[gpu]})
    # torch's own functions, on a CUDA build whose device has the fake's properties and can hold bfloat16
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", fake.cuda.get_device_properties)
    monkeypatch.setattr(torch.cuda, "_check_bf16_tensor_supported", lambda device: True)
    cuda, capability = fake.cuda, GPUS[gpu]["capability"]
    for emulation in (True, False):
        assert cuda.is_bf16_supported(emulation) == torch.cuda.is_bf16_supported(emulation)
    assert cuda.is_tf32_supported() == torch.cuda.is_tf32_supported() == (capability >= (8, 0))
    assert cuda.get_device_capability(0) == torch.cuda.get_device_capability(0) == capability
    assert cuda.get_device_name(0) == torch.cuda.get_device_name(0) == GPUS[gpu]["name"]


@pytest.mark.slow
@pytest.mark.skipif(
    torch.cuda.is_available(), reason="CUDA is here: nbval runs the GPU branches live, not mapped to the CPU"
)
@pytest.mark.parametrize("path, gpu", runs())
def test_gpu_branches_run(path: Path, gpu: str):
    cells = [(as_if_cuda("".join(c["source"])), raises(c)) for c in gpu_slice(code_cells(path))]
    done = run_cells(cells, gpu, cwd=path.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    if path.name in SAYS:
        without_tf32, with_tf32, always = SAYS[path.name]
        has_tf32 = GPUS[gpu]["capability"] >= (8, 0)
        mine, other = (with_tf32, without_tf32) if has_tf32 else (without_tf32, with_tf32)
        for text in (mine, always):
            assert text is None or text in done.stdout, f"{text!r} not printed:\n{done.stdout[-3000:]}"
        assert other is None or other not in done.stdout, f"{other!r} printed:\n{done.stdout[-3000:]}"


@pytest.mark.slow
def test_runner_reports_a_failing_branch():
    source = 'import torch\nif torch.cuda.is_available():\n    torch.zeros(1, device="cuda") + typo'
    done = run_cells([(as_if_cuda(source), False)], "T4", timeout=60)
    assert done.returncode != 0 and "NameError" in done.stderr and "code cell 0 failed" in done.stderr


@pytest.mark.slow
def test_runner_answers_as_the_gpu():
    source = "import torch\nprint(torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0), " \
             "torch.cuda.is_tf32_supported(), torch.cuda.is_bf16_supported())"
    done = run_cells([(source, False)], "T4", timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "Tesla T4 (7, 5) False True", done.stderr

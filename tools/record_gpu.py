"""Measure and write the GPU reference data that lessons show where no GPU is present.

    python tools/record_gpu.py                   # on a CUDA machine (make record-gpu)
    python tools/record_gpu.py --dry-run --out D # anywhere: the same code paths on the CPU, tiny sizes

Writes reference.json (every value with its unit, and the provenance: command, date, GPU, driver,
CUDA, cuDNN, torch) and a tiny checkpoint saved from GPU tensors, then validates the result with
the loader the lessons use. A dry run writes data marked dry_run, which the loader refuses to
show as GPU data; it exists so that the first real run does not fail on contact.

Timings are only data when nothing else runs: run it alone on the machine (tools/gpu_pass.sh runs
it before the tests). An idle GPU runs its SMs at a fraction of their clock (an H200: about
345 MHz idle, 1980 MHz under load), so every timed measurement starts after a warm-up that keeps
the GPU busy until NVML reports the SM clock near its maximum (`warm_up`), and every size is
timed after a few untimed calls of its own. Measurements are written to ``reference.json.partial``
as they finish, and ``reference.json`` appears only when all of them have, validated.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from helpers.compare import compare  # noqa: E402
from helpers.reference import FILENAME, SCHEMA, load_gpu_reference, reference_dir  # noqa: E402

CHECKPOINT = "linear_4x2_saved_on_gpu.pt"
PARTIAL = FILENAME + ".partial"
# PyTorch releases before 2.10 refused cuBLAS under deterministic mode unless this variable was
# ":4096:8" or ":16:8", and read it once, at the process's first cuBLAS call (a static in ATen's
# Context.cpp); pull request #161749 removed that check. From 2.10 on the variable only sizes the
# cuBLAS workspace, which the recorder leaves at PyTorch's default, the one a learner gets.
CHECKED_CUBLAS_CONFIG_BEFORE = (2, 10)


@dataclass(frozen=True)
class Sizes:
    """Problem sizes: full on a GPU, tiny in a dry run (which only proves the code paths)."""

    runs: int
    atomics_n: int
    conv_batch: int
    children: int
    matmul_k: tuple[int, ...]
    matmul_n: tuple[int, ...]
    elementwise_log2: tuple[int, ...]
    transfer_bytes: tuple[int, ...]
    reps: int
    sum_n: int
    batch_shape: tuple[int, int]
    batch_ns: tuple[int, ...]
    cumsum_n: int
    first_warm_up_s: float  # at least this long before the first timed measurement
    warm_up_s: float  # before each later one
    warm_up_max_s: float  # and at most this long, waiting for the clock

    @staticmethod
    def for_run(dry: bool) -> Sizes:
        if dry:
            return Sizes(
                runs=3,
                atomics_n=10_000,
                conv_batch=2,
                children=2,
                matmul_k=(64, 256),
                matmul_n=(16, 32, 64),
                elementwise_log2=(10, 12, 14),
                transfer_bytes=(2**16, 2**20),
                reps=3,
                sum_n=10_000,
                batch_shape=(64, 128),
                batch_ns=(1, 2, 8),
                cumsum_n=1000,
                first_warm_up_s=0.05,
                warm_up_s=0.01,
                warm_up_max_s=0.1,
            )
        return Sizes(
            runs=50,
            atomics_n=1_000_000,
            conv_batch=32,
            children=4,
            matmul_k=(256, 1024, 4096, 16384),
            matmul_n=tuple(2**k for k in range(4, 14)),
            elementwise_log2=tuple(range(10, 29, 2)),
            transfer_bytes=(2**20, 2**24, 2**28),
            reps=20,
            sum_n=10_000_000,
            batch_shape=(2048, 4096),
            batch_ns=(1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
            cumsum_n=100_000,
            first_warm_up_s=2.0,
            warm_up_s=0.5,
            warm_up_max_s=10.0,
        )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def sm_clock_mhz(device: torch.device) -> tuple[int | None, int | None]:
    """The SM clock now and its maximum, in MHz, as NVML reports them; (None, None) without NVML.

    ``torch.cuda.clock_rate`` reads NVML through nvidia-ml-py (``pynvml``), averaged over NVML's
    sample period (1/6 s to 1 s); the maximum comes from ``nvmlDeviceGetMaxClockInfo``.
    """
    if device.type != "cuda":
        return None, None
    try:
        now = int(torch.cuda.clock_rate(device))
    except Exception:  # no pynvml, or NVML refuses: the warm-up then runs for its minimum time
        return None, None
    try:
        import pynvml

        handle = torch.cuda._get_pynvml_handler(device)
        peak = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        peak = None
    return now, peak


def warm_up(device: torch.device, seconds: float, max_seconds: float, near_peak: float = 0.9) -> dict:
    """Keep the device busy with matrix products until its clocks are up; say what happened.

    Runs 4096 x 4096 bfloat16 products (64 x 64 float32 ones on the CPU of a dry run) in batches,
    for at least ``seconds``, then until NVML reports the SM clock at ``near_peak`` of its maximum,
    or at most ``max_seconds``. Without NVML (or without the maximum) it runs for ``seconds``.
    """
    cuda = device.type == "cuda"
    n, dtype = (4096, torch.bfloat16) if cuda else (64, torch.float32)
    a = torch.randn(n, n, generator=torch.Generator().manual_seed(0)).to(device, dtype)
    before, peak = sm_clock_mhz(device)
    now, products = before, 0
    start = time.perf_counter()
    while True:
        for _ in range(20):
            a @ a
        products += 20
        sync(device)
        elapsed = time.perf_counter() - start
        if elapsed < seconds:
            continue
        now, _ = sm_clock_mhz(device)
        clock_up = now is None or peak is None or now >= near_peak * peak
        if clock_up or elapsed >= max_seconds:
            break
    return {
        "seconds": round(time.perf_counter() - start, 3),
        "products": products,
        "product": f"{n}x{n} {str(dtype).replace('torch.', '')}",
        "sm_clock_mhz_before": before,
        "sm_clock_mhz_after": now,
        "sm_clock_mhz_max": peak,
    }


def median_ms(fn, device: torch.device, reps: int, warmup: int = 3) -> dict:
    """Median, min and max of ``reps`` timed calls in milliseconds (CUDA events on a GPU).

    The ``warmup`` untimed calls first pay what a size's first call costs (kernel loading, cuBLAS
    heuristics, first-touch of memory); the clock is brought up before, by :func:`warm_up`.
    """
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "reps": reps}


@contextlib.contextmanager
def deterministic(enabled: bool):
    """Deterministic mode on or off (use_deterministic_algorithms and cuDNN), restored afterwards."""
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    torch.use_deterministic_algorithms(enabled)
    torch.backends.cudnn.deterministic = enabled
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[2], before[3]


def _new_tf32_api() -> bool:
    return hasattr(torch.backends, "fp32_precision")


@contextlib.contextmanager
def tf32(matmul: bool | None = None, conv: bool | None = None):
    """Switch TF32 for matmul and/or cuDNN convolutions through one API only, restored afterwards."""
    if _new_tf32_api():
        targets = [(torch.backends.cuda.matmul, matmul), (torch.backends.cudnn.conv, conv)]
        before = [t.fp32_precision for t, _ in targets]
        for target, on in targets:
            if on is not None:
                target.fp32_precision = "tf32" if on else "ieee"
        try:
            yield
        finally:
            for (target, _), value in zip(targets, before, strict=True):
                target.fp32_precision = value
    else:
        before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        if matmul is not None:
            torch.backends.cuda.matmul.allow_tf32 = matmul
        if conv is not None:
            torch.backends.cudnn.allow_tf32 = conv
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.detach().cpu().contiguous().numpy().tobytes()).hexdigest()[:16]


def spread(fn, runs: int) -> dict:
    """How many bitwise-distinct results ``runs`` calls of ``fn`` give, and how far apart they lie."""
    outs = [fn().detach().cpu() for _ in range(runs)]
    stacked = torch.stack(outs).double()
    return {
        "runs": runs,
        "distinct": len({digest(o) for o in outs}),
        "max_abs_spread": float((stacked.max(0).values - stacked.min(0).values).max()),
    }


def spread_both_modes(fn, runs: int) -> dict:
    result = {}
    for label, enabled in (("default", False), ("deterministic", True)):
        with deterministic(enabled):
            try:
                result[label] = spread(fn, runs)
            except RuntimeError as exc:  # no deterministic implementation: record the message
                result[label] = {"error": str(exc).splitlines()[0]}
    return result


def entry(description: str, unit: str, value, **settings) -> dict:
    out = {"description": description, "unit": unit, "value": value}
    if settings:
        out["settings"] = settings
    return out


def seeded(*shape, seed: int = 0, device: torch.device) -> torch.Tensor:
    """Random normal data drawn on the CPU (the same on every machine), then moved."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


# --- the measurements ---------------------------------------------------------------------------


def rng_after_seed(device, sizes) -> dict:
    torch.manual_seed(10)
    cpu = torch.randn(5).tolist()
    torch.manual_seed(10)
    dev = torch.randn(5, device=device).cpu().tolist()
    return entry(
        "torch.randn(5) right after torch.manual_seed(10), on the CPU and on the device",
        "samples of N(0, 1), float32",
        {"seed": 10, "cpu": cpu, "device": dev},
    )


def _atomics(device, sizes, op: str) -> dict:
    n, bins = sizes.atomics_n, 100
    src = seeded(n, device=device)
    idx = torch.randint(0, bins, (n,), generator=torch.Generator().manual_seed(1)).to(device)
    if op == "index_add_":
        fn = lambda: torch.zeros(bins, device=device).index_add_(0, idx, src)  # noqa: E731
    else:
        fn = lambda: torch.zeros(bins, device=device).scatter_add_(0, idx, src)  # noqa: E731
    return entry(
        f"torch.zeros({bins}).{op}(0, idx, src) with {n} float32 values, repeated; bitwise-distinct "
        "results, default vs torch.use_deterministic_algorithms(True)",
        "count of distinct results; spread in absolute value",
        spread_both_modes(fn, sizes.runs),
        n=n,
        bins=bins,
    )


def index_add_spread(device, sizes) -> dict:
    return _atomics(device, sizes, "index_add_")


def scatter_add_spread(device, sizes) -> dict:
    return _atomics(device, sizes, "scatter_add_")


def conv_backward_spread(device, sizes) -> dict:
    x = seeded(sizes.conv_batch, 16, 32, 32, device=device)
    w0 = seeded(32, 16, 3, 3, seed=1, device=device)

    def weight_grad():
        w = w0.clone().requires_grad_(True)
        torch.nn.functional.conv2d(x, w, padding=1).square().sum().backward()
        return w.grad

    return entry(
        "gradient of a 3x3 conv2d's weight (batch x 16 x 32 x 32 input), repeated; default vs "
        "deterministic mode (cudnn.deterministic and use_deterministic_algorithms)",
        "count of distinct results; spread in absolute value",
        spread_both_modes(weight_grad, sizes.runs),
        batch=sizes.conv_batch,
    )


def _child_conv(device_name: str) -> None:
    """In a fresh process: CUDA context cost, and conv2d outputs with and without cudnn.benchmark."""
    device = torch.device(device_name)
    start = time.perf_counter()
    torch.zeros(1, device=device)
    sync(device)
    init_ms = (time.perf_counter() - start) * 1e3
    x, w = seeded(8, 64, 56, 56, device=device), seeded(64, 64, 3, 3, seed=1, device=device)
    out = {"init_ms": init_ms}
    for label, bench in (("heuristic", False), ("benchmark", True)):
        torch.backends.cudnn.benchmark = bench
        out[label] = digest(torch.nn.functional.conv2d(x, w, padding=1))
    print(json.dumps(out))


def cudnn_benchmark_processes(device, sizes) -> dict:
    results = []
    for _ in range(sizes.children):
        cmd = [sys.executable, __file__, "--child-conv", str(device)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    value = {
        "processes": len(results),
        "distinct_outputs_heuristic": len({r["heuristic"] for r in results}),
        "distinct_outputs_benchmark": len({r["benchmark"] for r in results}),
        "benchmark_equals_heuristic": [r["heuristic"] == r["benchmark"] for r in results],
        "context_init_ms": [r["init_ms"] for r in results],
    }
    return entry(
        "the same 3x3 conv2d (8 x 64 x 56 x 56) in fresh processes, with cudnn.benchmark off and on; "
        "also the time of the first CUDA call (context creation) in each process",
        "count of distinct outputs; milliseconds for context_init_ms",
        value,
    )


def _rel_errors(out: torch.Tensor, ref: torch.Tensor) -> dict:
    diff = (out.double() - ref).abs()
    return {
        "rel_fro": float(diff.norm() / ref.norm()),
        "max_abs_over_max_ref": float(diff.max() / ref.abs().max()),
    }


def tf32_matmul_error(device, sizes) -> dict:
    rows = []
    for k in sizes.matmul_k:
        a, b = seeded(512, k, device=device), seeded(k, 512, seed=1, device=device)
        ref = a.double() @ b.double()
        row = {"k": k}
        for label, on in (("fp32", False), ("tf32", True)):
            with tf32(matmul=on):
                row[label] = _rel_errors(a @ b, ref)
        rows.append(row)
    return entry(
        "(512 x k) @ (k x 512) in float32 with TF32 off (fp32) and on (tf32), against float64",
        "relative error (Frobenius norm; and max abs error over max |reference|)",
        rows,
        api="fp32_precision" if _new_tf32_api() else "allow_tf32",
    )


def tf32_conv_error(device, sizes) -> dict:
    x, w = seeded(sizes.conv_batch, 64, 32, 32, device=device), seeded(64, 64, 3, 3, seed=1, device=device)
    ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    value = {}
    for label, on in (("fp32", False), ("tf32", True)):
        with tf32(conv=on):
            value[label] = _rel_errors(torch.nn.functional.conv2d(x, w, padding=1), ref)
    return entry(
        "3x3 conv2d, 64 -> 64 channels, float32 with cuDNN TF32 off and on, against float64",
        "relative error (Frobenius norm; and max abs error over max |reference|)",
        value,
    )


def _comparison(a: torch.Tensor, b: torch.Tensor) -> dict:
    c = compare(a, b)
    return {
        "max_abs_error": c.max_abs_error,
        "max_rel_error": c.max_rel_error,
        "max_ulp": c.max_ulp,
        "frac_bitwise_equal": c.frac_bitwise_equal,
        "assert_close_default": c.close,
    }


def small_cnn(width: int, side: int) -> torch.nn.Sequential:
    """Two 3x3 convolutions (3 -> 32 -> width channels) and a linear layer, for side x side inputs."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, width, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(width * side * side, 10),
    )


def model_cpu_vs_gpu(device, sizes) -> dict:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(256, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    )
    cnn = small_cnn(32, side=16)
    value = {}
    with torch.no_grad():
        for name, model, x in (
            ("mlp", mlp, seeded(64, 256, device="cpu")),
            ("cnn", cnn, seeded(16, 3, 16, 16, device="cpu")),
        ):
            on_cpu = model(x)
            on_device = model.to(device)(x.to(device)).cpu()
            value[name] = _comparison(on_device, on_cpu)
    return entry(
        "a small MLP and CNN built on the CPU (seed 0), outputs on the device vs on the CPU, "
        "float32 with the default TF32 settings",
        "errors in absolute, relative and ULP terms",
        value,
        tf32_defaults="conv TF32 on, matmul TF32 off (PyTorch's defaults)",
    )


def matmul_sweep(device, sizes) -> dict:
    rows = []
    for n in sizes.matmul_n:
        row = {"n": n}
        for label, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            a, b = seeded(n, n, device=device).to(dtype), seeded(n, n, seed=1, device=device).to(dtype)
            t = median_ms(lambda: a @ b, device, sizes.reps)  # noqa: B023
            row[label] = {**t, "tflops": 2 * n**3 / (t["median_ms"] * 1e-3) / 1e12}
        rows.append(row)
    return entry(
        "square n x n matrix products (float32 at the default 'highest' precision, and bfloat16)",
        "milliseconds per product; TFLOP/s from the median",
        rows,
    )


def elementwise_sweep(device, sizes) -> dict:
    rows = []
    for k in sizes.elementwise_log2:
        n = 2**k
        a, b = torch.ones(n, device=device), torch.ones(n, device=device)
        t = median_ms(lambda: a + b, device, sizes.reps)  # noqa: B023
        rows.append({"n": n, **t, "gb_per_s": 3 * 4 * n / (t["median_ms"] * 1e-3) / 1e9})
    return entry(
        "c = a + b on float32 vectors of n elements", "milliseconds; GB/s counting 2 reads and 1 write", rows
    )


def transfer_cases(device: torch.device, nbytes: int) -> dict:
    """The four copies that ``transfer_bandwidth`` times, each between two buffers allocated (and
    written, so that every page exists) beforehand: a timed call copies and allocates nothing.

    Pageable memory is ordinary host memory, which the OS may move or swap out; the driver copies
    it through a pinned staging buffer of its own, and the call returns when the copy is done.
    Pinned (page-locked) memory is copied by the GPU's DMA engines directly, and with
    ``non_blocking=True`` the call returns at once. On the CPU of a dry run nothing can be pinned,
    and the "pinned" cases copy between pageable buffers.
    """
    pinnable = device.type == "cuda"
    host = torch.ones(nbytes, dtype=torch.uint8)
    pinned = host.pin_memory() if pinnable else host.clone()
    on_device = host.to(device)
    into_device = torch.zeros(nbytes, dtype=torch.uint8, device=device)
    back_pageable = torch.zeros(nbytes, dtype=torch.uint8)
    back_pinned = torch.zeros(nbytes, dtype=torch.uint8, pin_memory=pinnable)
    return {
        "h2d_pageable": lambda: into_device.copy_(host),
        "h2d_pinned": lambda: into_device.copy_(pinned, non_blocking=True),
        "d2h_pageable": lambda: back_pageable.copy_(on_device),
        "d2h_pinned": lambda: back_pinned.copy_(on_device, non_blocking=True),
    }


def transfer_bandwidth(device, sizes) -> dict:
    rows = []
    for nbytes in sizes.transfer_bytes:
        row = {"bytes": nbytes}
        for label, fn in transfer_cases(device, nbytes).items():
            t = median_ms(fn, device, sizes.reps)
            row[label] = {**t, "gb_per_s": nbytes / (t["median_ms"] * 1e-3) / 1e9}
        rows.append(row)
    return entry(
        "copies between host and device memory, each into a buffer allocated and written beforehand "
        "(so no timed call allocates or first-touches memory): h2d/d2h = host to device / device to "
        "host; pageable = ordinary host memory, copied by the driver through a pinned staging buffer, "
        "the call returning when done; pinned = page-locked host memory, copied by DMA directly, "
        "with non_blocking=True; timed with CUDA events from enqueue to completion",
        "milliseconds; GB/s (bytes copied per second)",
        rows,
        pinned_memory=device.type == "cuda",
    )


def sum_orders(device, sizes) -> dict:
    """The same float32 sum on the CPU and the device, and repeated on the device."""
    x = torch.rand(sizes.sum_n, generator=torch.Generator().manual_seed(0))
    on_device = x.to(device)
    repeats = [on_device.sum().item() for _ in range(sizes.runs)]
    value = {
        "n": sizes.sum_n,
        "cpu": x.sum().item(),
        "device": repeats[0],
        "device_distinct_over_runs": len(set(repeats)),
        "runs": sizes.runs,
        "float64": x.double().sum().item(),
    }
    return entry(
        "x = torch.rand(n) (seed 0, drawn on the CPU): x.sum() on the CPU and on the device, the device "
        "sum repeated, and the float64 sum",
        "sums (dimensionless); count of distinct results",
        value,
    )


def batch_invariance(device, sizes) -> dict:
    """(a[:n] @ b) against (a @ b)[:n]: does a row's result depend on the batch it is computed in?"""
    m, k = sizes.batch_shape
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        a, b = seeded(m, k, device=device).to(dtype), seeded(k, k, seed=1, device=device).to(dtype)
        full = a @ b
        for n in sizes.batch_ns:
            part = a[:n] @ b
            diff = (part.double() - full[:n].double()).abs().max().item()
            rows.append(
                {
                    "dtype": str(dtype).replace("torch.", ""),
                    "n": n,
                    "bitwise_equal": diff == 0.0,
                    "max_abs_diff": diff,
                }
            )
    return entry(
        f"({m} x {k}) @ ({k} x {k}): the first n rows computed alone vs sliced from the full product",
        "max absolute difference; bitwise equality",
        rows,
        m=m,
        k=k,
    )


def half_cumsum(device, sizes) -> dict:
    """fp16 cumsum on the CPU and the device against float64 (PyTorch issue #180150)."""
    x = torch.rand(sizes.cumsum_n, generator=torch.Generator().manual_seed(0)).half()
    exact = x.double().cumsum(0)
    value = {"n": sizes.cumsum_n}
    for label, result in (("cpu", x.cumsum(0)), ("device", x.to(device).cumsum(0).cpu())):
        value[label] = {
            "max_rel_error": float(((result.double() - exact).abs() / exact).max()),
            "last": float(result[-1]),
            "exact_last": float(exact[-1]),
        }
    return entry(
        "torch.rand(n).half().cumsum(0) on the CPU and on the device, against the float64 cumsum",
        "relative error (dimensionless); values of the last element",
        value,
    )


def small_ops(device, sizes) -> dict:
    mats = seeded(100, 3, 3, device="cpu") + 3 * torch.eye(3)
    on_device = mats.to(device)
    one = torch.ones(1, device=device)

    def hundred_inverses(m):
        return lambda: [torch.linalg.inv(m[i]) for i in range(len(m))]

    value = {
        "add_1_element_device": median_ms(lambda: one + one, device, sizes.reps),
        "inv_3x3_x100_loop_device": median_ms(hundred_inverses(on_device), device, sizes.reps),
        "inv_3x3_x100_loop_cpu": median_ms(hundred_inverses(mats), torch.device("cpu"), sizes.reps),
        "inv_3x3_x100_batched_device": median_ms(lambda: torch.linalg.inv(on_device), device, sizes.reps),
    }
    return entry(
        "tiny operations where launch overhead dominates: a 1-element add, and 100 inverses of "
        "3x3 matrices one by one (PyTorch issue #2219) or as one batch",
        "milliseconds per call",
        value,
    )


def deterministic_cost(device, sizes) -> dict:
    n, bins = sizes.atomics_n * 10, 1000
    src = seeded(n, device=device)
    idx = torch.randint(0, bins, (n,), generator=torch.Generator().manual_seed(1)).to(device)
    torch.manual_seed(0)
    net = small_cnn(64, side=32).to(device)
    x, target = (
        seeded(sizes.conv_batch, 3, 32, 32, device=device),
        seeded(sizes.conv_batch, 10, device=device),
    )

    def train_step():
        net.zero_grad(set_to_none=True)
        (net(x) - target).square().mean().backward()

    value = {}
    for name, fn in (
        ("index_add_", lambda: torch.zeros(bins, device=device).index_add_(0, idx, src)),
        ("cnn_train_step", train_step),
    ):
        value[name] = {}
        for label, enabled in (("default", False), ("deterministic", True)):
            with deterministic(enabled):
                try:
                    value[name][label] = median_ms(fn, device, sizes.reps)
                except RuntimeError as exc:  # an op without a deterministic implementation
                    value[name][label] = {"error": str(exc).splitlines()[0]}
        if all("median_ms" in value[name][label] for label in ("default", "deterministic")):
            ratio = value[name]["deterministic"]["median_ms"] / value[name]["default"]["median_ms"]
            value[name]["slowdown"] = ratio
    return entry(
        "the same work with and without deterministic mode: index_add_ of many values into 1000 bins, "
        "and a small CNN's forward and backward pass",
        "milliseconds; slowdown as a ratio",
        value,
        index_add_n=n,
    )


def checkpoint(device, sizes, out_dir: Path) -> dict:
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 2).to(device)
    path = out_dir / CHECKPOINT
    torch.save(layer.state_dict(), path)
    state = {k: v.cpu().tolist() for k, v in layer.state_dict().items()}
    return entry(
        "torch.save(nn.Linear(4, 2).state_dict()) with the parameters on the device (seed 0)",
        "file name and sha256; parameter values as lists",
        {
            "file": CHECKPOINT,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "saved_from": str(device),
            "state": state,
        },
    )


# The measurements that time something: each starts after a warm-up (see `record`).
TIMED = {"matmul_sweep", "elementwise_sweep", "transfer_bandwidth", "small_ops", "deterministic_cost"}

MEASUREMENTS = (
    rng_after_seed,
    index_add_spread,
    scatter_add_spread,
    conv_backward_spread,
    cudnn_benchmark_processes,
    tf32_matmul_error,
    tf32_conv_error,
    model_cpu_vs_gpu,
    matmul_sweep,
    elementwise_sweep,
    transfer_bandwidth,
    small_ops,
    deterministic_cost,
    sum_orders,
    batch_invariance,
    half_cumsum,
)


def driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def provenance(device: torch.device, dry: bool, argv: list[str]) -> dict:
    p = {
        "command": "python " + " ".join(Path(argv[0]).name if i == 0 else a for i, a in enumerate(argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "dry_run": dry,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "cpu_count": os.cpu_count(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "alone": "run before the test suite, with nothing else on the machine (tools/gpu_pass.sh)",
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        p.update(
            device_name=props.name,
            capability=f"{props.major}.{props.minor}",
            multiprocessors=props.multi_processor_count,
            memory_gib=round(props.total_memory / 2**30, 1),
            driver=driver_version(),
        )
    else:
        p.update(device_name=f"CPU ({platform.machine()}), dry run")
    return p


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` whole or not at all (a killed run leaves the previous file)."""
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    scratch.replace(path)


def record(out_dir: Path, dry: bool, argv: list[str]) -> dict:
    device = torch.device("cuda" if torch.cuda.is_available() and not dry else "cpu")
    sizes = Sizes.for_run(dry)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    data = {"schema": SCHEMA, "provenance": provenance(device, dry, argv), "measurements": {}}
    partial = out_dir / PARTIAL
    warmed = False
    for measure in MEASUREMENTS:
        t = time.perf_counter()
        if measure.__name__ in TIMED:
            first = not warmed
            seconds = sizes.first_warm_up_s if first else sizes.warm_up_s
            warm = warm_up(device, seconds, sizes.warm_up_max_s)
            if first:
                data["provenance"]["warm_up"] = warm
            print(f"{'  warm-up':28} {warm['seconds']:6.1f} s, SM clock {warm['sm_clock_mhz_before']} -> "
                  f"{warm['sm_clock_mhz_after']} MHz (max {warm['sm_clock_mhz_max']})", flush=True)
            warmed = True
        result = measure(device, sizes)
        if measure.__name__ in TIMED:
            result.setdefault("settings", {})["sm_clock_mhz_after_warm_up"] = warm["sm_clock_mhz_after"]
        data["measurements"][measure.__name__] = result
        write_json(partial, data)
        print(f"{measure.__name__:28} {time.perf_counter() - t:6.1f} s", flush=True)
    data["measurements"]["checkpoint"] = checkpoint(device, sizes, out_dir)
    data["provenance"]["seconds"] = round(time.perf_counter() - start, 1)
    target = out_dir / FILENAME
    write_json(partial, data)
    load_gpu_reference(partial, allow_dry_run=dry)  # the lessons' loader must accept what we wrote
    partial.replace(target)
    size = sum(f.stat().st_size for f in out_dir.iterdir() if f.name in (FILENAME, CHECKPOINT))
    print(f"wrote {target} ({size / 1024:.0f} KiB with the checkpoint) in {data['provenance']['seconds']} s")
    return data


def set_cublas_config_if_checked() -> None:
    """Before any CUDA work: where the installed torch still checks CUBLAS_WORKSPACE_CONFIG
    (releases before 2.10), set it, so that deterministic mode may use cuBLAS; otherwise leave it."""
    release = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if release < CHECKED_CUBLAS_CONFIG_BEFORE:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="run on the CPU with tiny sizes (tests the recorder)"
    )
    parser.add_argument(
        "--out", type=Path, help="output folder (default: the shipped data; a temp dir for --dry-run)"
    )
    parser.add_argument("--child-conv", help=argparse.SUPPRESS)
    args = parser.parse_args(argv[1:])
    set_cublas_config_if_checked()
    if args.child_conv:
        _child_conv(args.child_conv)
        return 0
    if not args.dry_run and not torch.cuda.is_available():
        print("record_gpu.py needs a CUDA device (use --dry-run to test it on the CPU)", file=sys.stderr)
        return 2
    out = args.out or (
        Path(tempfile.mkdtemp(prefix="gpu-reference-dry-")) if args.dry_run else reference_dir()
    )
    record(out, args.dry_run, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

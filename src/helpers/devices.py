"""Where code runs: choosing a device, reporting the environment, finding a module's devices.

Introduced in ``00_start_here``; ``module_devices`` returns in lesson 06 (moving models).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable

import torch

from helpers.show.tables import Table

__all__ = [
    "ABSENT",
    "RESULT_ENV_VARS",
    "available_devices",
    "best_device",
    "describe_gpu",
    "environment_report",
    "environment_summary",
    "module_devices",
    "precision_settings",
    "read_setting",
    "usable_device",
]


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def available_devices() -> list[str]:
    """Device types usable here, best first: any of ``"cuda"``, ``"mps"``, and always ``"cpu"``.

    Introduced in ``00_start_here``.
    """
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if _mps_available():
        found.append("mps")
    return found + ["cpu"]


def best_device(prefer: str | torch.device | None = None) -> torch.device:
    """Return the device lessons should use: CUDA, then MPS, then the CPU.

    ``prefer`` overrides the choice (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``); asking for a
    device this machine does not have raises ``ValueError`` rather than silently falling back, as
    do a name torch does not know and a device type other than those three.
    Introduced in ``00_start_here``.
    """
    if prefer is None:
        return torch.device(available_devices()[0])
    device = usable_device(prefer, "prefer")
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"prefer: the course uses cpu, cuda or mps, not {device.type!r}")
    return device


def usable_device(value: str | torch.device, name: str) -> torch.device:
    """``value`` as a ``torch.device``; ``TypeError``/``ValueError`` naming ``name`` unless it is a
    device name torch knows and, for CUDA and MPS, one this machine has."""
    if not isinstance(value, (str, torch.device)):
        raise TypeError(f"{name} must be a str or a torch.device, got {type(value).__name__}")
    try:
        device = torch.device(value)
    except RuntimeError:
        raise ValueError(f"{name} is not a device torch knows: {value!r}") from None
    if device.type in ("cuda", "mps") and device.type not in available_devices():
        raise ValueError(
            f"{name}: {device.type!r} was requested but is not available on this machine; "
            f"available: {', '.join(available_devices())}"
        )
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(
            f"{name}: {device} was requested but this machine has {torch.cuda.device_count()} CUDA device(s)"
        )
    return device


def describe_gpu(index: int = 0) -> str:
    """CUDA device ``index`` in a few words: its name, compute capability and number of SMs
    (streaming multiprocessors), and ``no TF32`` where it has no TF32 tensor cores.

    For example ``"Tesla T4 (compute capability 7.5, 40 SMs, no TF32)"``. TF32 needs compute
    capability 8.0 (Ampere) or newer: PyTorch's ``torch.cuda.is_tf32_supported`` answers from the
    same number (``major >= 8``), and before that the TF32 switches are accepted and keep float32 arithmetic.
    On a ROCm build the number is AMD's, so nothing is said about TF32 there.
    Introduced in ``00_start_here``, through ``environment_report``.
    """
    props = torch.cuda.get_device_properties(index)
    notes = [f"compute capability {props.major}.{props.minor}", f"{props.multi_processor_count} SMs"]
    if torch.version.hip is None and props.major < 8:
        notes.append("no TF32")
    return f"{props.name} ({', '.join(notes)})"


# Environment variables that change which numbers this process computes; most are read once, when
# the process or the library starts. Lesson 12 explains each.
RESULT_ENV_VARS = (
    "OMP_NUM_THREADS",  # intra-op threads at start-up (PyTorch's CPU threading notes)
    "MKL_NUM_THREADS",  # MKL's threads, and PyTorch's intra-op threads too: it takes precedence over
    #                     OMP_NUM_THREADS (intraop_default_num_threads, ATen/ParallelCommon.cpp)
    "ATEN_CPU_CAPABILITY",  # selects the SIMD level of PyTorch's own CPU kernels; on x86 the named
    #                         level is taken without checking the hardware (DispatchStub.cpp)
    "ONEDNN_MAX_CPU_ISA",  # caps the instruction set oneDNN may use (oneDNN "CPU Dispatcher Control")
    "ONEDNN_DEFAULT_FPMATH_MODE",  # oneDNN's default math mode; BF16 lets float32 primitives compute
    #                                in bfloat16 where kernels exist (oneDNN "floating-point math mode")
    "DNNL_DEFAULT_FPMATH_MODE",  # the older name of the same variable, still read
    "MKL_CBWR",  # MKL's Conditional Numerical Reproducibility branch (oneMKL developer guide)
    "CUBLAS_WORKSPACE_CONFIG",  # cuBLAS workspace; its reproducibility with several streams
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",  # "1": CUDA float32 matmuls start with TF32 on (Context.h)
    "NVIDIA_TF32_OVERRIDE",  # "0": NVIDIA's libraries turn TF32 off, whatever PyTorch's flags say
    #                          (secondary source: DeepRec's "NVIDIA TF32" page)
)

ABSENT = object()  # what read_setting returns for a setting this torch lacks


def read_setting(read: Callable[[], object]) -> object:
    """Call ``read``: ``ABSENT`` if this torch lacks the setting, a short note if reading it fails.

    Reading the legacy precision flags after the new ``fp32_precision`` API was used raises a
    RuntimeError on recent torch; the report says so instead of failing.
    """
    try:
        return read()
    except AttributeError:
        return ABSENT
    except RuntimeError as exc:
        why = "legacy and new precision APIs mixed" if "mix" in str(exc) else type(exc).__name__
        return f"(unreadable: {why})"


def precision_settings() -> list[tuple[str, object]]:
    """The reduced-precision switches, read through one API only: mixing the legacy ``allow_tf32``
    flags with the ``fp32_precision`` settings (torch 2.9+) can raise or warn, so newer torch
    reports the new ones. Settings this torch does not have are left out."""
    backends = torch.backends
    rows: list[tuple[str, object]] = [
        ("float32 matmul precision", read_setting(torch.get_float32_matmul_precision)),
    ]
    if hasattr(backends, "fp32_precision"):
        rows += [
            ("fp32_precision (global)", read_setting(lambda: backends.fp32_precision)),
            ("fp32_precision (oneDNN matmul)", read_setting(lambda: backends.mkldnn.matmul.fp32_precision)),
            ("fp32_precision (oneDNN conv)", read_setting(lambda: backends.mkldnn.conv.fp32_precision)),
            ("fp32_precision (oneDNN rnn)", read_setting(lambda: backends.mkldnn.rnn.fp32_precision)),
            ("fp32_precision (CUDA matmul)", read_setting(lambda: backends.cuda.matmul.fp32_precision)),
            ("fp32_precision (cuDNN conv)", read_setting(lambda: backends.cudnn.conv.fp32_precision)),
            ("fp32_precision (cuDNN rnn)", read_setting(lambda: backends.cudnn.rnn.fp32_precision)),
        ]
    else:
        rows += [
            ("TF32 for CUDA matmul (allow_tf32)", read_setting(lambda: backends.cuda.matmul.allow_tf32)),
            ("TF32 for cuDNN conv (allow_tf32)", read_setting(lambda: backends.cudnn.allow_tf32)),
        ]
    matmul = backends.cuda.matmul
    rows += [
        ("cuBLAS fp16 reduced-precision reduction",
         read_setting(lambda: matmul.allow_fp16_reduced_precision_reduction)),
        ("cuBLAS bf16 reduced-precision reduction",
         read_setting(lambda: matmul.allow_bf16_reduced_precision_reduction)),
        ("cuBLAS fp16 accumulation", read_setting(lambda: matmul.allow_fp16_accumulation)),
    ]
    return [(name, value) for name, value in rows if value is not ABSENT]


def _environment_variables() -> list[tuple[str, object]]:
    """One row per variable of ``RESULT_ENV_VARS``: its value, or ``unset``."""
    rows = []
    for name in RESULT_ENV_VARS:
        value = os.environ.get(name)
        rows.append((f"${name}", "unset" if value is None else (value if value else "(empty)")))
    return rows


def environment_report() -> Table:
    """A table of everything that decides which numbers this machine produces.

    Python and torch versions, CUDA/cuDNN, each GPU (``describe_gpu``: name, compute capability,
    SMs, and whether it lacks TF32), intra- and
    inter-op threads, the CPU capability PyTorch's kernels use, MKL and oneDNN, the reduced-precision
    (TF32, bfloat16, fp16 reduction) and determinism switches, and the environment variables that
    change results (``RESULT_ENV_VARS``), set or unset.
    Introduced in ``00_start_here``; the other lessons print ``environment_summary()`` instead.
    """
    cpu_capability = read_setting(lambda: torch.backends.cpu.get_cpu_capability())
    rows: list[tuple[str, object]] = [
        ("Python", platform.python_version()),
        ("platform", f"{platform.system()} {platform.machine()}"),
        ("torch", torch.__version__),
        ("CUDA available", torch.cuda.is_available()),
        ("CUDA (torch built with)", torch.version.cuda),
        ("cuDNN", torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None),
    ]
    if torch.cuda.is_available():
        rows += [(f"cuda:{i}", describe_gpu(i)) for i in range(torch.cuda.device_count())]
    rows += [
        ("MPS available", _mps_available()),
        ("intra-op threads", torch.get_num_threads()),
        ("inter-op threads", torch.get_num_interop_threads()),
    ]
    if cpu_capability is not ABSENT:
        rows.append(("CPU capability (SIMD kernels)", cpu_capability))
    rows += [
        ("MKL", torch.backends.mkl.is_available()),
        ("oneDNN (mkldnn)", torch.backends.mkldnn.is_available()),
    ]
    rows += precision_settings()
    rows += [
        ("deterministic algorithms", torch.are_deterministic_algorithms_enabled()),
        ("cudnn.deterministic", torch.backends.cudnn.deterministic),
        ("cudnn.benchmark", torch.backends.cudnn.benchmark),
        ("default dtype", str(torch.get_default_dtype()).replace("torch.", "")),
    ]
    rows += _environment_variables()
    return Table(["setting", "value"], rows, title="Environment")


def environment_summary() -> str:
    """One line for a lesson's first cell: torch and Python, the devices, threads and CPU capability,
    and any result-changing environment variable that is set (``environment_report`` has the rest).

    Introduced in lesson 01; lesson 00 shows the full report.
    """
    capability = read_setting(lambda: torch.backends.cpu.get_cpu_capability())
    cpu = "CPU" if capability is ABSENT else f"CPU ({capability})"
    parts = [
        f"torch {torch.__version__}",
        f"Python {platform.python_version()}",
        f"{cpu}, {torch.get_num_threads()} threads",
    ]
    if torch.cuda.is_available():
        parts += [f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())]
    else:
        parts.append("no CUDA device")
    if _mps_available():
        parts.append("MPS available")
    set_vars = [f"{name}={os.environ[name]}" for name in RESULT_ENV_VARS if name in os.environ]
    if set_vars:
        parts.append("set: " + " ".join(set_vars))
    return " · ".join(parts)


def module_devices(module: torch.nn.Module) -> set[torch.device]:
    """The set of devices that a module's parameters and buffers live on.

    A module has no ``.device`` attribute because its tensors may sit on several devices; an
    empty set means it has no parameters or buffers. Introduced in ``00_start_here``, used in
    lesson 06.
    """
    tensors = list(module.parameters()) + list(module.buffers())
    return {t.device for t in tensors}

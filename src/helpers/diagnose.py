"""Debugging a mismatch: record what decides the numbers, and find the first module that diverges.

``fingerprint()`` records every setting that changes which numbers this process computes, as a flat
dict that ``json.dump`` writes; ``diff_fingerprints`` lists the settings in which two such records
differ; ``python -m helpers.fingerprint`` does both from a shell (``helpers/fingerprint.py``).
``first_divergence`` runs two copies of a model and names the first module whose output differs by
more than the difference of its input explains. Introduced in lesson 12 (debugging a mismatch).
"""

from __future__ import annotations

import math
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from helpers._validate import check_mapping, check_module, check_real, check_tensor, describe
from helpers.compare import reduction_tolerances
from helpers.devices import _ABSENT, RESULT_ENV_VARS, _precision_settings, _read
from helpers.floats import FORMATS, max_ulp_distance
from helpers.tables import Table

__all__ = ["Divergence", "FINGERPRINT_ENV_VARS", "diff_fingerprints", "fingerprint", "first_divergence"]

Scalar = str | int | float | bool | None

#: The environment variables a fingerprint records: those that change results
#: (``helpers.devices.RESULT_ENV_VARS``) and ``PYTHONHASHSEED``, which orders sets of strings.
FINGERPRINT_ENV_VARS = (*RESULT_ENV_VARS, "PYTHONHASHSEED")

# Keys for the rows of helpers.devices._precision_settings (the one place that knows which
# precision API this torch has); a row not listed here gets a key made from its name.
_PRECISION_KEYS = {
    "float32 matmul precision": "precision.float32_matmul",
    "fp32_precision (global)": "precision.fp32_precision",
    "fp32_precision (oneDNN matmul)": "precision.fp32_precision.mkldnn.matmul",
    "fp32_precision (oneDNN conv)": "precision.fp32_precision.mkldnn.conv",
    "fp32_precision (oneDNN rnn)": "precision.fp32_precision.mkldnn.rnn",
    "fp32_precision (CUDA matmul)": "precision.fp32_precision.cuda.matmul",
    "fp32_precision (cuDNN conv)": "precision.fp32_precision.cudnn.conv",
    "fp32_precision (cuDNN rnn)": "precision.fp32_precision.cudnn.rnn",
    "TF32 for CUDA matmul (allow_tf32)": "precision.allow_tf32.cuda.matmul",
    "TF32 for cuDNN conv (allow_tf32)": "precision.allow_tf32.cudnn",
    "cuBLAS fp16 reduced-precision reduction": "precision.cublas.fp16_reduced_precision_reduction",
    "cuBLAS bf16 reduced-precision reduction": "precision.cublas.bf16_reduced_precision_reduction",
    "cuBLAS fp16 accumulation": "precision.cublas.fp16_accumulation",
}


def _scalar(value: object) -> Scalar:
    """``value`` as a JSON scalar: a str, int, float, bool or None stays; anything else becomes its str."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


def _cpu_name() -> str | None:
    """The CPU's model name: ``/proc/cpuinfo``'s ``model name`` (Linux), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def _library_versions() -> tuple[str | None, str | None, str | None]:
    """The MKL and oneDNN versions and the BLAS library, read from ``torch.__config__.show()``."""
    try:
        config = torch.__config__.show()
    except Exception:  # a build without the config text
        return None, None, None
    mkl = re.search(r"Math Kernel Library Version (\S+?)(?:-Product)?\s", config)
    onednn = re.search(r"(?:MKL-DNN|oneDNN)\s+v(\S+)", config)
    blas = re.search(r"BLAS_INFO=([^,\s]+)", config)
    return tuple(m.group(1) if m else None for m in (mkl, onednn, blas))  # type: ignore[return-value]


def _cuda_devices() -> str | None:
    if not torch.cuda.is_available():
        return None
    names = []
    for i in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(i)
        names.append(f"{torch.cuda.get_device_name(i)} ({major}.{minor})")
    return "; ".join(names)


def fingerprint() -> dict[str, Scalar]:
    """A flat record of every setting that decides which numbers this process computes.

    Keys are short stable strings; values are JSON scalars (str, int, float, bool or None), so
    ``json.dump`` writes it and ``json.load`` gives it back unchanged. The groups:

    * versions and hardware: ``python``, ``platform``, ``torch``, ``cuda`` (the CUDA torch was
      built with), ``cudnn``, ``mkl`` and ``mkl_version``, ``onednn`` and ``onednn_version``,
      ``blas``, ``cpu`` (the CPU's model name), ``cpu_capability`` (the SIMD level of PyTorch's
      CPU kernels), ``cuda_devices`` (each GPU's name and compute capability), ``mps``;
    * ``threads.intra_op``, ``threads.inter_op``, ``default_dtype``;
    * ``precision.*``: ``precision.float32_matmul`` and the reduced-precision switches this torch
      has (the ``fp32_precision`` settings, or the older ``allow_tf32`` flags, and cuBLAS's
      reduced-precision reductions);
    * ``deterministic.*``: ``algorithms``, ``warn_only``, ``cudnn``, ``cudnn_benchmark``,
      ``fill_uninitialized_memory``;
    * ``env.NAME`` for each of ``FINGERPRINT_ENV_VARS``: its value, or None when unset.

    A setting this torch does not have is left out. Introduced in lesson 12.
    """
    mkl_version, onednn_version, blas = _library_versions()
    capability = _read(lambda: torch.backends.cpu.get_cpu_capability())
    mps = getattr(torch.backends, "mps", None)
    record: dict[str, object] = {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "mkl": torch.backends.mkl.is_available(),
        "mkl_version": mkl_version,
        "onednn": torch.backends.mkldnn.is_available(),
        "onednn_version": onednn_version,
        "blas": blas,
        "cpu": _cpu_name(),
        "cpu_capability": None if capability is _ABSENT else capability,
        "cuda_devices": _cuda_devices(),
        "mps": bool(mps is not None and mps.is_available()),
        "threads.intra_op": torch.get_num_threads(),
        "threads.inter_op": torch.get_num_interop_threads(),
        "default_dtype": str(torch.get_default_dtype()).replace("torch.", ""),
    }
    for name, value in _precision_settings():
        key = _PRECISION_KEYS.get(name) or "precision." + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
        record[key] = value
    determinism = {
        "deterministic.algorithms": _read(torch.are_deterministic_algorithms_enabled),
        "deterministic.warn_only": _read(torch.is_deterministic_algorithms_warn_only_enabled),
        "deterministic.cudnn": _read(lambda: torch.backends.cudnn.deterministic),
        "deterministic.cudnn_benchmark": _read(lambda: torch.backends.cudnn.benchmark),
        "deterministic.fill_uninitialized_memory": _read(
            lambda: torch.utils.deterministic.fill_uninitialized_memory
        ),
    }
    record.update({k: v for k, v in determinism.items() if v is not _ABSENT})
    for name in FINGERPRINT_ENV_VARS:
        record[f"env.{name}"] = os.environ.get(name)
    return {key: _scalar(value) for key, value in record.items()}


def _check_json_scalar(value: object, name: str) -> Scalar:
    """A JSON scalar: str, int, float (not NaN or infinite), bool or None."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number (a NaN never equals itself), got {value}")
        return value
    raise TypeError(f"{name} must be a str, int, float, bool or None (a JSON scalar), got {describe(value)}")


def _differ(x: object, y: object) -> bool:
    """True when two JSON scalars differ; ``True`` and ``1`` differ, ``1`` and ``1.0`` do not."""
    if isinstance(x, bool) != isinstance(y, bool) or isinstance(x, str) != isinstance(y, str):
        return True
    return x != y


def diff_fingerprints(
    a: Mapping[str, object], b: Mapping[str, object], *, title: str = "Settings that differ"
) -> Table:
    """The settings in which two fingerprints differ: a Table with headers ``["setting", "a", "b"]``.

    One row per key whose values differ, sorted by key; a key that only one side has shows
    ``"(absent)"`` on the other. Zero rows (``len(table.rows) == 0``) when nothing differs. ``a``
    and ``b`` are what :func:`fingerprint` returns or what ``json.load`` reads back from a file it
    was written to. Introduced in lesson 12.

    Raises:
        TypeError: ``a`` or ``b`` is not a mapping, has a key that is not a str, or a value that is
            not a JSON scalar (str, int, float, bool or None), named as in ``a['torch']``.
        ValueError: a value is a NaN or an infinity.
    """
    a = check_mapping(a, "a", value_check=_check_json_scalar)
    b = check_mapping(b, "b", value_check=_check_json_scalar)
    absent = "(absent)"
    rows = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b or _differ(a[key], b[key]):
            rows.append((key, a.get(key, absent), b.get(key, absent)))
    return Table(["setting", "a", "b"], rows, title=title)


# ============================================================================ first_divergence

ROOT = "(model)"  # the name first_divergence gives the model itself (named_modules() calls it "")


@dataclass(frozen=True)
class Divergence:
    """What :func:`first_divergence` found. Introduced in lesson 12.

    ``module`` is the qualified name (as ``named_modules()`` gives it; ``"(model)"`` for the model
    itself) of the first module whose output differs by more than its input's difference explains,
    or None when no module does. ``table`` has one row per module call, in the order the calls
    finished (a container after the modules it ran): module, type, output shape, K, max rel error,
    max ULP, tolerance, verdict.
    """

    module: str | None
    table: Table

    def __str__(self) -> str:
        found = "no module diverges" if self.module is None else f"first divergence: {self.module}"
        return f"{self.table}\n{found}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        found = "no module diverges" if self.module is None else f"first divergence: <b>{self.module}</b>"
        return f"{self.table._repr_html_()}<p>{found}</p>"


def _prod(values) -> int:
    return math.prod(int(v) for v in values)


def _spatial_dims(module: torch.nn.Module) -> int:
    """1, 2 or 3 for a module whose class name ends in 1d, 2d or 3d (1 otherwise)."""
    match = re.search(r"([123])d$", type(module).__name__)
    return int(match.group(1)) if match else 1


def _first_tensor(args: tuple) -> torch.Tensor | None:
    return next((a for a in args if isinstance(a, torch.Tensor)), None)


def _reduction_length(module: torch.nn.Module, args: tuple, output: torch.Tensor) -> int:
    """How many terms each output element of ``module`` sums (its K); 1 for elementwise modules."""
    nn = torch.nn
    x = _first_tensor(args)
    if isinstance(module, nn.Linear):
        return module.in_features
    if isinstance(module, nn.Bilinear):
        return module.in1_features * module.in2_features
    if isinstance(module, nn.modules.conv._ConvNd):
        return module.in_channels // module.groups * _prod(module.kernel_size)
    if isinstance(module, (nn.LayerNorm, nn.RMSNorm)) and module.normalized_shape:
        return _prod(module.normalized_shape)
    if isinstance(module, nn.GroupNorm) and x is not None and x.dim() >= 2:
        return module.num_channels // module.num_groups * _prod(x.shape[2:])
    if isinstance(module, nn.modules.instancenorm._InstanceNorm) and x is not None:
        return _prod(x.shape[-_spatial_dims(module):])
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and x is not None and x.dim() >= 2:
        if module.training or not module.track_running_stats:  # statistics of this batch
            return max(1, x.numel() // x.shape[1])
        return 1
    if isinstance(module, (nn.Softmax, nn.LogSoftmax, nn.Softmin)) and x is not None and x.dim() > 0:
        return int(x.shape[module.dim if module.dim is not None else -1])
    if isinstance(module, (nn.modules.pooling._AvgPoolNd, nn.modules.pooling._LPPoolNd)):
        size = module.kernel_size
        return _prod(size) if isinstance(size, (tuple, list)) else int(size) ** _spatial_dims(module)
    if isinstance(module, nn.modules.pooling._AdaptiveAvgPoolNd) and x is not None:
        n = _spatial_dims(module)
        return max(1, -(-_prod(x.shape[-n:]) // max(1, _prod(output.shape[-n:]))))  # ceil(in / out)
    return 1


def _tensors(value: object) -> list[torch.Tensor]:
    """The tensors in ``value``, a tensor or a (nested) tuple, list or dict of them."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _tensors(v)]
    return []


@dataclass
class _Call:
    """One forward call of one module, recorded by the hooks."""

    name: str
    module: torch.nn.Module
    start: int  # when the call started (a counter of calls)
    inputs: list[torch.Tensor]
    output: object = None


def _run_recorded(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[_Call]:
    """Run ``model`` on ``inputs`` with hooks on every module; the calls in the order they finished.

    Inputs are cloned when a call starts, before any hook the caller registered (which may cast
    them: that belongs to the module), and outputs after the caller's hooks, so that an in-place
    module later in the model cannot overwrite them. Runs without gradients; hooks are removed and
    buffers put back (a BatchNorm in training mode updates its statistics) even on error.
    """
    finished: list[_Call] = []
    stack: list[_Call] = []
    counter = [0]

    def before(name):
        def hook(module, args, kwargs):
            tensors = [t.detach().clone() for t in _tensors(args) + _tensors(kwargs)]
            stack.append(_Call(name, module, counter[0], tensors))
            counter[0] += 1

        return hook

    def after(module, args, kwargs, output):
        call = stack.pop()
        call.output = output.detach().clone() if isinstance(output, torch.Tensor) else None
        finished.append(call)

    handles = []
    saved = [(buf, buf.detach().clone()) for buf in model.buffers()]
    try:
        for name, module in model.named_modules():
            pre = module.register_forward_pre_hook(before(name or ROOT), prepend=True, with_kwargs=True)
            handles += [pre, module.register_forward_hook(after, with_kwargs=True)]
        with torch.no_grad():
            model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
        with torch.no_grad():  # a forward call in training mode updates BatchNorm's statistics
            for buf, value in saved:
                buf.copy_(value)
    return finished


def _placement(model: torch.nn.Module) -> tuple[torch.device, torch.dtype | None]:
    """The device of the model's first parameter or buffer, and the dtype of its first floating one."""
    tensors = list(model.parameters()) + list(model.buffers())
    device = tensors[0].device if tensors else torch.device("cpu")
    dtype = next((t.dtype for t in tensors if t.is_floating_point()), None)
    return device, dtype


def _moved(inputs: tuple[torch.Tensor, ...], model: torch.nn.Module) -> tuple[torch.Tensor, ...]:
    device, dtype = _placement(model)
    return tuple(
        x.to(device=device, dtype=dtype) if dtype is not None and x.is_floating_point() else x.to(device)
        for x in inputs
    )


def _error(
    a: torch.Tensor, b: torch.Tensor, device: torch.device
) -> tuple[float, torch.Tensor, torch.Tensor]:
    """``(e, |a - b|, |a|)`` in float64, with ``e = max |a - b| / (|a| + mean |a|)``.

    Relative to each entry plus the typical entry, so entries near zero (where a relative error
    means little) are judged on the scale of the others, as lesson 10's ``atol = rtol * scale``
    does: ``e`` is the smallest rtol that passes with that atol. Entries that are NaN or infinite
    in one and not equal in the other count as an infinite error.
    """
    a64 = a.detach().to(device=device, dtype=torch.float64)
    b64 = b.detach().to(device=device, dtype=torch.float64)
    same = (a64 == b64) | (torch.isnan(a64) & torch.isnan(b64))
    diff = torch.where(same, torch.zeros_like(a64), (a64 - b64).abs())
    diff = torch.nan_to_num(diff, nan=math.inf)
    size = a64.abs()
    finite = torch.isfinite(size)
    scale = float(size[finite].mean()) if bool(finite.any()) else 0.0
    denom = torch.nan_to_num(size, posinf=0.0) + scale
    rel = torch.where(diff == 0, torch.zeros_like(diff), diff / denom)
    rel = torch.nan_to_num(rel, nan=math.inf)
    return (float(rel.max()) if rel.numel() else 0.0), diff, size


def _incoming_error(a: _Call, b: _Call, device: torch.device) -> float:
    """The largest error ``e`` among the call's tensor inputs (infinite when they do not pair up)."""
    if len(a.inputs) != len(b.inputs):
        return math.inf
    worst = 0.0
    for x, y in zip(a.inputs, b.inputs, strict=True):
        if x.shape != y.shape:
            return math.inf
        if x.is_floating_point() and y.is_floating_point():
            if x.numel():
                worst = max(worst, _error(x, y, device)[0])
        elif not torch.equal(x.cpu(), y.cpu()):
            return math.inf
    return worst


def _coarser(x: torch.dtype, y: torch.dtype) -> torch.dtype:
    return max((x, y), key=lambda d: torch.finfo(d).eps)


def _own_tolerance(dtype: torch.dtype, k: int, safety: float) -> float:
    if dtype in FORMATS:
        return reduction_tolerances(dtype, k, safety=safety)[0]
    return safety * torch.finfo(dtype).eps / 2 * math.sqrt(k)  # a format compare has no defaults for


def _max_ulp(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> int | None:
    if dtype not in FORMATS:
        return None
    x, y = a.detach().cpu().to(dtype), b.detach().cpu().to(dtype)
    if x.numel() == 0 or bool(torch.isnan(x).any() or torch.isnan(y).any()):
        return None
    return max_ulp_distance(x, y)


def _shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _judge(
    a: _Call,
    b: _Call,
    e_in: float,
    device: torch.device,
    safety: float,
    atol: float | None,
    amplification: float,
) -> tuple[tuple, float, bool] | None:
    """``(row without the name, e, passed)`` for one call; None when its output is not a real tensor."""
    x, y = a.output, b.output
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.is_complex() or y.is_complex():
        return None
    kind = type(a.module).__name__
    if type(b.module) is not type(a.module):
        kind += f" / {type(b.module).__name__}"
    if x.shape != y.shape:
        return (kind, f"{_shape(x)} / {_shape(y)}", "-", math.inf, None, "-", "FAIL (shape)"), math.inf, False
    if not (x.is_floating_point() and y.is_floating_point()):  # integer or bool outputs must be equal
        equal = x.dtype == y.dtype and torch.equal(x.cpu(), y.cpu())
        e = 0.0 if equal else math.inf
        return (kind, _shape(x), "-", e, None, 0.0, "pass" if equal else "FAIL"), e, equal
    dtype = _coarser(x.dtype, y.dtype)
    k = _reduction_length(a.module, tuple(a.inputs), x)
    tol = _own_tolerance(dtype, k, safety) + amplification * e_in
    if x.numel() == 0:
        return (kind, _shape(x), k, 0.0, None, tol, "pass"), 0.0, True
    e, diff, size = _error(x, y, device)
    if atol is None:
        ok = e <= tol
    else:
        ok = math.isfinite(e) and bool((diff <= atol + tol * torch.nan_to_num(size, posinf=0.0)).all())
    return (kind, _shape(x), k, e, _max_ulp(x, y, dtype), tol, "pass" if ok else "FAIL"), e, ok


def _check_inputs(inputs: object) -> tuple[torch.Tensor, ...]:
    if isinstance(inputs, torch.Tensor):
        return (check_tensor(inputs, "inputs"),)
    if not isinstance(inputs, (tuple, list)):
        raise TypeError(f"inputs must be a tensor or a tuple of tensors, got {describe(inputs)}")
    if not inputs:
        raise ValueError("inputs is an empty tuple: give the model at least one tensor")
    return tuple(check_tensor(x, f"inputs[{i}]") for i, x in enumerate(inputs))


def _check_same_structure(model_a: torch.nn.Module, model_b: torch.nn.Module) -> None:
    names_a = [name for name, _ in model_a.named_modules()]
    names_b = [name for name, _ in model_b.named_modules()]
    for i in range(max(len(names_a), len(names_b))):
        x = names_a[i] if i < len(names_a) else None
        y = names_b[i] if i < len(names_b) else None
        if x != y:
            if x is None:
                where = f"model_b has the module {y!r}, which model_a lacks"
            elif y is None:
                where = f"model_a has the module {x!r}, which model_b lacks"
            elif x not in names_b:
                where = f"model_a has the module {x!r}, which model_b lacks (it has {y!r} there)"
            else:
                where = f"model_b has the module {y!r} where model_a has {x!r}"
            raise ValueError(f"model_a and model_b must have the same modules (same architecture): {where}")


def first_divergence(
    model_a: torch.nn.Module,
    model_b: torch.nn.Module,
    inputs,
    *,
    rtol_safety: float = 4.0,
    atol: float | None = None,
    amplification: float = 2.0,
) -> Divergence:
    """Run both models on ``inputs`` and name the first module whose output diverges.

    ``inputs`` is a tensor or a tuple of tensors; each model gets them on the device of its first
    parameter, floating ones in the dtype of its first floating parameter. Every module's output
    (the model's own too, named ``"(model)"``; modules whose output is not a tensor are skipped)
    and inputs are recorded with hooks, ``model_a`` being the reference: ``model_b``'s tensors are
    moved to ``model_a``'s device and both compared in float64. A module's error is
    ``e = max |a - b| / (|a| + mean |a|)``: relative to each entry plus the output's typical size,
    so that entries near zero are judged on the scale of the others (lesson 10's
    ``atol = rtol * scale``).

    The rule: a module passes when ``e <= tol``, where ``tol = rtol(K) + amplification * e_in``.
    ``rtol(K)`` is ``reduction_tolerances(dtype, K, safety=rtol_safety)``'s rtol for the coarser
    of the two output dtypes and the module's reduction length ``K`` (``in_features`` for a Linear,
    ``in_channels / groups * prod(kernel_size)`` for a convolution, the normalized size for the
    norms, the softmax length, 1 for elementwise modules), and ``e_in`` is the largest error among
    the module's inputs and, for a container, the outputs of the modules it ran. In words: each
    module may add the rounding error of its own sums, and may pass on, at most doubled by
    default, the error it was given; the first that does more is blamed.

    With ``atol`` given, a module passes when ``|a - b| <= atol + tol * |a|`` entry by entry.
    The table has a row for each call, in the order the calls finished (a container after the
    modules it ran); a module called twice is named ``"act (call 2)"`` the second time, and calls
    whose output is not a tensor (an LSTM's tuple) have no row. The models' train/eval modes are left as the caller set them (a Dropout in training mode is a
    difference to find); nothing is recorded for gradients; hooks are removed and buffers that a
    forward call changes (a BatchNorm's running statistics in training mode) are restored, even on
    error. The models may be the same object. Introduced in lesson 12.

    Raises:
        TypeError: a model is not a ``torch.nn.Module``, ``inputs`` is not a tensor or a tuple of
            dense tensors, or a number is not a real number.
        ValueError: the models do not have the same module names (the message names the first
            that differs), they ran different modules, ``inputs`` is an empty tuple, or
            ``rtol_safety`` is not positive, ``atol`` or ``amplification`` negative.
    """
    check_module(model_a, "model_a")
    check_module(model_b, "model_b")
    inputs = _check_inputs(inputs)
    rtol_safety = check_real(rtol_safety, "rtol_safety", positive=True)
    if atol is not None:
        atol = check_real(atol, "atol", min=0.0)
    amplification = check_real(amplification, "amplification", min=0.0)
    _check_same_structure(model_a, model_b)

    calls_a = _run_recorded(model_a, _moved(inputs, model_a))
    calls_b = _run_recorded(model_b, _moved(inputs, model_b))
    if [c.name for c in calls_a] != [c.name for c in calls_b]:
        i = next(
            (i for i, (x, y) in enumerate(zip(calls_a, calls_b)) if x.name != y.name),
            min(len(calls_a), len(calls_b)),
        )
        x = calls_a[i].name if i < len(calls_a) else "nothing"
        y = calls_b[i].name if i < len(calls_b) else "nothing"
        raise ValueError(
            f"model_a and model_b ran different modules: call {i + 1} to finish was {x!r} in model_a "
            f"and {y!r} in model_b"
        )

    device = _placement(model_a)[0]
    seen: dict[str, int] = {}
    errors: list[float | None] = []  # each call's e; None for one whose output is not compared
    rows, blamed = [], None
    for i, (a, b) in enumerate(zip(calls_a, calls_b, strict=True)):
        seen[a.name] = seen.get(a.name, 0) + 1
        label = a.name if seen[a.name] == 1 else f"{a.name} (call {seen[a.name]})"
        inner = [errors[j] for j in range(i) if calls_a[j].start > a.start and errors[j] is not None]
        e_in = max([_incoming_error(a, b, device), *inner])
        judged = _judge(a, b, e_in, device, rtol_safety, atol, amplification)
        errors.append(None if judged is None else judged[1])
        if judged is not None:
            row, _, ok = judged
            rows.append((label, *row))
            if not ok and blamed is None:
                blamed = label
    headers = ["module", "type", "output shape", "K", "max rel error", "max ULP", "tolerance", "verdict"]
    title = "Module by module (model_a is the reference)"
    return Divergence(module=blamed, table=Table(headers, rows, title=title))

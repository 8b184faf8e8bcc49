"""The recorded GPU reference data: what a GPU did, for lessons running where there is none.

The data are measured by ``tools/record_gpu.py`` on a CUDA machine (``make record-gpu``) and
shipped in ``helpers/data/gpu_reference/``. Every measurement carries a description and a unit,
and the file carries its provenance (command, date, GPU, driver, CUDA, cuDNN, torch). The loader
validates all of it, so a malformed file fails with a message that names the problem.
Introduced in ``00_start_here``; lessons 02 to 08 display the data.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from helpers.tables import Table

__all__ = [
    "REQUIRED_MEASUREMENTS",
    "ReferenceDataError",
    "describe_reference",
    "has_gpu_reference",
    "load_gpu_reference",
    "recorded",
    "recorded_sweeps",
    "reference_dir",
    "validate_reference",
]

SCHEMA = "fp-course-gpu-reference/1"
FILENAME = "reference.json"
REQUIRED_PROVENANCE = {
    "command": str,
    "date": str,
    "dry_run": bool,
    "device_name": str,
    "torch": str,
    "python": str,
}
OPTIONAL_PROVENANCE = (
    "driver",
    "cuda",
    "cudnn",
    "capability",
    "multiprocessors",
    "memory_gib",
    "cpu_count",
    "cublas_workspace_config",
    "seconds",
)
REQUIRED_MEASUREMENTS = (
    "rng_after_seed",
    "index_add_spread",
    "scatter_add_spread",
    "conv_backward_spread",
    "cudnn_benchmark_processes",
    "tf32_matmul_error",
    "tf32_conv_error",
    "model_cpu_vs_gpu",
    "matmul_sweep",
    "elementwise_sweep",
    "transfer_bandwidth",
    "small_ops",
    "deterministic_cost",
    "sum_orders",
    "batch_invariance",
    "half_cumsum",
    "checkpoint",
)


class ReferenceDataError(ValueError):
    """The reference data file is missing a field, has a wrong type, or holds a non-finite number."""


def reference_dir() -> Path:
    """The folder of the shipped reference data (it may not hold a recording yet)."""
    return Path(__file__).resolve().parent / "data" / "gpu_reference"


def _check_finite(value: Any, where: str) -> None:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ReferenceDataError(f"{where} is {value}: recorded numbers must be finite")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, f"{where}.{key}")
        return
    raise ReferenceDataError(f"{where} has type {type(value).__name__}, which JSON data cannot hold")


def validate_reference(data: object, source: str = "reference data") -> dict:
    """Check the structure of reference data and return it; raise ``ReferenceDataError`` otherwise.

    Introduced in ``00_start_here``.
    """
    if not isinstance(data, dict):
        raise ReferenceDataError(f"{source}: the top level must be an object, not {type(data).__name__}")
    if data.get("schema") != SCHEMA:
        raise ReferenceDataError(f"{source}: 'schema' must be {SCHEMA!r}, found {data.get('schema')!r}")
    provenance = data.get("provenance")
    if not isinstance(provenance, dict):
        raise ReferenceDataError(f"{source}: 'provenance' must be an object")
    for key, kind in REQUIRED_PROVENANCE.items():
        if not isinstance(provenance.get(key), kind):
            raise ReferenceDataError(f"{source}: provenance.{key} must be a {kind.__name__}")
    measurements = data.get("measurements")
    if not isinstance(measurements, dict):
        raise ReferenceDataError(f"{source}: 'measurements' must be an object")
    missing = [name for name in REQUIRED_MEASUREMENTS if name not in measurements]
    if missing:
        raise ReferenceDataError(f"{source}: missing measurements: {', '.join(missing)}")
    for name, entry in measurements.items():
        if not isinstance(entry, dict):
            raise ReferenceDataError(f"{source}: measurements.{name} must be an object")
        for key in ("description", "unit"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ReferenceDataError(f"{source}: measurements.{name}.{key} must be a non-empty string")
        if "value" not in entry:
            raise ReferenceDataError(f"{source}: measurements.{name} has no 'value'")
        _check_finite(entry["value"], f"{source}: measurements.{name}.value")
    return data


def load_gpu_reference(path: str | Path | None = None, *, allow_dry_run: bool = False) -> dict:
    """Load and validate reference data (the shipped recording unless ``path`` is given).

    Data from the recorder's dry run (made on a CPU to test the recorder) is refused unless
    ``allow_dry_run`` is true, so a lesson can never show it as GPU data. Introduced in
    ``00_start_here``.
    """
    file = Path(path) if path is not None else reference_dir() / FILENAME
    if not file.exists():
        raise FileNotFoundError(
            f"no GPU reference data at {file}: none has been recorded yet; "
            "run `make record-gpu` on a CUDA machine"
        )
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReferenceDataError(f"{file}: not valid JSON ({exc})") from exc
    validate_reference(data, str(file))
    if data["provenance"]["dry_run"] and not allow_dry_run:
        raise ReferenceDataError(f"{file} comes from the recorder's dry run on a CPU, not from a GPU")
    return data


def has_gpu_reference() -> bool:
    """True when a GPU recording ships with the course. Introduced in ``00_start_here``."""
    return (reference_dir() / FILENAME).exists()


def describe_reference(data: dict) -> Table:
    """Where and when the data were recorded, as a table to show next to recorded numbers."""
    validate_reference(data)
    p = data["provenance"]
    rows = [(key, p[key]) for key in ("device_name", *OPTIONAL_PROVENANCE[:3], "torch", "date") if key in p]
    rows.append(("recorded by", p["command"]))
    return Table(["", "recorded GPU reference"], rows, title="Recorded on a GPU (not live)")


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key, item in value.items():
            out += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
        return [(prefix, ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in value))]
    if isinstance(value, float):
        return [(prefix, f"{value:.9g}")]  # enough digits to tell float32 results apart
    return [(prefix, value)]


def recorded(name: str, data: dict | None = None) -> Table:
    """One recorded GPU measurement as a table labelled with where and when it was recorded.

    Uses the shipped recording unless ``data`` is given. Where no recording ships, the table
    says so in one sentence, so a lesson never passes anything else off as GPU data. A list of
    rows becomes a table with one column per field; a mapping becomes (field, value) rows.
    Introduced in lesson 02.
    """
    if name not in REQUIRED_MEASUREMENTS:
        raise KeyError(f"unknown measurement {name!r}; known: {', '.join(REQUIRED_MEASUREMENTS)}")
    if data is None:
        if not has_gpu_reference():
            message = (
                f"No GPU recording ships with this copy of the course, so there is no recorded "
                f"'{name}' to show. On a CUDA machine, `make record-gpu` records it."
            )
            return Table(["recorded GPU data"], [[message]], title="Recorded on a GPU: nothing recorded yet")
        data = load_gpu_reference()
    else:
        validate_reference(data)
    p, entry = data["provenance"], data["measurements"][name]
    where = f"Recorded on {p['device_name']} (torch {p['torch']}, {p['date'][:10]}), not live"
    title = f"{where}: {entry['description']}"
    value = entry["value"]
    if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
        flat = [dict(_flatten(row)) for row in value]
        headers = list(dict.fromkeys(key for row in flat for key in row))
        rows = [[row.get(h, "") for h in headers] for row in flat]
        return Table(headers, rows, title=f"{title} [{entry['unit']}]")
    return Table(["field", "value"], _flatten(value), title=f"{title} [{entry['unit']}]")


def recorded_sweeps(data: dict | None = None) -> dict[str, dict[str, tuple[list[int], list[float]]]] | None:
    """The recorded GPU size sweeps as plot series, or None where no recording ships.

    Returns ``{"matmul": {label: (sizes, GFLOP/s)}, "elementwise": {label: (sizes, GB/s)}}`` with
    labels that say "recorded", for :func:`helpers.plots.plot_sweeps`. Introduced in lesson 08.
    """
    if data is None:
        if not has_gpu_reference():
            return None
        data = load_gpu_reference()
    else:
        validate_reference(data)
    gpu = data["provenance"]["device_name"]
    matmul = data["measurements"]["matmul_sweep"]["value"]
    elementwise = data["measurements"]["elementwise_sweep"]["value"]
    return {
        "matmul": {
            f"{gpu} {dtype} (recorded)": (
                [r["n"] for r in matmul],
                [r[dtype]["tflops"] * 1e3 for r in matmul],
            )
            for dtype in ("float32", "bfloat16")
        },
        "elementwise": {
            f"{gpu} (recorded)": ([r["n"] for r in elementwise], [r["gb_per_s"] for r in elementwise])
        },
    }

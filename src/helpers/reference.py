"""The recorded GPU reference data: what a GPU did, for lessons running where there is none.

The data are measured by ``tools/record_gpu.py`` on a CUDA machine (``make record-gpu``) and
shipped in ``helpers/data/gpu_reference/``. Every measurement carries a description and a unit,
and the file carries its provenance (command, date, GPU, driver, CUDA, cuDNN, torch). The loader
validates all of it, so a malformed file fails with a message that names the problem and where
in the file it is (``reference.json: provenance.date must be ...``).
Introduced in ``00_start_here``.

The format (schema ``fp-course-gpu-reference/1``): an object with exactly the keys ``schema``,
``provenance`` and ``measurements``.

- ``provenance`` has the fields of :data:`REQUIRED_PROVENANCE` (non-blank text: not only
  whitespace and invisible format characters; ``date`` starts with a real date as ``YYYY-MM-DD``;
  ``dry_run`` a bool), may have those of :data:`OPTIONAL_PROVENANCE`
  (typed: text, counts and sizes; ``null`` where the machine did not say), and may carry further
  notes (the recorder adds ``alone`` and ``warm_up``): any JSON data.
- ``measurements`` maps each name of :data:`REQUIRED_MEASUREMENTS` (and possibly others) to an
  object with a non-blank ``description`` and ``unit``, a ``value`` and optional ``settings``
  (an object), and no other keys. A value is any JSON data (its shape is the measurement's own;
  :func:`recorded` shows any shape), except ``checkpoint``'s: an object naming the checkpoint's
  ``file`` (a plain file name: no path separator, no control or other unprintable character)
  and its ``sha256`` (64 hex digits).
- Every number is finite, an int too (it must fit a float64, as a JSON reader elsewhere would
  read it), and everything is JSON data: dicts with str keys, lists, str, int,
  float, bool and None.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import stat
import unicodedata
from pathlib import Path
from typing import Any

from helpers._validate import check_bool, check_path, check_str, describe
from helpers.tables import Table

__all__ = [
    "REQUIRED_MEASUREMENTS",
    "ReferenceDataError",
    "UnknownMeasurementError",
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
# What each optional provenance field holds where present: "text" (non-blank), "count" (an int
# >= 0), "size" (a number >= 0); "or null" where the recorder writes None when the machine does
# not say (no CUDA, no cuDNN, no nvidia-smi, the variable unset, os.cpu_count() unknown).
_OPTIONAL_PROVENANCE_KINDS = {
    "driver": ("text", True),
    "cuda": ("text", True),
    "cudnn": ("count", True),
    "capability": ("text", False),
    "multiprocessors": ("count", False),
    "memory_gib": ("size", False),
    "cpu_count": ("count", True),
    "cublas_workspace_config": ("text", True),
    "seconds": ("size", False),
}
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
_TOP_LEVEL = ("schema", "provenance", "measurements")
_ENTRY_KEYS = ("description", "unit", "value", "settings")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# The largest reference file load_gpu_reference reads: a recording is tens of kilobytes (the
# recorder writes a few hundred numbers); 16 MiB leaves room for far larger sweeps, and refuses
# at once what is not a recording (a disk image, a log) rather than reading it all into memory.
MAX_FILE_BYTES = 16 * 2**20
# The largest rate a sweep may hold: lesson 08 plots TFLOP/s * 1e3, which must stay finite.
_MAX_RATE = 1e300
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ReferenceDataError(ValueError):
    """The reference data are malformed: a field is missing or has the wrong kind, or a number is not finite.

    The message names the file (or the argument) and the place in it, such as
    ``reference.json: measurements.small_ops.unit``.
    """


class UnknownMeasurementError(KeyError, ValueError):
    """:func:`recorded` was asked for a measurement the recordings do not have.

    A ``KeyError`` (a name looked up) and a ``ValueError`` (an argument out of range) both.
    """

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0]) if self.args else ""


def reference_dir() -> Path:
    """The folder of the shipped reference data (it may not hold a recording yet)."""
    return Path(__file__).resolve().parent / "data" / "gpu_reference"


def _where(path: tuple) -> str:
    """A place in the data as text: ``measurements.small_ops.value[2]``, ``measurements['a b']``."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _check_json(value: Any, source: str, path: tuple, seen: frozenset = frozenset()) -> None:
    """``value`` is JSON data (dicts with str keys, lists, str, int, float, bool, None), numbers finite."""
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:  # a helper that computes with it would raise or give inf
            digits = int((value.bit_length() - 1) * math.log10(2)) + 1
            digits += abs(value) >= 10**digits
            raise ReferenceDataError(
                f"{source}: {_where(path)} is an int of about {digits} digits, too large for a "
                "float64: recorded numbers must be finite"
            ) from None
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ReferenceDataError(f"{source}: {_where(path)} is {value}: recorded numbers must be finite")
        return
    if isinstance(value, (list, dict)):
        if id(value) in seen:
            raise ReferenceDataError(f"{source}: {_where(path)} contains itself, which JSON data cannot")
        seen = seen | {id(value)}
        if isinstance(value, list):
            for i, item in enumerate(value):
                _check_json(item, source, (*path, i), seen)
            return
        for key, item in value.items():
            if not isinstance(key, str):
                raise ReferenceDataError(
                    f"{source}: {_where(path)} has the key {describe(key)}; JSON keys are strings"
                )
            _check_json(item, source, (*path, key), seen)
        return
    raise ReferenceDataError(
        f"{source}: {_where(path)} is {describe(value)}, which JSON data cannot hold "
        "(JSON holds dicts with str keys, lists, str, int, float, bool and None)"
    )


def _got(container: dict, key: str) -> str:
    return describe(container[key]) if key in container else "nothing (the field is missing)"


def _blank(text: str) -> bool:
    """Nothing visible: only whitespace and format characters (zero-width space, BOM, ...)."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def _check_text(container: dict, key: str, source: str, path: tuple, nullable: bool = False) -> None:
    value = container.get(key)
    if nullable and key in container and value is None:
        return
    if not isinstance(value, str) or _blank(value):
        kind = "a non-blank str" + (" or null" if nullable else "")
        got = _got(container, key)
        raise ReferenceDataError(f"{source}: {_where((*path, key))} must be {kind}, got {got}")


def _check_number(container: dict, key: str, source: str, path: tuple, kind: str, nullable: bool) -> None:
    value = container.get(key)
    if nullable and key in container and value is None:
        return
    is_int = isinstance(value, int) and not isinstance(value, bool)
    is_number = is_int or (isinstance(value, float) and math.isfinite(value))
    if (kind == "count" and not is_int) or not is_number or value < 0:
        wanted = "an int >= 0" if kind == "count" else "a finite number >= 0"
        raise ReferenceDataError(
            f"{source}: {_where((*path, key))} must be {wanted}{' or null' if nullable else ''}, "
            f"got {_got(container, key)}"
        )


def _check_provenance(provenance: dict, source: str) -> None:
    path = ("provenance",)
    for key, kind in REQUIRED_PROVENANCE.items():
        if kind is bool:
            if not isinstance(provenance.get(key), bool):
                raise ReferenceDataError(
                    f"{source}: provenance.{key} must be a bool (true or false), got {_got(provenance, key)}"
                )
        else:
            _check_text(provenance, key, source, path)
    date = provenance["date"]
    try:
        real_date = bool(_DATE.match(date)) and bool(datetime.date.fromisoformat(date[:10]))
    except ValueError:  # 2026-13-45
        real_date = False
    if not real_date:
        raise ReferenceDataError(
            f"{source}: provenance.date must start with a real date as YYYY-MM-DD, "
            f"got {describe(provenance['date'])}"
        )
    for key, (kind, nullable) in _OPTIONAL_PROVENANCE_KINDS.items():
        if key not in provenance:
            continue
        if kind == "text":
            _check_text(provenance, key, source, path, nullable)
        else:
            _check_number(provenance, key, source, path, kind, nullable)
    _check_json(provenance, source, path)  # and the further notes are JSON data


def _check_checkpoint_value(value: object, source: str) -> None:
    path = ("measurements", "checkpoint", "value")
    if not isinstance(value, dict):
        raise ReferenceDataError(
            f"{source}: {_where(path)} must be an object naming the checkpoint's file and sha256, "
            f"got {describe(value)}"
        )
    _check_text(value, "file", source, path)
    name = value["file"]
    plain = "/" not in name and "\\" not in name and name.isprintable()
    if not plain or name.strip() in (".", "..") or name != name.strip():
        raise ReferenceDataError(
            f"{source}: {_where((*path, 'file'))} must be a plain file name (the file lies next to "
            f"the data; no path separator or unprintable character), got {name!r}"
        )
    digest = value.get("sha256")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise ReferenceDataError(
            f"{source}: {_where((*path, 'sha256'))} must be the file's sha256 as 64 lowercase hex digits, "
            f"got {_got(value, 'sha256')}"
        )


def _check_entry(name: str, entry: object, source: str) -> None:
    path = ("measurements", name)
    if not isinstance(entry, dict):
        raise ReferenceDataError(f"{source}: {_where(path)} must be an object, got {describe(entry)}")
    for key in entry:
        if key not in _ENTRY_KEYS:
            raise ReferenceDataError(
                f"{source}: {_where(path)} has the unknown key {describe(key)}; a measurement holds "
                f"{', '.join(_ENTRY_KEYS)} only"
            )
    for key in ("description", "unit"):
        _check_text(entry, key, source, path)
    if "value" not in entry:
        raise ReferenceDataError(f"{source}: {_where(path)} has no 'value'")
    if "settings" in entry and not isinstance(entry["settings"], dict):
        raise ReferenceDataError(
            f"{source}: {_where((*path, 'settings'))} must be an object, got {describe(entry['settings'])}"
        )
    if name == "checkpoint":
        _check_checkpoint_value(entry["value"], source)
    _check_json(entry, source, path)


def validate_reference(data: object, source: str = "reference data") -> dict:
    """Check the structure of reference data and return it; raise ``ReferenceDataError`` otherwise.

    ``data`` is the whole recording as loaded from JSON (see the module's docstring for the
    format); ``source`` names it in the messages (a file's path, or the argument's name). Every
    message says where in the data the problem is. Introduced in ``00_start_here``.

    Raises:
        ReferenceDataError: (a ``ValueError``) anything malformed in ``data``.
        TypeError: ``source`` is not a str.
    """
    check_str(source, "source")
    try:
        _validate(data, source)
    except RecursionError:  # only a structure built in Python nests this deep; json.loads refuses it
        raise ReferenceDataError(f"{source}: the data are nested too deeply to be JSON data") from None
    return data  # type: ignore[return-value]


def _validate(data: object, source: str) -> None:
    if not isinstance(data, dict):
        raise ReferenceDataError(f"{source}: the top level must be an object, not {describe(data)}")
    for key in data:
        if key not in _TOP_LEVEL:
            raise ReferenceDataError(
                f"{source}: unknown top-level key {describe(key)}; a recording holds "
                f"{', '.join(_TOP_LEVEL)} only"
            )
    schema = data.get("schema")
    if not (isinstance(schema, str) and schema == SCHEMA):
        found = describe(data["schema"]) if "schema" in data else "nothing"
        raise ReferenceDataError(f"{source}: 'schema' must be {SCHEMA!r}, found {found}")
    provenance = data.get("provenance")
    if not isinstance(provenance, dict):
        raise ReferenceDataError(f"{source}: 'provenance' must be an object, got {_got(data, 'provenance')}")
    _check_provenance(provenance, source)
    measurements = data.get("measurements")
    if not isinstance(measurements, dict):
        raise ReferenceDataError(
            f"{source}: 'measurements' must be an object, got {_got(data, 'measurements')}"
        )
    for name in measurements:
        if not isinstance(name, str):
            raise ReferenceDataError(f"{source}: measurements has the key {describe(name)}; names are str")
    missing = [name for name in REQUIRED_MEASUREMENTS if name not in measurements]
    if missing:
        raise ReferenceDataError(f"{source}: missing measurements: {', '.join(missing)}")
    for name, entry in measurements.items():
        _check_entry(name, entry, source)


def load_gpu_reference(path: str | Path | None = None, *, allow_dry_run: bool = False) -> dict:
    """Load and validate reference data (the shipped recording unless ``path`` is given).

    Data from the recorder's dry run (made on a CPU to test the recorder) is refused unless
    ``allow_dry_run`` is true, so a lesson can never show it as GPU data. Introduced in
    ``00_start_here``.

    Raises:
        FileNotFoundError: no file at ``path``; ``OSError`` where it cannot be read.
        ReferenceDataError: the file is empty, a folder, not a regular file (a device or a
            pipe), larger than :data:`MAX_FILE_BYTES` (16 MiB), not UTF-8 text, not JSON, or malformed
            JSON data (the message names the file and the place in it); or a dry run.
        TypeError: ``path`` is not a path or ``allow_dry_run`` not a bool (``ValueError``: a
            path no file system could hold).
    """
    file = check_path(path, "path") if path is not None else reference_dir() / FILENAME
    check_bool(allow_dry_run, "allow_dry_run")
    try:
        exists = file.exists()
    except OSError as exc:  # a name too long for the file system, say
        raise ValueError(f"path is not a usable path ({exc.strerror}): {str(file)[:80]!r}") from None
    if not exists:
        raise FileNotFoundError(
            f"no GPU reference data at {file}: none has been recorded yet; "
            "run `make record-gpu` on a CUDA machine"
        )
    if file.is_dir():
        raise ReferenceDataError(f"{file} is a folder, not a reference data file ({FILENAME})")
    try:
        # Checked before opening: opening a FIFO waits for a writer, and a device (/dev/zero)
        # never ends. The size is checked again while reading, in case the file grows.
        info = file.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ReferenceDataError(
                f"{file} is not a regular file (a device, a pipe or a socket), not a reference data "
                f"file ({FILENAME})"
            )
        too_big = ReferenceDataError(
            f"{file}: larger than {MAX_FILE_BYTES // 2**20} MiB, far more than a recording "
            "(tens of kilobytes) holds: not a reference data file"
        )
        if info.st_size > MAX_FILE_BYTES:
            raise too_big
        with file.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise too_big
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text did
    except UnicodeDecodeError as exc:
        message = f"{file}: not UTF-8 text, so not JSON ({exc.reason} at byte {exc.start})"
        raise ReferenceDataError(message) from None
    except OSError as exc:  # the file system's own error, with the file named
        raise OSError(exc.errno, f"cannot read the reference data ({exc.strerror})", str(file)) from exc
    if not text.strip():
        raise ReferenceDataError(f"{file}: the file is empty; a reference data file holds a JSON object")
    try:
        data = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an int of more digits than Python converts
        raise ReferenceDataError(f"{file}: not valid JSON ({exc})") from exc
    except RecursionError:
        raise ReferenceDataError(f"{file}: not valid JSON (nested too deeply)") from None
    validate_reference(data, str(file))
    if data["provenance"]["dry_run"] and not allow_dry_run:
        raise ReferenceDataError(f"{file} comes from the recorder's dry run on a CPU, not from a GPU")
    return data


def has_gpu_reference() -> bool:
    """True when a GPU recording ships with the course. Introduced in ``00_start_here``."""
    return (reference_dir() / FILENAME).exists()


def describe_reference(data: dict) -> Table:
    """Where and when the data were recorded, as a table to show next to recorded numbers.

    Raises ``ReferenceDataError`` (naming ``data`` and the place in it) if ``data`` is malformed.
    """
    validate_reference(data, "data")
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

    Raises:
        UnknownMeasurementError: (a ``KeyError`` and a ``ValueError``) ``name`` is not one of
            :data:`REQUIRED_MEASUREMENTS`; the message lists them.
        TypeError: ``name`` is not a str.
        ReferenceDataError: ``data`` (or the shipped file) is malformed.
    """
    check_str(name, "name")
    if name not in REQUIRED_MEASUREMENTS:
        raise UnknownMeasurementError(
            f"unknown measurement name {name!r}; known: {', '.join(REQUIRED_MEASUREMENTS)}"
        )
    if data is None:
        if not has_gpu_reference():
            message = (
                f"No GPU recording ships with this copy of the course, so there is no recorded "
                f"'{name}' to show. On a CUDA machine, `make record-gpu` records it."
            )
            return Table(["recorded GPU data"], [[message]], title="Recorded on a GPU: nothing recorded yet")
        data = load_gpu_reference()
    else:
        validate_reference(data, "data")
    p, entry = data["provenance"], data["measurements"][name]
    where = f"Recorded on {p['device_name']} (torch {p['torch']}, {p['date'][:10]}), not live"
    title = f"{where}: {entry['description']}"
    value = entry["value"]
    if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
        flat = [dict(_flatten(row)) for row in value]
        headers = list(dict.fromkeys(key for row in flat for key in row))
        if headers:  # rows of nothing but empty objects have no columns: shown as one value below
            rows = [[row.get(h, "") for h in headers] for row in flat]
            return Table(headers, rows, title=f"{title} [{entry['unit']}]")
    return Table(["field", "value"], _flatten(value), title=f"{title} [{entry['unit']}]")


def _sweep_rows(data: dict, name: str, rates: tuple[tuple[str, ...], ...], source: str) -> list[dict]:
    """The rows of a sweep, each with an int ``n`` >= 1 and a finite rate >= 0 at each path of ``rates``."""
    path = ("measurements", name, "value")
    rows = data["measurements"][name]["value"]
    if not isinstance(rows, list) or not rows:
        raise ReferenceDataError(
            f"{source}: {_where(path)} must be a non-empty list of rows (one per size), got {describe(rows)}"
        )
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ReferenceDataError(f"{source}: {_where((*path, i))} must be an object, got {describe(row)}")
        n = row.get("n")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ReferenceDataError(
                f"{source}: {_where((*path, i, 'n'))} must be a size (an int >= 1), got {_got(row, 'n')}"
            )
        for rate in rates:
            parent, where = row, (*path, i)
            for key in rate[:-1]:
                parent, where = parent.get(key), (*where, key)
                if not isinstance(parent, dict):
                    raise ReferenceDataError(
                        f"{source}: {_where(where)} must be an object, got {describe(parent)}"
                    )
            value = parent.get(rate[-1])
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < _MAX_RATE:
                raise ReferenceDataError(
                    f"{source}: {_where((*where, rate[-1]))} must be a finite number >= 0 (below "
                    f"{_MAX_RATE:g}, so that scaled for a plot it stays finite), "
                    f"got {_got(parent, rate[-1])}"
                )
    return rows


def recorded_sweeps(data: dict | None = None) -> dict[str, dict[str, tuple[list[int], list[float]]]] | None:
    """The recorded GPU size sweeps as plot series, or None where no recording ships.

    Returns ``{"matmul": {label: (sizes, GFLOP/s)}, "elementwise": {label: (sizes, GB/s)}}`` with
    labels that say "recorded", for :func:`helpers.plots.plot_sweeps`. Introduced in lesson 08.

    Raises ``ReferenceDataError`` if the data are malformed, or if a sweep is not a non-empty list
    of rows each with a size ``n`` and its rates (``float32.tflops`` and ``bfloat16.tflops`` for
    ``matmul_sweep``, ``gb_per_s`` for ``elementwise_sweep``).
    """
    if data is None:
        if not has_gpu_reference():
            return None
        data, source = load_gpu_reference(), str(reference_dir() / FILENAME)
    else:
        source = "data"
        validate_reference(data, source)
    gpu = data["provenance"]["device_name"]
    matmul = _sweep_rows(data, "matmul_sweep", (("float32", "tflops"), ("bfloat16", "tflops")), source)
    elementwise = _sweep_rows(data, "elementwise_sweep", (("gb_per_s",),), source)
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

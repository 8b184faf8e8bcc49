"""Bad input for helpers.reference, helpers.distributed and helpers.exercises gets a clear error, early.

Each public name is a ``Case`` (see ``tests/bad_inputs.py``): a call that works, and for each
parameter a strategy of bad values, each of which must be refused with a TypeError or ValueError,
raised by the helpers, naming the parameter. On top of the rule:

* reference files are nested structures: ``validate_reference`` refuses every malformed recording
  with ``ReferenceDataError`` naming the file and the place in it (``reference.json:
  provenance.date``), and accepts exactly the changes the format allows (see ``harmless``);
  a file that is not JSON, empty or a JSON list is refused naming the file;
* ``run_ranks`` checks its arguments before anything starts: here the folder, the store and the
  processes it would create are stubs that record being reached, so a bad argument that got
  through would show instead of starting ranks;
* ``check``'s ``answer`` is a learner's attempt, not an argument to refuse: whatever it is, the
  result is a ``Verdict`` (ok=False with a hint), never an exception; only the exercise id is
  checked.
"""

from __future__ import annotations

import datetime
import hashlib
import inspect
import os
import json
import math
import re
import tempfile
import time
import unicodedata
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.distributed as dist
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import helpers.distributed as distributed
import helpers.reference as reference
from helpers import exercises
from helpers.exercises import Verdict, batch_invariance_failures, check, exercise_ids
from helpers.reference import (
    OPTIONAL_PROVENANCE,
    REQUIRED_MEASUREMENTS,
    REQUIRED_PROVENANCE,
    SCHEMA,
    ReferenceDataError,
    UnknownMeasurementError,
    describe_reference,
    load_gpu_reference,
    recorded,
    recorded_sweeps,
    validate_reference,
)
from tests.bad_inputs import (
    ANYTHING,
    Case,
    anything_but,
    assert_clear_error,
    bad_choice,
    bad_int,
    bad_real,
    case_params,
    check_case,
    malformed,
    same_value,
    not_a_str,
    not_a_tensor,
)

FAST = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
NONE = type(None)


def named(fn, qualname: str):
    """``fn`` under a readable name for test ids and hypothesis reports."""
    fn.__qualname__ = qualname
    return fn


# ----------------------------------------------------------------------------- helpers.reference

TIMING = {"median_ms": 0.5, "min_ms": 0.4, "max_ms": 0.7, "reps": 3}
SHA256 = hashlib.sha256(b"weights").hexdigest()


def matmul_rows() -> list[dict]:
    return [
        {"n": 16, "float32": {**TIMING, "tflops": 0.5}, "bfloat16": {**TIMING, "tflops": 1.5}},
        {"n": 32, "float32": {**TIMING, "tflops": 2.0}, "bfloat16": {**TIMING, "tflops": 4.0}},
    ]


def elementwise_rows() -> list[dict]:
    return [{"n": 1024, **TIMING, "gb_per_s": 7.5}, {"n": 4096, **TIMING, "gb_per_s": 24.0}]


def valid_reference() -> dict:
    """A small recording in the shape ``tools/record_gpu.py`` writes on a GPU (each kind of part once)."""
    measurements = {
        name: {"description": f"what {name} measures", "unit": "ms", "value": 1.0}
        for name in REQUIRED_MEASUREMENTS
    }
    measurements["rng_after_seed"]["value"] = {"seed": 10, "cpu": [-0.6, 1.2], "device": [0.3, -1.0]}
    measurements["index_add_spread"]["value"] = {
        "default": {"runs": 3, "distinct": 2, "max_abs_spread": 1e-6},
        "deterministic": {"error": "no deterministic implementation"},
    }
    measurements["small_ops"].update(
        value={"add": dict(TIMING)}, settings={"sm_clock_mhz_after_warm_up": 1980}
    )
    measurements["matmul_sweep"]["value"] = matmul_rows()
    measurements["elementwise_sweep"]["value"] = elementwise_rows()
    measurements["batch_invariance"]["value"] = [
        {"dtype": "float32", "n": 1, "bitwise_equal": False, "max_abs_diff": 4.7e-6},
        {"dtype": "bfloat16", "n": 8, "bitwise_equal": True, "max_abs_diff": 0.0},
    ]
    measurements["checkpoint"]["value"] = {
        "file": "linear.pt",
        "sha256": SHA256,
        "saved_from": "cuda:0",
        "state": {"bias": [0.1, -0.2]},
    }
    provenance = {
        "command": "python record_gpu.py --out out",
        "date": "2026-12-01T10:00:00+00:00",
        "dry_run": False,
        "device_name": "NVIDIA H200",
        "torch": "2.11.0+cu130",
        "python": "3.12.3",
        "driver": "580.95",
        "cuda": "13.0",
        "cudnn": 91300,
        "capability": "9.0",
        "multiprocessors": 132,
        "memory_gib": 139.8,
        "cpu_count": 16,
        "cublas_workspace_config": None,
        "seconds": 310.2,
        "alone": "run before the test suite",
        "warm_up": {"seconds": 5.0, "sm_clock_mhz_after": None},
    }
    return {"schema": SCHEMA, "provenance": provenance, "measurements": measurements}


_FILES = tempfile.TemporaryDirectory(prefix="bad-inputs-data-")  # removed when the tests end


def reference_file(text: str | bytes | None = None, name: str = "reference.json") -> Path:
    """A reference file holding ``text`` (a valid recording when None)."""
    path = Path(_FILES.name) / name
    if text is None:
        text = json.dumps(valid_reference())
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# What the format leaves free, so that changing it gives another valid recording (it is in the
# module docstring of helpers/reference.py, and tests/test_gpu_data.py records 1.0 for every
# value): a measurement's value is whatever the measurement recorded (any JSON data, its
# numbers finite), except checkpoint's, which names its file and hash; so are a measurement's
# settings (an object) and the provenance notes beyond the known fields. A known text field may
# hold any other non-blank text (not only whitespace and format characters such as a zero-width
# space; a date: any text that starts with a real date as YYYY-MM-DD), dry_run either
# bool, a nullable field null, and an optional field or a measurement's settings may be absent.
# Nothing else may change: the top level has exactly three keys, typed fields keep their kind.
TEXT_FIELDS = {
    "command",
    "date",
    "device_name",
    "torch",
    "python",
    "driver",
    "cuda",
    "capability",
    "cublas_workspace_config",
}
NULLABLE = {"driver", "cuda", "cudnn", "cpu_count", "cublas_workspace_config"}
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _real_date(text: str) -> bool:
    try:
        return bool(DATE.match(text)) and bool(datetime.date.fromisoformat(text[:10]))
    except ValueError:
        return False


def _text(value: object) -> bool:
    """Non-blank text: something besides whitespace and format characters."""
    return isinstance(value, str) and not all(c.isspace() or unicodedata.category(c) == "Cf" for c in value)


#: Junk for reference data: never a number >= 0 (which a typed count or size could hold), and
#: plenty of what JSON cannot hold (NaN, tensors, tuples, bytes, complex numbers, sets).
REFERENCE_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**66), -1),
    st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.text(max_size=5),
    st.sampled_from(["", " ", "\t\n"]),
    st.lists(st.none(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.none(), max_size=1),
    st.sampled_from([torch.tensor([1.0]), (1, 2), b"x", 1j, {1, 2}, object()]),
    # text that looks fine but is not: invisible, an impossible date, a control character;
    # and an int no float64 holds
    st.sampled_from(["\u200b", " \ufeff\u200b ", "2026-13-45", "2026-02-30T00:00", "a\x00b", "x\ny", 10**400]),
)


def _where(path: tuple) -> str:
    """A place in the data as the messages write it: ``measurements.small_ops.value[2]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _change(old: object, new: object, path: tuple = ()) -> tuple[str, tuple, object]:
    """The one change ``malformed`` made: ("added" | "deleted" | "replaced", path, new value)."""
    if type(old) is dict and type(new) is dict:
        extra, missing = new.keys() - old.keys(), old.keys() - new.keys()
        if not extra and not missing:
            key = next(k for k in old if not same_value(old[k], new[k]))
            return _change(old[key], new[key], (*path, key))
        if len(extra) == 1 and not missing:
            key = extra.pop()
            return "added", (*path, key), new[key]
        if len(missing) == 1 and not extra:
            return "deleted", (*path, missing.pop()), None
    if type(old) is list and type(new) is list:
        if len(old) == len(new):
            i = next(i for i in range(len(old)) if not same_value(old[i], new[i]))
            return _change(old[i], new[i], (*path, i))
        for i in range(len(old)):
            if len(new) == len(old) - 1 and same_value(old[:i] + old[i + 1 :], new):
                return "deleted", (*path, i), None
    return "replaced", path, new


def _json(value: object) -> bool:
    """JSON data with finite numbers."""
    if value is None or isinstance(value, (str, bool)):
        return True
    if isinstance(value, int):
        return abs(value) < 2**1024  # a float64 holds it
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json(v) for k, v in value.items())
    return False


def _free(path: tuple) -> bool:
    """Inside a part the format leaves free: a value, settings, provenance notes."""
    if path[0] == "provenance" and len(path) >= 2:
        return path[1] not in REQUIRED_PROVENANCE and path[1] not in OPTIONAL_PROVENANCE
    if path[0] == "measurements" and len(path) >= 3:
        name, key = path[1], path[2]
        if key == "settings":
            return len(path) >= 4
        if key == "value":
            return name != "checkpoint" or (len(path) >= 4 and path[3] not in ("file", "sha256"))
    return False


def harmless(kind: str, path: tuple, new: object) -> bool:
    """Whether the change gives another valid recording (see the comment above TEXT_FIELDS)."""
    if kind == "added":  # only a provenance note, or something inside a free part, may be added
        inside = len(path) > 1 and (path[0] == "provenance" and len(path) == 2 or _free(path[:-1]))
        return inside and _json(new)
    if _free(path):
        if kind == "deleted":  # a measurement has a value; what is in it, or a note, may go
            return path[0] == "provenance" or len(path) > 3
        return _json(new)
    field = path[-1]
    if kind == "deleted":
        return (path[0] == "provenance" and len(path) == 2 and field in OPTIONAL_PROVENANCE) or (
            path[0] == "measurements" and len(path) == 3 and field == "settings"
        )
    if path[0] == "measurements" and len(path) == 3 and field == "settings":
        return isinstance(new, dict) and _json(new)
    if path == ("provenance", "dry_run"):
        return isinstance(new, bool)
    text = _text(new)
    if path[0] == "provenance" and len(path) == 2:
        if new is None:
            return field in NULLABLE
        return field in TEXT_FIELDS and text and (field != "date" or _real_date(new))
    if path[0] == "measurements" and len(path) == 3 and field in ("description", "unit"):
        return text
    if path == ("measurements", "checkpoint", "value", "file"):
        plain = text and new.isprintable() and not re.search(r"[/\\]", new)
        return plain and new == new.strip() and new not in (".", "..")
    return False


#: Where ``malformed`` breaks a recording: anywhere in it, or (so that each is broken often) in
#: its provenance, in one measurement, in the checkpoint's entry.
PARTS = {
    "recording": (),
    "provenance": ("provenance",),
    "measurement": ("measurements", "small_ops"),
    "checkpoint": ("measurements", "checkpoint"),
}


def _part(prefix: tuple) -> object:
    part = valid_reference()
    for key in prefix:
        part = part[key]
    return part


def _embed(prefix: tuple, part: object) -> object:
    if not prefix:
        return part
    data = valid_reference()
    parent = data
    for key in prefix[:-1]:
        parent = parent[key]
    parent[prefix[-1]] = part
    return data


@pytest.mark.parametrize("prefix", list(PARTS.values()), ids=list(PARTS))
@given(data=st.data())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_malformed_recording_is_refused_naming_the_place(prefix, data):
    broken = _embed(prefix, data.draw(malformed(lambda: _part(prefix), junk=REFERENCE_JUNK), label="part"))
    kind, path, new = _change(valid_reference(), broken)
    if harmless(kind, path, new):
        assert validate_reference(broken, "reference.json") is broken  # the format allows it
        return
    with pytest.raises(ReferenceDataError) as info:
        validate_reference(broken, "reference.json")
    message = str(info.value)
    assert message.startswith("reference.json: "), message
    if kind == "added":  # the unknown key where it was added, or the bad value under it
        assert _where(path) in message or (_where(path[:-1]) in message and repr(path[-1]) in message), (
            message
        )
    elif kind == "deleted":  # the field that is missing, or its place and name
        assert _where(path) in message or (_where(path[:-1]) in message and str(path[-1]) in message), message
    else:
        assert _where(path) in message, message


def test_reference_data_error_is_a_value_error():
    assert issubclass(ReferenceDataError, ValueError)
    assert issubclass(UnknownMeasurementError, KeyError) and issubclass(UnknownMeasurementError, ValueError)


def _broken(change) -> dict:
    data = valid_reference()
    change(data)
    return data


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: d["provenance"].update(cudnn=True),
            "reference.json: provenance.cudnn must be an int >= 0 or null, got True",
        ),
        (
            lambda d: d["provenance"].update(date="yesterday"),
            "provenance.date must start with a real date as YYYY-MM-DD",
        ),
        (
            lambda d: d["provenance"].update(memory_gib=-1.0),
            "provenance.memory_gib must be a finite number >= 0",
        ),
        (lambda d: d["provenance"].update(torch="  "), "provenance.torch must be a non-blank str, got '  '"),
        (lambda d: d["provenance"]["warm_up"].update(seconds=math.inf), "provenance.warm_up.seconds is inf"),
        (
            lambda d: d["measurements"]["small_ops"]["value"]["add"].update(reps=(1, 2)),
            "measurements.small_ops.value.add.reps is (1, 2) (a tuple), which JSON data cannot hold",
        ),
        (
            lambda d: d["measurements"]["matmul_sweep"]["value"][1]["float32"].update(tflops=math.nan),
            "measurements.matmul_sweep.value[1].float32.tflops is nan",
        ),
        (
            lambda d: d["measurements"]["small_ops"]["value"].update({1: 2}),
            "measurements.small_ops.value has the key 1",
        ),
        (lambda d: d["measurements"].update({"a.b": []}), "measurements['a.b'] must be an object, got []"),
        (
            lambda d: d["measurements"]["small_ops"].update(note="x"),
            "measurements.small_ops has the unknown key 'note'",
        ),
        (
            lambda d: d["measurements"]["small_ops"].update(settings=[1]),
            "measurements.small_ops.settings must be an object",
        ),
        (
            lambda d: d["measurements"]["checkpoint"]["value"].update(file="../x.pt"),
            "measurements.checkpoint.value.file must be a plain file name",
        ),
        (
            lambda d: d["measurements"]["checkpoint"]["value"].update(sha256="abc"),
            "measurements.checkpoint.value.sha256 must be the file's sha256",
        ),
        (
            lambda d: d["measurements"]["checkpoint"].update(value=1.0),
            "measurements.checkpoint.value must be an object",
        ),
        (lambda d: d.update(extra={}), "unknown top-level key 'extra'"),
        (lambda d: d.pop("schema"), "'schema' must be 'fp-course-gpu-reference/1', found nothing"),
    ],
)
def test_messages_name_the_file_the_place_and_what_was_wrong(change, message):
    with pytest.raises(ReferenceDataError) as info:
        validate_reference(_broken(change), "reference.json")
    assert message in str(info.value)


def test_odd_python_objects_are_refused_not_compared():
    for schema in (np.array([1, 2]), torch.tensor([1.0, 2.0])):
        with pytest.raises(ReferenceDataError, match="'schema' must be"):
            validate_reference(_broken(lambda d, schema=schema: d.update(schema=schema)))
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(ReferenceDataError, match="nested too deeply"):
        validate_reference(_broken(lambda d: d["provenance"].update(alone=deep)))


def test_a_structure_that_contains_itself_is_refused_not_a_recursion_error():
    data = valid_reference()
    loop: list = []
    loop.append(loop)
    data["measurements"]["small_ops"]["value"] = loop
    with pytest.raises(
        ReferenceDataError, match=re.escape("measurements.small_ops.value[0] contains itself")
    ):
        validate_reference(data)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ("", "the file is empty"),
        ("  \n", "the file is empty"),
        ("[1, 2]", "the top level must be an object, not [1, 2] (a list)"),
        ("NaN", "the top level must be an object, not nan"),
        (
            '{"schema": "fp-course-gpu-reference/1", "provenance": []}',
            "'provenance' must be an object, got []",
        ),
        ("[" * 100_000, "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8 text"),
    ],
    ids=["not-json", "empty", "blank", "a-list", "nan", "bad-provenance", "too-deep", "not-utf8"],
)
def test_a_broken_file_gets_an_error_naming_the_file(content, message):
    path = reference_file(content)
    with pytest.raises(ReferenceDataError) as info:
        load_gpu_reference(path)
    assert str(info.value).startswith(f"{path}") and message in str(info.value), str(info.value)


def test_a_folder_is_not_a_reference_file(tmp_path):
    with pytest.raises(ReferenceDataError, match=re.escape(f"{tmp_path} is a folder")):
        load_gpu_reference(tmp_path)


def test_only_a_regular_file_of_a_sane_size_is_read(tmp_path):
    # a device never ends (/dev/zero read until MemoryError); opening a FIFO waits for a writer
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (Path("/dev/zero"), Path("/dev/null"), fifo):
        start = time.monotonic()
        with pytest.raises(ReferenceDataError, match=re.escape(f"{path} is not a regular file")):
            load_gpu_reference(path)
        assert time.monotonic() - start < 1.0
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: no 16 MiB written
        handle.truncate(reference.MAX_FILE_BYTES + 1)
    with pytest.raises(ReferenceDataError, match=re.escape(f"{big}: larger than 16 MiB")):
        load_gpu_reference(big)
    # a recording with a long settings note (about 1 MiB) is still well within the limit
    data = valid_reference()
    data["measurements"]["small_ops"]["settings"]["note"] = "x" * 2**20
    assert load_gpu_reference(reference_file(json.dumps(data), "long.json")) == data


def test_json_a_reader_refuses_is_not_valid_json_naming_the_file():
    # more digits than Python converts to an int: a plain ValueError from json, now named
    path = reference_file(json.dumps(valid_reference()).replace('"cpu_count": 16', '"cpu_count": ' + "9" * 5000))
    with pytest.raises(ReferenceDataError) as info:
        load_gpu_reference(path)
    assert str(info.value).startswith(f"{path}: not valid JSON"), str(info.value)
    # an int of 400 digits is read, but no float64 holds it: refused, not an OverflowError later
    path = reference_file(json.dumps(valid_reference()).replace('"tflops": 2.0', '"tflops": ' + "9" * 400))
    with pytest.raises(ReferenceDataError) as info:
        load_gpu_reference(path)
    assert "measurements.matmul_sweep.value[1].float32.tflops is an int of about 400 digits" in str(info.value)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["provenance"].update(date="2026-13-45"), "provenance.date must start with a real date"),
        (lambda d: d["provenance"].update(date="2026-02-29T10:00"), "provenance.date must start with a real date"),
        (lambda d: d["measurements"]["small_ops"].update(unit="\u200b"), "measurements.small_ops.unit must be"),
        (lambda d: d["provenance"].update(torch=" \ufeff "), "provenance.torch must be a non-blank str"),
        (
            lambda d: d["measurements"]["checkpoint"]["value"].update(file="a\x00b.pt"),
            "measurements.checkpoint.value.file must be a plain file name",
        ),
        (
            lambda d: d["measurements"]["checkpoint"]["value"].update(file="a\nb.pt"),
            "measurements.checkpoint.value.file must be a plain file name",
        ),
        (
            lambda d: d["measurements"]["matmul_sweep"]["value"][0]["float32"].update(tflops=10**400),
            "measurements.matmul_sweep.value[0].float32.tflops is an int of about 401 digits",
        ),
        (
            lambda d: d["measurements"]["elementwise_sweep"]["value"][0].update(n=10**5000),
            "measurements.elementwise_sweep.value[0].n is an int of about 5001 digits",
        ),
    ],
)
def test_what_only_looks_valid_is_refused(change, message):
    with pytest.raises(ReferenceDataError) as info:
        validate_reference(_broken(change), "reference.json")
    assert message in str(info.value)
    with pytest.raises(ReferenceDataError):
        recorded_sweeps(_broken(change))


def test_valid_text_dates_and_numbers_stay_valid():
    data = valid_reference()
    data["provenance"].update(date="2024-02-29 leap day", memory_gib=2**1000, cudnn=2**70)
    data["measurements"]["small_ops"].update(unit="µs\u200b", value=[2**1023, -(2**1023)])
    data["measurements"]["checkpoint"]["value"]["file"] = "poids réseau.pt"
    assert validate_reference(data) is data


def test_a_rate_too_large_to_plot_is_refused():
    rows = matmul_rows()
    rows[0]["float32"]["tflops"] = 1e306  # * 1e3 for GFLOP/s would be inf
    with pytest.raises(ReferenceDataError, match=re.escape("value[0].float32.tflops must be a finite number >= 0")):
        recorded_sweeps(_with_sweep("matmul_sweep", rows))


def test_a_path_no_file_system_holds_is_a_value_error():
    assert_clear_error(lambda: load_gpu_reference("x" * 5000), "path")


@given(
    content=st.one_of(
        st.binary(max_size=40), st.text(max_size=40), st.builds(json.dumps, ANYTHING.filter(_json))
    )
)
@FAST
def test_any_other_file_content_is_refused_naming_the_file(content):
    path = reference_file(content, "any.json")
    with pytest.raises(ReferenceDataError) as info:
        load_gpu_reference(path, allow_dry_run=True)
    assert str(info.value).startswith(str(path))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)


@given(name=st.sampled_from([n for n in REQUIRED_MEASUREMENTS if n != "checkpoint"]), value=JSON)
@FAST
def test_recorded_shows_a_value_of_any_shape(name, value):
    data = valid_reference()
    data["measurements"][name]["value"] = value
    table = recorded(name, data)
    assert "not live" in table.title and isinstance(str(table), str) and isinstance(table._repr_html_(), str)


def test_an_unknown_measurement_name_lists_the_known_ones():
    with pytest.raises(UnknownMeasurementError) as info:
        recorded("matmul", valid_reference())
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    assert all(name in str(info.value) for name in REQUIRED_MEASUREMENTS)


# never a number >= 0 that a size or a rate may be: a rate so large that scaled for the plot
# (TFLOP/s * 1e3) it would be inf is refused too
SWEEP_JUNK = st.one_of(REFERENCE_JUNK, st.sampled_from([1e301, 1.7e308]))


def matmul_read() -> list[dict]:
    """The parts of a matmul sweep that recorded_sweeps reads (its timings are free-form)."""
    return [
        {"n": 16, "float32": {"tflops": 0.5}, "bfloat16": {"tflops": 1.5}},
        {"n": 32, "float32": {"tflops": 2}, "bfloat16": {"tflops": 4.0}},
    ]


def elementwise_read() -> list[dict]:
    return [{"n": 1024, "gb_per_s": 7.5}, {"n": 4096, "gb_per_s": 24}]


def _with_sweep(name: str, rows: object) -> dict:
    data = valid_reference()
    data["measurements"][name]["value"] = rows
    return data


@pytest.mark.parametrize(
    "name, rows", [("matmul_sweep", matmul_read), ("elementwise_sweep", elementwise_read)]
)
@given(data=st.data())
@FAST
def test_a_malformed_sweep_is_refused_naming_the_place(name, rows, data):
    broken = data.draw(malformed(rows, junk=SWEEP_JUNK))
    original = rows()
    if isinstance(broken, list) and len(broken) == len(original) - 1 and all(r in original for r in broken):
        assert recorded_sweeps(_with_sweep(name, broken)) is not None  # one size fewer: still a sweep
        return
    with pytest.raises(ReferenceDataError) as info:
        recorded_sweeps(_with_sweep(name, broken))
    assert str(info.value).startswith(f"data: measurements.{name}.value"), str(info.value)


def test_a_sweep_row_without_its_rate_is_named():
    rows = matmul_rows()
    del rows[1]["bfloat16"]["tflops"]
    with pytest.raises(
        ReferenceDataError, match=re.escape("measurements.matmul_sweep.value[1].bfloat16.tflops")
    ):
        recorded_sweeps(_with_sweep("matmul_sweep", rows))


REFERENCE_CASES = [
    Case(
        validate_reference,
        lambda: dict(data=valid_reference(), source="reference.json"),
        {"data": anything_but(dict), "source": not_a_str()},
        names={"data": "top level"},
    ),
    Case(
        load_gpu_reference,
        lambda: dict(path=reference_file(), allow_dry_run=False),
        {
            "path": st.one_of(anything_but(str, Path, NONE), st.sampled_from(["", "a\x00b"])),
            "allow_dry_run": anything_but(bool),
        },
    ),
    Case(describe_reference, lambda: dict(data=valid_reference()), {"data": anything_but(dict)}),
    Case(
        recorded,
        lambda: dict(name="small_ops", data=valid_reference()),
        {"name": bad_choice(list(REQUIRED_MEASUREMENTS)), "data": anything_but(dict, NONE)},
    ),
    Case(recorded_sweeps, lambda: dict(data=valid_reference()), {"data": anything_but(dict, NONE)}),
]


# ----------------------------------------------------------------------------- helpers.distributed


class Launched(Exception):
    """What the stubs raise: run_ranks got past its checks and started to launch."""


def _launch_stub(*args, **kwargs):
    raise Launched


def run_ranks_launching_nothing(names, world, timeout):
    """``run_ranks`` with the folder, the store and the processes replaced by stubs that raise
    ``Launched``: returns "launched" once a call gets past the checks."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(distributed, "tempfile", SimpleNamespace(TemporaryDirectory=_launch_stub))
        mp.setattr(distributed, "dist", SimpleNamespace(TCPStore=_launch_stub))
        mp.setattr(distributed, "_start", _launch_stub)
        mp.setattr(distributed.mp, "start_processes", _launch_stub)
        try:
            distributed.run_ranks(names, world, timeout)
        except Launched:
            return "launched"
    raise AssertionError("run_ranks returned without launching")


run_ranks_launching_nothing = named(run_ranks_launching_nothing, "run_ranks")


def bad_names() -> st.SearchStrategy:
    known = list(distributed.EXPERIMENTS)
    return st.one_of(
        st.text(max_size=8),  # one name, not a list of them
        anything_but(list, tuple, str),
        st.just([]),
        st.lists(anything_but(str), min_size=1, max_size=3),
        st.lists(st.text(max_size=8).filter(lambda n: n not in known), min_size=1, max_size=3),
        st.tuples(st.sampled_from(known), st.text(max_size=8).filter(lambda n: n not in known)),
    )


def _csr(rows: torch.Tensor) -> torch.Tensor:
    with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        return rows.to_sparse_csr()


def bad_rows() -> st.SearchStrategy:
    """Not a tensor; not floating point; not 2-D; no rows; more rows than ranks could be."""
    return st.one_of(
        not_a_tensor(),
        st.sampled_from([torch.int64, torch.int32, torch.bool, torch.complex64]).map(
            lambda d: torch.zeros(3, 4, dtype=d)
        ),
        st.sampled_from([(), (4,), (2, 3, 4)]).map(torch.zeros),
        st.just(torch.zeros(0, 4)),
        st.just(torch.zeros(distributed.MAX_RING_RANKS + 1, 1)),
        # no values to add: sparse, or on the meta device (which would return a meta tensor)
        st.sampled_from(["sparse", "csr", "meta"]).map(
            lambda kind: torch.rand(3, 4, device="meta") if kind == "meta"
            else torch.rand(3, 4).to_sparse() if kind == "sparse" else _csr(torch.rand(3, 4))
        ),
    )


DISTRIBUTED_CASES = [
    Case(distributed.sum_data, lambda: dict(n=10), {"n": bad_int(min=0, max=10**8)}),
    Case(distributed.sum_bound, lambda: dict(n=10), {"n": bad_int(min=1, max=2**53)}),
    Case(
        distributed.single_process_training,
        lambda: dict(steps=1, global_batch=8),
        {"steps": bad_int(min=0, max=10**4), "global_batch": bad_int(min=1, max=10**4)},
    ),
    Case(
        distributed.ring_allreduce,
        lambda: dict(rows=torch.rand(3, 10), max_segment_bytes=64),
        {"rows": bad_rows(), "max_segment_bytes": bad_int(min=4)},
    ),
    Case(
        run_ranks_launching_nothing,
        lambda: dict(names=["allreduce", "ddp"], world=3, timeout=60.0),
        {
            "names": bad_names(),
            "world": bad_int(min=1, max=distributed.MAX_WORLD),
            "timeout": bad_real(positive=True),
        },
    ),
]

# The experiments run inside a process group; their valid calls run in one of a single rank.
RANK_CASES = [
    Case(
        distributed.allreduce,
        lambda: dict(rank=0, world=1),
        {"rank": bad_int(min=0, max=0), "world": bad_int(min=1)},
    ),
    Case(
        distributed.gradients,
        lambda: dict(rank=0, world=1, micro_batches=2),
        {"rank": bad_int(min=0, max=0), "world": bad_int(min=1), "micro_batches": bad_int(min=1, max=48)},
    ),
    Case(
        distributed.ddp,
        lambda: dict(rank=0, world=1, steps=1, global_batch=4),
        {
            "rank": bad_int(min=0, max=0),
            "world": bad_int(min=1),
            "steps": bad_int(min=0, max=10**4),
            "global_batch": bad_int(min=1, max=10**4),
        },
    ),
    *(
        Case(fn, lambda: dict(rank=0, world=1), {"rank": bad_int(min=0, max=0), "world": bad_int(min=1)})
        for fn in (distributed.seeding, distributed.sync_batchnorm, distributed.fails)
    ),
    # the last rank of hangs sleeps for an hour: rank 0 of 2 returns at once
    Case(
        distributed.hangs,
        lambda: dict(rank=0, world=2),
        {"rank": bad_int(min=0, max=1), "world": bad_int(min=1)},
    ),
]


@pytest.fixture(scope="module")
def one_rank():
    """A process group of one rank, in this process."""
    assert not dist.is_initialized()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_the_experiments_run_with_valid_arguments(one_rank):
    for case in RANK_CASES:
        if case.fn is distributed.fails:
            with pytest.raises(RuntimeError, match="rank 0 fails on purpose"):  # its job
                case.fn(**case.valid())
        else:
            assert isinstance(case.fn(**case.valid()), dict), case


@pytest.mark.parametrize("case, param", case_params(RANK_CASES))
@given(data=st.data())
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_an_experiment_refuses_a_bad_argument_before_any_work(case, param, data):
    def no_sleep(seconds):
        raise AssertionError("hangs slept: its arguments were not checked")

    with pytest.MonkeyPatch.context() as mp:  # no process group here either: any collective would fail
        mp.setattr(distributed, "time", SimpleNamespace(sleep=no_sleep))
        check_case(case, param, data)


def test_a_rank_is_below_the_world_size():
    error = assert_clear_error(lambda: distributed.allreduce(3, 3), "rank")
    assert "ranks are 0 to 2" in str(error)
    assert_clear_error(lambda: distributed.gradients(0, 64), "world")
    assert_clear_error(lambda: distributed.ddp(0, 4, global_batch=3), "global_batch")


def test_sizes_that_would_hang_or_overflow_are_refused_at_once():
    for call, name in [
        (lambda: distributed.single_process_training(steps=10**9), "steps"),
        (lambda: distributed.single_process_training(global_batch=10**5), "global_batch"),
        (lambda: distributed.ddp(0, 1, steps=10**12), "steps"),
        (lambda: distributed.ddp(0, 1, global_batch=10**7), "global_batch"),
        (lambda: distributed.sum_bound(10**400), "n"),
        (lambda: distributed.sum_bound(10**5000), "n"),
        (lambda: distributed.sum_bound(2**53 + 1), "n"),
    ]:
        start = time.monotonic()
        error = assert_clear_error(call, name)
        assert time.monotonic() - start < 1.0 and "at most" in str(error)
    assert distributed.sum_bound(2**53) == math.inf and distributed.sum_bound(10**6) > 0
    assert len(distributed.single_process_training(steps=2, global_batch=10**4)) == 4


def test_ring_allreduce_refuses_rows_without_values():
    rows = torch.rand(3, 10)
    assert_clear_error(lambda: distributed.ring_allreduce(rows.to_sparse()), "rows")
    assert_clear_error(lambda: distributed.ring_allreduce(_csr(rows)), "rows")
    error = assert_clear_error(lambda: distributed.ring_allreduce(rows.to("meta")), "rows")
    assert "meta" in str(error)


def test_a_meta_tensor_is_not_a_number():
    # a 0-d meta tensor has no value to read: refused naming the parameter, not a RuntimeError
    meta_int, meta_real = torch.tensor(3, device="meta"), torch.tensor(3.0, device="meta")
    assert_clear_error(lambda: distributed.sum_data(meta_int), "n")
    assert_clear_error(lambda: distributed.sum_bound(meta_int), "n")
    assert_clear_error(lambda: run_ranks_launching_nothing(["allreduce"], 1, meta_real), "timeout")
    assert_clear_error(lambda: run_ranks_launching_nothing(["allreduce"], meta_int, 1.0), "world")
    assert_clear_error(lambda: batch_invariance_failures(meta_int), "max_n")


def test_run_ranks_reaches_the_launch_only_with_valid_arguments():
    assert run_ranks_launching_nothing(("seeding",), 1, 0.5) == "launched"
    assert run_ranks_launching_nothing(["fails"], np.int64(2), torch.tensor(3.0)) == "launched"
    for names, world, timeout in [
        (["nothing"], 2, 1.0),
        ([], 2, 1.0),
        (["ddp"], 9, 1.0),
        (["ddp"], 2, math.inf),
    ]:
        start = time.monotonic()
        with pytest.raises((KeyError, ValueError)):
            run_ranks_launching_nothing(names, world, timeout)
        assert time.monotonic() - start < 1.0


def test_an_unknown_experiment_is_a_key_error_and_a_value_error_listing_the_known_ones():
    with pytest.raises(distributed.UnknownExperimentError) as info:
        run_ranks_launching_nothing(["allreduce", "nothing"], 2, 1.0)
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    assert "'nothing'" in str(info.value) and all(name in str(info.value) for name in distributed.EXPERIMENTS)


def test_lesson_11_still_prints_only_the_algorithms():
    # lesson 11 prints these functions' source to show what they compute; the checks stay out of it
    for fn in (distributed.ring_allreduce, distributed.allreduce, distributed.gradients):
        source = inspect.getsource(fn)
        assert source.startswith(f"def {fn.__name__}(") and "check_" not in source
    rows = torch.rand(3, 1000, generator=torch.Generator().manual_seed(1))
    assert torch.equal(distributed.ring_allreduce(rows), distributed.ring_allreduce.__wrapped__(rows))
    assert torch.equal(distributed.ring_allreduce(rows, np.int64(64)), distributed.ring_allreduce(rows, 64))


# ----------------------------------------------------------------------------- helpers.exercises

EXERCISE_CASES = [
    Case(check, lambda: dict(exercise="01.1", answer=2**24), {"exercise": bad_choice(exercise_ids())}),
    Case(
        Verdict,
        lambda: dict(exercise="01.1", ok=True, message="2**24"),
        {"exercise": not_a_str(), "ok": anything_but(bool, NONE), "message": not_a_str()},
    ),
    Case(batch_invariance_failures, lambda: dict(max_n=2), {"max_n": bad_int(min=1, max=256)}),
]


def _learners_bug(*args, **kwargs):
    raise ZeroDivisionError("a bug in the learner's function")


class Awkward:
    """An object every operation on which raises."""

    def _raise(self, *args, **kwargs):
        raise RuntimeError("awkward")

    __eq__ = __lt__ = __gt__ = __le__ = __ge__ = __bool__ = __len__ = __iter__ = _raise
    __float__ = __int__ = __index__ = __call__ = __getitem__ = __contains__ = _raise
    __hash__ = object.__hash__


#: What a learner might pass: anything at all, functions that return anything or raise,
#: containers of odd things, NaN and empty or meta tensors, objects that raise on every use.
LEARNER_ANSWERS = st.one_of(
    ANYTHING,
    st.functions(like=lambda *args: None, returns=ANYTHING, pure=True),
    st.tuples(ANYTHING, ANYTHING, ANYTHING),
    st.lists(ANYTHING, max_size=3),
    st.frozensets(st.integers(0, 8) | st.text(max_size=12), max_size=3),
    st.sampled_from(
        [
            _learners_bug,
            Awkward(),
            [Awkward()] * 3,
            (Awkward(), 1, 2),
            {Awkward()},
            Awkward,
            lambda *args: Awkward(),
            lambda *args: torch.zeros(3),
            float("nan"),
            np.float32("nan"),
            torch.full((2, 2), math.nan),
            torch.empty(0),
            torch.empty(3, device="meta"),
            np.array([1.0, 2.0]),
            torch.nn.Module,
            torch.nn.Linear,
            type("Broken", (torch.nn.Module,), {"__init__": _learners_bug}),
            10**400,
            -(10**400),
            [math.nan] * 3,
            (math.inf, 1.0, 1.0),
            ["a", "b", "c"],
            [0.5, 1, 2],
        ]
    ),
)


@pytest.mark.parametrize("exercise", exercise_ids())
@given(answer=LEARNER_ANSWERS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_answer_gets_a_verdict_never_an_exception(exercise, answer):
    verdict = check(exercise, answer)
    assert isinstance(verdict, Verdict) and verdict.exercise == exercise
    if answer is None:
        assert verdict.ok is None
    else:
        assert verdict.ok in (True, False) and verdict.ok is not None
    assert isinstance(verdict.message, str) and len(verdict.message) > 10
    assert str(verdict).startswith(f"Exercise {exercise}: ")


def test_an_answer_no_checker_foresaw_still_gets_a_verdict(monkeypatch):
    question, _ = exercises._CHECKERS["01.1"]
    monkeypatch.setitem(exercises._CHECKERS, "01.1", (question, _learners_bug))
    verdict = check("01.1", 5)
    assert verdict.ok is False and "could not be checked (ZeroDivisionError" in verdict.message
    assert question in verdict.message


def test_a_learners_function_that_raises_or_returns_tensors_gets_a_hint():
    assert "calling it failed: ZeroDivisionError" in check("08.1", _learners_bug).message
    assert "must return a number of FLOPs" in check("08.1", lambda n: torch.zeros(3)).message
    assert "must return True or False" in check("10.3", lambda a, e: a == e).message
    assert check("08.1", lambda n: torch.tensor(2 * n**3)).ok is True  # a 0-d tensor is a number


def test_an_unknown_exercise_points_to_the_valid_ids():
    error = assert_clear_error(lambda: check("1.1", 3), "exercise")
    assert "did you mean '01.1'" in str(error) and all(e in str(error) for e in exercise_ids())
    assert "exercise must be an id string" in str(assert_clear_error(lambda: check(1.1, 3), "exercise"))


# ----------------------------------------------------------------------------- every case


CASES = REFERENCE_CASES + DISTRIBUTED_CASES + EXERCISE_CASES


def test_valid_calls_work():
    for case in CASES:  # each must succeed, so that the bad-input tests below prove something
        case.fn(**case.valid())


@pytest.mark.parametrize("case, param", case_params(CASES))
@given(data=st.data())
@FAST
def test_bad_input_gets_a_clear_error(case, param, data):
    check_case(case, param, data)

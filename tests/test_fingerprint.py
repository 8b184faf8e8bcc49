"""helpers.fingerprint: the function and `python -m helpers.fingerprint`."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import helpers
from helpers.devices import RESULT_ENV_VARS
from helpers.fingerprint import FINGERPRINT_ENV_VARS, diff_fingerprints, fingerprint, main

SRC = Path(helpers.__file__).resolve().parent.parent


KEYS = [
    "python", "platform", "torch", "cuda", "cudnn", "mkl", "mkl_version", "onednn", "onednn_version",
    "cpu_capability", "cpu", "cuda_devices", "threads.intra_op", "threads.inter_op", "default_dtype",
    "precision.float32_matmul", "precision.cublas.fp16_reduced_precision_reduction",
    "precision.cublas.bf16_reduced_precision_reduction", "deterministic.algorithms",
    "deterministic.warn_only", "deterministic.cudnn", "deterministic.cudnn_benchmark",
    "deterministic.fill_uninitialized_memory", "env.PYTHONHASHSEED",
]


def test_fingerprint_is_flat_json_with_the_documented_keys():
    record = fingerprint()
    assert json.loads(json.dumps(record)) == record
    assert all(isinstance(v, (str, int, float, bool, type(None))) for v in record.values())
    missing = [k for k in KEYS + [f"env.{name}" for name in RESULT_ENV_VARS] if k not in record]
    assert not missing
    assert record["torch"] == torch.__version__
    assert record["threads.intra_op"] == torch.get_num_threads()
    assert any(k.startswith(("precision.fp32_precision", "precision.allow_tf32")) for k in record)


def _changed_keys(change, restore) -> set[str]:
    before = fingerprint()
    try:
        change()
        after = fingerprint()
    finally:
        restore()
    assert fingerprint() == before  # the test restored every setting
    return {row[0] for row in diff_fingerprints(before, after).rows}


def test_fingerprint_follows_the_thread_count():
    n = torch.get_num_threads()
    changed = _changed_keys(lambda: torch.set_num_threads(n + 1), lambda: torch.set_num_threads(n))
    assert changed == {"threads.intra_op"}


def _fp32_precision_settings() -> list[tuple[object, str]]:
    """Each ``fp32_precision`` setting this torch has, with its value: setting the float32 matmul
    precision back does not put them back (``"highest"`` leaves ``"ieee"`` where ``"none"`` was)."""
    b = torch.backends
    places = [b, b.mkldnn, b.mkldnn.matmul, b.mkldnn.conv, b.mkldnn.rnn, b.cuda.matmul, b.cudnn, b.cudnn.conv,
              b.cudnn.rnn]
    return [(place, place.fp32_precision) for place in places if hasattr(place, "fp32_precision")]


def test_fingerprint_follows_the_float32_matmul_precision():
    old, saved = torch.get_float32_matmul_precision(), _fp32_precision_settings()
    new = "medium" if old != "medium" else "highest"

    def restore():
        torch.set_float32_matmul_precision(old)
        for place, value in saved:
            place.fp32_precision = value

    changed = _changed_keys(lambda: torch.set_float32_matmul_precision(new), restore)
    assert "precision.float32_matmul" in changed


def test_fingerprint_follows_deterministic_algorithms():
    # torch.use_deterministic_algorithms also copies the flag into torch._inductor's config, whose
    # first import takes over a second; the fingerprint reads the flag that this setter sets.
    use = getattr(torch._C, "_set_deterministic_algorithms", torch.use_deterministic_algorithms)
    on = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    changed = _changed_keys(lambda: use(not on, warn_only=not warn), lambda: use(on, warn_only=warn))
    assert {"deterministic.algorithms", "deterministic.warn_only"} <= changed


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "MKL_CBWR", "PYTHONHASHSEED"])
def test_fingerprint_follows_result_changing_environment_variables(name, monkeypatch):
    monkeypatch.delenv(name, raising=False)
    before = fingerprint()
    monkeypatch.setenv(name, "3")
    after = fingerprint()
    assert before[f"env.{name}"] is None and after[f"env.{name}"] == "3"
    assert diff_fingerprints(before, after).rows == [[f"env.{name}", None, "3"]]


NEW_KEYS = [
    "numpy", "nvidia_driver", "backends.cudnn.enabled", "backends.mkldnn.enabled", "backends.cuda.flash_sdp",
    "backends.cuda.mem_efficient_sdp", "backends.cuda.math_sdp", "backends.cuda.cudnn_sdp",
    "backends.cuda.fp16_bf16_reduction_math_sdp", "backends.cuda.preferred_blas_library",
    "backends.cuda.preferred_linalg_library", "backends.mha.fastpath", "backends.opt_einsum.enabled",
    "backends.opt_einsum.strategy", "env.MKL_ENABLE_INSTRUCTIONS", "env.TORCH_BLAS_PREFER_CUBLASLT",
]


def test_fingerprint_records_the_kernel_switches_and_more_versions():
    import numpy

    record = fingerprint()
    missing = [k for k in NEW_KEYS if k not in record]
    assert not missing
    assert record["numpy"] == numpy.__version__
    if hasattr(torch.backends.mkldnn, "deterministic"):
        assert record["backends.mkldnn.deterministic"] == torch.backends.mkldnn.deterministic
    assert "MKL_ENABLE_INSTRUCTIONS" not in RESULT_ENV_VARS  # the fingerprint's own list only
    assert "TORCH_BLAS_PREFER_CUBLASLT" not in RESULT_ENV_VARS
    if not torch.cuda.is_available():
        assert record["nvidia_driver"] is None


@pytest.mark.parametrize(
    "key, get, set_",
    [
        (
            "backends.mha.fastpath",
            torch.backends.mha.get_fastpath_enabled,
            torch.backends.mha.set_fastpath_enabled,
        ),
        ("backends.cuda.math_sdp", torch.backends.cuda.math_sdp_enabled, torch.backends.cuda.enable_math_sdp),
        ("backends.cuda.flash_sdp", torch.backends.cuda.flash_sdp_enabled,
         torch.backends.cuda.enable_flash_sdp),
        (
            "backends.mkldnn.enabled",
            lambda: torch.backends.mkldnn.enabled,
            lambda v: setattr(torch.backends.mkldnn, "enabled", v),
        ),
    ],
)
def test_fingerprint_follows_the_kernel_switches(key, get, set_):
    old = get()
    assert _changed_keys(lambda: set_(not old), lambda: set_(old)) == {key}


# The variables the course names as deciding numbers, besides helpers.devices.RESULT_ENV_VARS.
OWN_ENV_VARS = [
    "MKL_ENABLE_INSTRUCTIONS", "TORCH_BLAS_PREFER_CUBLASLT", "MKL_DYNAMIC", "OMP_DYNAMIC", "NCCL_ALGO",
    "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "TORCHINDUCTOR_FREEZING",
    "TORCHINDUCTOR_DETERMINISTIC", "TORCHINDUCTOR_BATCH_INVARIANT", "TORCHINDUCTOR_MAX_AUTOTUNE",
    "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM", "TORCHINDUCTOR_EMULATE_PRECISION_CASTS",
    "TORCHINDUCTOR_CPP_ENABLE_UNSAFE_MATH_OPT_FLAG", "TORCHINDUCTOR_CPP_ENABLE_FLOATING_POINT_CONTRACT_FLAG",
    "LD_PRELOAD", "GLIBC_TUNABLES",
]


@pytest.mark.parametrize("name", OWN_ENV_VARS)
def test_fingerprint_follows_its_own_environment_variables(name, monkeypatch):
    monkeypatch.delenv(name, raising=False)
    before = fingerprint()
    monkeypatch.setenv(name, "1")
    assert {row[0] for row in diff_fingerprints(before, fingerprint()).rows} == {f"env.{name}"}


def test_the_list_of_environment_variables_has_each_once_and_keeps_result_env_vars():
    assert len(set(FINGERPRINT_ENV_VARS)) == len(FINGERPRINT_ENV_VARS)
    assert set(FINGERPRINT_ENV_VARS) == set(RESULT_ENV_VARS) | {"PYTHONHASHSEED", *OWN_ENV_VARS}
    assert "CUBLAS_WORKSPACE_CONFIG" in RESULT_ENV_VARS


@pytest.mark.parametrize("name", [n for n in OWN_ENV_VARS if n.startswith("TORCHINDUCTOR_")])
def test_each_inductor_variable_is_one_this_torch_reads(name):
    config = Path(torch.__file__).parent / "_inductor" / "config.py"
    assert f'"{name}"' in config.read_text(encoding="utf-8")


# ============================================================================ diff_fingerprints


def test_diff_of_equal_fingerprints_is_empty_also_through_json():
    record = fingerprint()
    table = diff_fingerprints(record, json.loads(json.dumps(record)))
    assert table.headers == ["setting", "a", "b"]
    assert len(table.rows) == 0


def test_diff_lists_changed_added_and_removed_keys_sorted():
    a = {"torch": "2.13", "threads.intra_op": 2, "env.MKL_CBWR": None, "cuda": None}
    b = {"torch": "2.14", "threads.intra_op": 2, "env.MKL_CBWR": None, "mkl": True}
    rows = diff_fingerprints(a, b).rows
    assert rows == [["cuda", None, "(absent)"], ["mkl", "(absent)", True], ["torch", "2.13", "2.14"]]


def test_diff_tells_true_from_one_and_none_from_a_string():
    rows = diff_fingerprints({"x": True, "y": None, "z": 1}, {"x": 1, "y": "None", "z": 1.0}).rows
    assert [row[0] for row in rows] == ["x", "y"]


BAD_FINGERPRINTS = {  # a and b, the error, and a fragment of the message
    "not a dict": (["torch"], {}, TypeError, "a must be a dict of settings"),
    "a key not a str": ({"torch": "2.13"}, {1: "x"}, TypeError, "b has a key that is not a str: 1"),
    "a list value": ({"torch": [2]}, {}, TypeError, "a['torch'] must be a str, int, float, bool or None"),
    "a NaN": ({}, {"x": math.nan}, ValueError, "b['x'] must be a finite number"),
}


@pytest.mark.parametrize("a, b, error, fragment", BAD_FINGERPRINTS.values(), ids=BAD_FINGERPRINTS)
def test_a_bad_fingerprint_gets_a_clear_error_naming_its_side(a, b, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        diff_fingerprints(a, b)


def test_diff_fingerprints_accepts_any_flat_dict_of_settings():
    # By design: in Python a few chosen keys can be compared; only the command line, which reads
    # files that may be anything, asks for the "torch" and "python" keys.
    assert diff_fingerprints({}, {}).rows == []
    rows = diff_fingerprints({"threads.intra_op": 1}, {"threads.intra_op": 2}).rows
    assert rows == [["threads.intra_op", 1, 2]]


# ============================================================================ the command line


def test_the_command_line_prints_records_and_compares(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    shown = capsys.readouterr()
    assert "threads.intra_op" in shown.out and shown.err == ""
    assert main(["--json", "-"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads(json.dumps(fingerprint()))
    assert main(["--json", "f.json"]) == 0 and capsys.readouterr().out == ""
    assert json.loads(Path("f.json").read_text()) == record
    Path("g.json").write_text(json.dumps({**record, "env.MKL_CBWR": "AUTO"}))
    assert main(["--diff", "f.json", "f.json"]) == 0 and "agree" in capsys.readouterr().out
    assert main(["--diff", "f.json", "g.json"]) == 1
    differ = capsys.readouterr().out
    assert "env.MKL_CBWR" in differ and "AUTO" in differ


NOT_A_FINGERPRINT = "not a fingerprint"
BAD_FILES = {  # the file's content (None: no file), and a fragment of the message
    "missing": (None, "no such file"),
    "not JSON": ("{not json", "not valid JSON"),
    "not an object": ("[1, 2]", "not an object of settings"),
    "a value not a scalar": ('{"python": "3.11.9", "torch": [2]}', "['torch'] must be a str"),
    "an empty object": ("{}", "bad.json: not a fingerprint (no 'torch' or 'python' key)"),
    "a config file": ('{"lr": 0.001, "batch_size": 32, "model": "resnet18"}', NOT_A_FINGERPRINT),
    "no python key": ('{"torch": "2.13.0"}', "not a fingerprint (no 'python' key)"),
    "no torch key": ('{"python": "3.11.9"}', "not a fingerprint (no 'torch' key)"),
}


@pytest.mark.parametrize("content, fragment", BAD_FILES.values(), ids=BAD_FILES)
def test_the_command_line_names_what_is_wrong_with_a_file(content, fragment, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("ok.json").write_text('{"python": "3.11.9", "torch": "2.13.0"}')
    if content is not None:
        Path("bad.json").write_text(content)
    for argv in (["--diff", "bad.json", "ok.json"], ["--diff", "ok.json", "bad.json"]):
        assert main(argv) == 2
        error = capsys.readouterr().err
        assert fragment in error and "Traceback" not in error and error.count("\n") == 1
        if fragment == NOT_A_FINGERPRINT:
            assert "python -m helpers.fingerprint --json FILE" in error


def test_two_empty_objects_are_not_two_fingerprints_that_agree(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("empty.json").write_text("{}")
    assert main(["--diff", "empty.json", "empty.json"]) == 2
    shown = capsys.readouterr()
    assert "agree" not in shown.out and NOT_A_FINGERPRINT in shown.err


REVIEWED_ENV = {
    "NCCL_ALGO": "Ring", "NCCL_NVLS_ENABLE": "0", "TORCHINDUCTOR_FREEZING": "1", "MKL_DYNAMIC": "FALSE"
}


def test_diff_sees_the_nccl_inductor_and_mkl_variables(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in REVIEWED_ENV:
        monkeypatch.delenv(name, raising=False)
    assert main(["--json", "plain.json"]) == 0
    for name, value in REVIEWED_ENV.items():
        monkeypatch.setenv(name, value)
    assert main(["--json", "set.json"]) == 0
    assert main(["--diff", "plain.json", "set.json"]) == 1
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[3:]]
    assert rows == [[f"env.{name}", "None", value] for name, value in sorted(REVIEWED_ENV.items())]


def test_help_says_what_a_fresh_interpreter_cannot_see(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for fragment in [
        "starts a fresh interpreter", "the machine, the environment and the build decide",
        "none of the settings a script makes in code", "use_deterministic_algorithms", "set_num_threads",
        "set_float32_matmul_precision", "import json",
        'from helpers.fingerprint import fingerprint; json.dump(fingerprint(), open("a.json", "w"))',
    ]:
        assert fragment in text, fragment
    import helpers.fingerprint as module

    assert "starts a fresh interpreter" in " ".join(module.__doc__.split())


def test_python_m_helpers_fingerprint_runs_silently(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "helpers.fingerprint", "--json", "f.json"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""  # no warning from runpy either
    assert json.loads((tmp_path / "f.json").read_text())["torch"] == torch.__version__


def _python_m(args, tmp_path, env=None):
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **(env or {}), "PYTHONPATH": path}
    return subprocess.Popen(
        [sys.executable, "-m", "helpers.fingerprint", *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _read_one_line_and_close(child) -> tuple[str, str]:
    first = child.stdout.readline()
    child.stdout.close()
    with child.stderr:
        return first, child.stderr.read()


def test_a_table_into_a_closed_pipe_ends_quietly(tmp_path):
    # An 80,000-character value (of a variable that nothing in the process reads) makes the table
    # larger than a pipe's buffer, so the child is still writing when the reader closes the pipe;
    # the status 141 shows that it met the closed pipe (an output that fitted would end with 0).
    child = _python_m([], tmp_path, env={"NCCL_PROTO": "x" * 80_000})
    first, error = _read_one_line_and_close(child)
    assert child.wait(timeout=120) == 141
    assert first == "Fingerprint\n" and "Traceback" not in error and "BrokenPipeError" not in error


def test_a_diff_into_a_closed_pipe_ends_quietly(tmp_path):
    a = {"python": "3.11.9", "torch": "2.13.0"}
    b = {**a, **{f"setting.{i:05}": i for i in range(20_000)}}
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    child = _python_m(["--diff", "a.json", "b.json"], tmp_path)
    first, error = _read_one_line_and_close(child)
    assert child.wait(timeout=120) == 141
    assert first.startswith("Settings that differ")
    assert "Traceback" not in error and "BrokenPipeError" not in error


def test_the_readmes_in_process_one_liner_records_a_fingerprint(tmp_path):
    readme = (SRC.parent / "README.md").read_text(encoding="utf-8")
    line = re.search(r"`(import json; from helpers\.fingerprint import [^`]+)`", readme).group(1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads((tmp_path / "a.json").read_text())["torch"] == torch.__version__


def test_an_older_record_without_a_variable_agrees_where_it_is_unset():
    new = {"torch": "2.13", "python": "3.11", "env.NCCL_ALGO": None, "env.LD_PRELOAD": "libjemalloc.so"}
    old = {"torch": "2.13", "python": "3.11"}
    assert diff_fingerprints(old, new).rows == [["env.LD_PRELOAD", "(absent)", "libjemalloc.so"]]

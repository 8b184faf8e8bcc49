"""Unit tests for helpers.devices and helpers.show.tables."""

import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from helpers import (
    Table,
    available_devices,
    best_device,
    environment_report,
    environment_summary,
    module_devices,
)
from helpers.devices import RESULT_ENV_VARS, describe_gpu


def test_best_device_follows_availability():
    expected = "cuda" if torch.cuda.is_available() else ("mps" if "mps" in available_devices() else "cpu")
    assert best_device().type == expected
    assert available_devices()[-1] == "cpu"


def test_explicit_override():
    assert best_device("cpu") == torch.device("cpu")
    assert best_device(torch.device("cpu")) == torch.device("cpu")


ABSENT_DEVICE = "mps" if torch.cuda.is_available() else "cuda"  # a device this machine lacks
BAD_INPUTS = {  # a prefer, the error it must raise, and a fragment of the message
    "an int": (3, TypeError, "prefer must be a str or a torch.device"),
    "a name torch does not know": ("gpu", ValueError, "prefer is not a device torch knows: 'gpu'"),
    "a type the course does not use": ("xla", ValueError, "not 'xla'"),
    "meta": ("meta", ValueError, "not 'meta'"),
    "a device this machine lacks": (ABSENT_DEVICE, ValueError, "not available on this machine"),
    "a CUDA index beyond the devices": (f"cuda:{torch.cuda.device_count()}", ValueError,
                                        "CUDA device" if torch.cuda.is_available() else "not available"),
}


@pytest.mark.parametrize("prefer, error, fragment", BAD_INPUTS.values(), ids=BAD_INPUTS)
def test_a_bad_prefer_is_an_error_not_a_fallback(prefer, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        best_device(prefer)


def test_environment_report_has_the_settings_that_decide_numbers():
    report = environment_report()
    names = {row[0] for row in report.rows}
    for needed in (
        "torch",
        "CUDA available",
        "cuDNN",
        "intra-op threads",
        "inter-op threads",
        "MKL",
        "oneDNN (mkldnn)",
        "float32 matmul precision",
        "deterministic algorithms",
    ):
        assert needed in names
    # TF32 is reported through exactly one of the two APIs, never both
    new_api = any(n.startswith("fp32_precision") for n in names)
    old_api = any("allow_tf32" in n for n in names)
    assert new_api != old_api and new_api == hasattr(torch.backends, "fp32_precision")
    values = dict((row[0], row[1]) for row in report.rows)
    assert values["intra-op threads"] == torch.get_num_threads()
    assert values["CUDA available"] is torch.cuda.is_available()
    assert "<table>" in report._repr_html_() and "intra-op threads" in str(report)


def test_environment_report_reads_the_cpu_and_onednn_settings():
    values = dict((row[0], row[1]) for row in environment_report().rows)
    assert values["CPU capability (SIMD kernels)"] == torch.backends.cpu.get_cpu_capability()
    assert values["cuBLAS fp16 reduced-precision reduction"] is True  # PyTorch's default
    assert values["cuBLAS bf16 reduced-precision reduction"] is True
    if hasattr(torch.backends, "fp32_precision"):
        matmul = (torch.backends.mkldnn.matmul, torch.backends.cuda.matmul)
        before = (torch.get_float32_matmul_precision(), *(m.fp32_precision for m in matmul))
        try:  # "medium" hands CPU float32 matmuls to oneDNN in bfloat16: the report must show it
            torch.set_float32_matmul_precision("medium")
            values = dict((row[0], row[1]) for row in environment_report().rows)
        finally:  # the legacy setter leaves both backends at 'ieee', not at their own earlier values
            torch.set_float32_matmul_precision(before[0])
            for m, value in zip(matmul, before[1:], strict=True):
                m.fp32_precision = value
        assert (torch.get_float32_matmul_precision(), *(m.fp32_precision for m in matmul)) == before
        assert values["float32 matmul precision"] == "medium"
        assert values["fp32_precision (oneDNN matmul)"] == "bf16"
        assert values["fp32_precision (cuDNN rnn)"] == torch.backends.cudnn.rnn.fp32_precision


def test_environment_report_survives_mixed_precision_apis():
    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("this torch has only the legacy precision flags")
    before = torch.backends.mkldnn.matmul.fp32_precision
    try:  # the new API alone: the legacy getter get_float32_matmul_precision() now raises
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        with pytest.raises(RuntimeError):
            torch.get_float32_matmul_precision()
        values = dict((row[0], row[1]) for row in environment_report().rows)
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = before
    assert values["float32 matmul precision"].startswith("(unreadable")
    assert values["fp32_precision (oneDNN matmul)"] == "bf16"


def test_environment_report_shows_result_deciding_variables(monkeypatch):
    for name in RESULT_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    monkeypatch.setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1")
    monkeypatch.setenv("MKL_CBWR", "")
    monkeypatch.setenv("ONEDNN_DEFAULT_FPMATH_MODE", "BF16")
    values = dict((row[0], row[1]) for row in environment_report().rows)
    assert values["$NVIDIA_TF32_OVERRIDE"] == "0"
    assert values["$ONEDNN_DEFAULT_FPMATH_MODE"] == "BF16"
    assert values["$DNNL_DEFAULT_FPMATH_MODE"] == "unset"
    assert values["$TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"] == "1"
    assert values["$MKL_CBWR"] == "(empty)"
    assert values["$OMP_NUM_THREADS"] == values["$ATEN_CPU_CAPABILITY"] == "unset"
    assert {f"${name}" for name in RESULT_ENV_VARS} <= set(values)


def test_environment_summary_is_one_line_naming_what_decides_numbers(monkeypatch):
    for name in RESULT_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    line = environment_summary()
    assert "\n" not in line and f"torch {torch.__version__}" in line
    assert f"{torch.get_num_threads()} threads" in line and "set:" not in line
    assert torch.backends.cpu.get_cpu_capability() in line
    assert ("no CUDA device" in line) != torch.cuda.is_available()
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    assert environment_summary().endswith("set: ATEN_CPU_CAPABILITY=default CUBLAS_WORKSPACE_CONFIG=:4096:8")


def test_module_devices():
    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    assert module_devices(m) == {torch.device("cpu")}
    m[0].to("meta")  # parameters on two devices: the reason Module has no .device
    assert module_devices(m) == {torch.device("cpu"), torch.device("meta")}
    assert module_devices(torch.nn.ReLU()) == set()


def test_module_devices_counts_buffers():
    m = torch.nn.Module()
    m.register_buffer("scale", torch.ones(1, device="meta"), persistent=False)
    assert module_devices(m) == {torch.device("meta")}


def test_table_text_and_html():
    t = Table(["a", "b"], [(1, 0.000012345), ("x<y", True)], title="T")
    text = str(t)
    assert text.splitlines()[0] == "T" and "1.234e-05" in text
    assert "x&lt;y" in t._repr_html_()


def test_tf32_cublas_override_sets_the_starting_flags():
    """TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 is read once, at start-up, as the initial matmul precision
    (aten/src/ATen/Context.h), so a fresh process reports it through the flags as well."""
    code = (
        "from helpers import environment_report\n"
        "v = dict((r[0], r[1]) for r in environment_report().rows)\n"
        "print(v['float32 matmul precision'], v.get('fp32_precision (CUDA matmul)'), "
        "v['$TORCH_ALLOW_TF32_CUBLAS_OVERRIDE'])\n"
    )
    env = dict(os.environ, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE="1")
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    precision, cuda_matmul, variable = out.stdout.split()
    assert (precision, variable) == ("high", "1")
    assert cuda_matmul in ("tf32", "None")  # None: a torch without the fp32_precision settings


# Three GPUs a learner may meet: the T4 of free notebook services (Turing), an A100 (Ampere) and an
# H100 (Hopper), with the names and SM counts torch reports for them.
GPUS = {
    "T4": ("Tesla T4", 7, 5, 40, "Tesla T4 (compute capability 7.5, 40 SMs, no TF32)"),
    "A100": ("NVIDIA A100-SXM4-40GB", 8, 0, 108, "NVIDIA A100-SXM4-40GB (compute capability 8.0, 108 SMs)"),
    "H100": ("NVIDIA H100 80GB HBM3", 9, 0, 132, "NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs)"),
}


def use_gpu(monkeypatch, name, major, minor, sms, hip=None):
    """Make torch.cuda.get_device_properties describe this GPU, on a CUDA (or ROCm) build."""
    props = SimpleNamespace(name=name, major=major, minor=minor, multi_processor_count=sms)
    monkeypatch.setattr(torch.version, "hip", hip)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=None: props)


@pytest.mark.parametrize("name, major, minor, sms, expected", GPUS.values(), ids=GPUS)
def test_describe_gpu_says_which_gpus_lack_tf32(monkeypatch, name, major, minor, sms, expected):
    use_gpu(monkeypatch, name, major, minor, sms)
    assert describe_gpu(0) == expected


def test_describe_gpu_agrees_with_torchs_tf32_check(monkeypatch):
    # torch.cuda.is_tf32_supported on a CUDA build: is_bf16_supported(including_emulation=False), major >= 8
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for name, major, minor, sms, _ in GPUS.values():
        use_gpu(monkeypatch, name, major, minor, sms)
        assert ("no TF32" not in describe_gpu(0)) == torch.cuda.is_tf32_supported(), name


def test_describe_gpu_says_nothing_of_tf32_on_rocm(monkeypatch):
    use_gpu(monkeypatch, "AMD", 9, 4, 304, hip="6.4")
    assert describe_gpu(0) == "AMD (compute capability 9.4, 304 SMs)"


def test_environment_report_describes_each_gpu(monkeypatch):
    use_gpu(monkeypatch, *GPUS["T4"][:-1])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    values = dict((row[0], row[1]) for row in environment_report().rows)
    assert values["cuda:0"] == GPUS["T4"][-1] and values["CUDA available"] is True

"""Unit tests for helpers.devices and helpers.tables."""

import pytest
import torch

from helpers import Table, available_devices, best_device, environment_report, module_devices


def test_best_device_follows_availability():
    expected = "cuda" if torch.cuda.is_available() else ("mps" if "mps" in available_devices() else "cpu")
    assert best_device().type == expected
    assert available_devices()[-1] == "cpu"


def test_explicit_override():
    assert best_device("cpu") == torch.device("cpu")
    assert best_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_unavailable_device_is_an_error_not_a_fallback():
    with pytest.raises(ValueError, match="not available"):
        best_device("cuda")


@pytest.mark.parametrize("bad, error", [(3, TypeError), ("gpu", ValueError), ("xla", ValueError)])
def test_bad_override(bad, error):
    with pytest.raises(error):
        best_device(bad)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_index_out_of_range():
    with pytest.raises(ValueError, match="CUDA device"):
        best_device(f"cuda:{torch.cuda.device_count()}")


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


def test_module_devices_rejects_non_modules():
    with pytest.raises(TypeError, match="nn.Module"):
        module_devices(torch.ones(2))


def test_table_text_and_html():
    t = Table(["a", "b"], [(1, 0.000012345), ("x<y", True)], title="T")
    text = str(t)
    assert text.splitlines()[0] == "T" and "1.234e-05" in text
    assert "x&lt;y" in t._repr_html_()


def test_table_rejects_ragged_rows():
    with pytest.raises(ValueError, match="row 0"):
        Table(["a", "b"], [(1,)])
    with pytest.raises(ValueError, match="header"):
        Table([], [])

"""The GPU runner's pieces that can be checked anywhere (the run itself needs CUDA)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import gpu  # noqa: E402


def test_pins_for_the_gpu_machine_leave_its_torch_alone():
    with gpu.pins_without_torch() as pins:
        lines = pins.read_text().splitlines()
    assert not pins.exists()  # removed after use
    assert not any(line.startswith("torch==") for line in lines)
    assert any(line.startswith("nbval==") for line in lines)


def test_every_module_the_suite_needs_is_found_here():
    assert gpu.missing_modules() == []


def test_the_run_puts_the_site_folder_and_src_first_and_pins_its_plugins():
    env = gpu.site_env()
    assert env["PYTHONPATH"].split(":")[:2] == [str(gpu.SITE), str(ROOT / "src")]
    assert env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_test_gpu_refuses_to_run_without_cuda():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu.py"), "test"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "needs a CUDA device" in done.stderr


# --- the wheelhouse and what travels (tools/gpu.py gather, check, install, size) ------------------


def test_wheel_file_names_are_read_as_pep_427_says():
    name, version, pythons, abis, platforms = gpu.wheel_tags("ruamel_yaml-0.19.1-py3-none-any.whl")
    assert (name, version, pythons, abis, platforms) == ("ruamel-yaml", "0.19.1", ["py3"], ["none"], ["any"])
    assert gpu.installable_on_cp312_manylinux("pyzmq-27.3.0-cp312-abi3-manylinux_2_28_x86_64.whl")
    assert gpu.installable_on_cp312_manylinux("torchao-0.18.0-cp310-abi3-manylinux_2_24_x86_64.whl")
    assert not gpu.installable_on_cp312_manylinux("pyyaml-6.0.4-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert not gpu.installable_on_cp312_manylinux("numpy-2.5.5-cp312-cp312-macosx_14_0_arm64.whl")
    with pytest.raises(ValueError):
        gpu.wheel_tags("nbval-0.11.0.tar.gz")


def test_a_wheelhouse_with_two_versions_a_foreign_wheel_or_a_gap_is_refused(tmp_path):
    packages = (*gpu.PACKAGES, *gpu.RUN_PINS)
    names = [f"{gpu.normalize(n).replace('-', '_')}-1.0-py3-none-any.whl" for n in packages]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert gpu.check_wheels(gpu.wheel_files(tmp_path), pins={}) == []
    assert any("the tested pin is nbval==0.11.0" in p for p in gpu.check_wheels(gpu.wheel_files(tmp_path)))
    (tmp_path / "nbval-1.1-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "numpy-2.5.5-cp312-cp312-win_amd64.whl").write_bytes(b"")
    (tmp_path / names[0]).unlink()
    problems = gpu.check_wheels(gpu.wheel_files(tmp_path), pins={})
    assert any("nbval: 2 versions (1.0, 1.1)" in p for p in problems)
    assert any("win_amd64" in p for p in problems)
    assert any(p == f"{list(gpu.PACKAGES)[0]} is missing" for p in problems)
    assert gpu.check_wheels(gpu.wheel_files(tmp_path), limit_mib=-1, pins={})[-1].endswith("MiB limit")


def test_install_never_reaches_for_pypi_without_a_wheelhouse(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu, "WHEELHOUSE", tmp_path / "wheelhouse")
    monkeypatch.setattr(gpu.subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a[0][:4]}"))
    with pytest.raises(gpu.WheelhouseError, match="installs offline only.*make gpu-wheels"):
        gpu.install()
    (tmp_path / "wheelhouse").mkdir()
    (tmp_path / "wheelhouse" / "nbval-0.11.0-py3-none-any.whl").write_bytes(b"")
    with pytest.raises(gpu.WheelhouseError, match="cannot be installed as it is"):
        gpu.install()  # an incomplete wheelhouse fails before pip starts


@pytest.mark.skipif(not gpu.wheel_files(), reason="no wheelhouse/ here (make gpu-wheels builds it)")
def test_the_wheelhouse_here_is_usable_on_the_gpu_machine():
    assert gpu.check_wheels(gpu.wheel_files()) == []
    assert [w for w in gpu.wheel_files() if gpu.wheel_tags(w.name)[0] == "pip"], "pip must travel too"


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout (the GPU machine gets none)")
def test_the_working_tree_leaves_room_for_the_wheelhouse():
    tree = sum(f.stat().st_size for f in gpu.travelling_files()) / 2**20
    assert tree + gpu.WHEELHOUSE_LIMIT_MIB < gpu.TRAVEL_LIMIT_MIB, f"{tree:.1f} MiB of files travel"
    assert not any(".venv" in f.parts or ".gpu-site" in f.parts for f in gpu.travelling_files())


def test_the_cuda_tests_are_the_files_that_mention_cuda(tmp_path):
    files = gpu.cuda_test_files()
    assert {"tests/test_devices.py", "tests/test_gpu_branches.py", "tests/test_checkpoints.py"} <= set(files)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text('x = torch.ones(1, device="cuda")')
    (tmp_path / "tests" / "test_b.py").write_text("import torch  # CPU only; not test_cuda_like_names")
    (tmp_path / "tests" / "helper.py").write_text("torch.cuda.is_available()")  # not a test file
    assert gpu.cuda_test_files(tmp_path) == ["tests/test_a.py"]

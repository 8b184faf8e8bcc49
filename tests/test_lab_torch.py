"""tools/cpu_torch.py, which `make lab` runs before installing the course: on Linux without an NVIDIA
GPU it installs the pinned torch from PyTorch's CPU index, elsewhere it does nothing. pip is a stub
that records its arguments, so nothing is downloaded."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tools import cpu_torch

ROOT = Path(__file__).resolve().parent.parent
PIN = cpu_torch.pinned_torch()
CPU_COMMAND = ["-m", "pip", "install", f"torch=={PIN}"]
CPU_COMMAND += ["--index-url", "https://download.pytorch.org/whl/cpu", "--no-deps"]


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A Linux x86-64 machine without an NVIDIA GPU or torch, whose python is a stub that records its
    arguments and exits with STUB_STATUS. Returns (bin folder, log of the stub's calls)."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.txt"
    bin_dir.mkdir()
    stub = bin_dir / "python"
    stub.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        f"open({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "sys.exit(int(os.environ.get('STUB_STATUS', '0')))\n"
    )
    stub.chmod(0o755)
    monkeypatch.setattr(cpu_torch.sys, "executable", str(stub))
    monkeypatch.setattr(cpu_torch.platform, "system", lambda: "Linux")
    monkeypatch.setattr(cpu_torch.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(cpu_torch, "NVIDIA_DRIVER", tmp_path / "no-driver")
    monkeypatch.setattr(cpu_torch, "installed_torch", lambda: None)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("COURSE_TORCH", raising=False)
    monkeypatch.delenv("STUB_STATUS", raising=False)
    return bin_dir, log


def calls(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def test_the_pin_comes_from_the_constraints_file():
    assert PIN and f"torch=={PIN}\n" in (ROOT / "requirements" / "constraints.txt").read_text()


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_linux_without_nvidia_installs_the_pin_from_the_cpu_index(machine, monkeypatch, capsys, arch):
    _, log = machine
    monkeypatch.setattr(cpu_torch.platform, "machine", lambda: arch)
    assert cpu_torch.main([]) == 0
    assert calls(log) == [CPU_COMMAND]
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no NVIDIA GPU found" in out and " ".join(CPU_COMMAND) in out


def test_an_unreachable_index_stops_with_the_command_to_run_by_hand(machine, monkeypatch, capsys):
    _, log = machine
    monkeypatch.setenv("STUB_STATUS", "1")  # what pip returns when it cannot reach the index
    assert cpu_torch.main([]) == 1
    assert calls(log) == [CPU_COMMAND]  # tried once, and PyPI's CUDA build was not tried instead
    err = capsys.readouterr().err
    assert " ".join(CPU_COMMAND) in err and "make lab COURSE_TORCH=pypi" in err


def test_a_visible_nvidia_driver_leaves_torch_to_pypi(machine, monkeypatch, tmp_path, capsys):
    _, log = machine
    driver = tmp_path / "version"
    driver.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n")
    monkeypatch.setattr(cpu_torch, "NVIDIA_DRIVER", driver)
    assert cpu_torch.main([]) == 0
    assert calls(log) == [] and capsys.readouterr() == ("", "")


def test_nvidia_smi_on_the_path_leaves_torch_to_pypi(machine, capsys):
    bin_dir, log = machine
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    assert cpu_torch.main([]) == 0
    assert calls(log) == [] and capsys.readouterr() == ("", "")


@pytest.mark.parametrize("system", ["Darwin", "Windows"])
def test_macos_and_windows_get_pypis_build(machine, monkeypatch, capsys, system):
    _, log = machine
    monkeypatch.setattr(cpu_torch.platform, "system", lambda: system)
    assert cpu_torch.main([]) == 0
    assert calls(log) == [] and capsys.readouterr() == ("", "")


def test_the_pinned_torch_already_installed_is_kept(machine, monkeypatch, capsys):
    _, log = machine
    monkeypatch.setattr(cpu_torch, "installed_torch", lambda: PIN)
    monkeypatch.setenv("COURSE_TORCH", "cpu")
    assert cpu_torch.main([]) == 0
    assert calls(log) == [] and capsys.readouterr() == ("", "")


def test_another_torch_version_is_replaced_by_the_pin(machine, monkeypatch):
    _, log = machine
    monkeypatch.setattr(cpu_torch, "installed_torch", lambda: "2.11.0")
    assert cpu_torch.main([]) == 0
    assert calls(log) == [CPU_COMMAND]


def test_course_torch_forces_the_choice(machine, monkeypatch, tmp_path, capsys):
    _, log = machine
    monkeypatch.setenv("COURSE_TORCH", "pypi")
    assert cpu_torch.main([]) == 0 and calls(log) == []
    monkeypatch.setenv("COURSE_TORCH", "cpu")
    monkeypatch.setattr(cpu_torch.platform, "system", lambda: "Darwin")
    assert cpu_torch.main([]) == 0 and calls(log) == [CPU_COMMAND]
    assert "COURSE_TORCH=cpu" in capsys.readouterr().out
    monkeypatch.setenv("COURSE_TORCH", "cuda")
    with pytest.raises(SystemExit, match="use cpu, pypi or auto"):
        cpu_torch.main([])


def test_constraints_without_a_torch_pin_leave_torch_alone(machine, tmp_path):
    _, log = machine
    other = tmp_path / "constraints.txt"
    other.write_text("numpy==2.4.6\n")  # the nightly run's pins: every pin but torch's
    assert cpu_torch.main(["-c", str(other)]) == 0 and calls(log) == []


def test_this_environment_with_the_pinned_torch_is_left_alone():
    # What CI's make test meets: .venv already holds the pinned CPU torch, so the script is silent.
    for choice in ("auto", "cpu"):
        env = {**os.environ, "COURSE_TORCH": choice}
        run = subprocess.run([sys.executable, "-m", "tools.cpu_torch", "-c", "requirements/constraints.txt"],
                             cwd=ROOT, env=env, capture_output=True, text=True)
        assert (run.returncode, run.stdout, run.stderr) == (0, "", ""), run


def test_a_failing_pip_in_a_fresh_environment_stops_make(tmp_path):
    # A real venv without torch and without pip: pip's failure stands in for an unreachable index.
    venv.create(tmp_path / "venv", with_pip=False)
    python = tmp_path / "venv" / "bin" / "python"
    env = {**os.environ, "COURSE_TORCH": "cpu"}
    run = subprocess.run([python, "-m", "tools.cpu_torch"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 1
    assert f"install torch=={PIN} --index-url {cpu_torch.CPU_INDEX}" in run.stdout
    assert "Could not install torch" in run.stderr and "make lab COURSE_TORCH=pypi" in run.stderr


def lab_recipe() -> list[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return makefile.split("\n$(VENV)/.lab:", 1)[1].split("\n\n", 1)[0].splitlines()


def test_make_lab_runs_the_script_with_its_pins_before_installing_the_course():
    recipe = [line.strip() for line in lab_recipe()]
    script = next(i for i, line in enumerate(recipe) if line.startswith("$(PY) -m tools.cpu_torch $(PINS)"))
    course = next(i for i, line in enumerate(recipe) if line.endswith(" -e ."))
    assert script < course


def test_the_readme_and_ci_agree_with_the_script():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("\n## Set-up\n", 1)[1].split("\n## ", 1)[0]
    assert "torch==" not in setup  # the version lives in requirements/constraints.txt only
    assert cpu_torch.CPU_INDEX in setup and "make lab COURSE_TORCH=pypi" in setup
    maintaining = (ROOT / "docs" / "maintaining.md").read_text(encoding="utf-8")
    without_make = maintaining.split("\n## Set-up without make\n", 1)[1].split("\n## ")[0]
    assert "python -m tools.cpu_torch" in without_make
    workflow = (ROOT / ".github" / "workflows" / "tests.yml").read_text(encoding="utf-8")
    assert f"{cpu_torch.CPU_INDEX}\n" not in workflow  # CI's make installs torch the learner's way

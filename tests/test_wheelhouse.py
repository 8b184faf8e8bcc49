"""tools/wheelhouse.py, which fills a folder with every wheel `make lab` installs for the laptops of a
workshop room, and `make lab WHEELS=DIR`, which installs from it. Nothing here downloads: pip is a
stub, or pip itself with --no-index over wheels made in the test. `make wheelhouse-check` does the
real download and the offline install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools import wheelhouse

ROOT = Path(__file__).resolve().parent.parent
TARGETS = [(platform, python) for platform in wheelhouse.PLATFORMS for python in wheelhouse.PYTHONS]
PIN = wheelhouse.pinned("torch")


def values(command: list[str], option: str) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command[:-1]) if word == option]


@pytest.mark.parametrize("platform, python", TARGETS)
def test_each_command_asks_for_binary_wheels_of_its_platform_and_python_at_the_pins(platform, python):
    command = wheelhouse.rest_command(platform, python, [Path("/extra")], ["download", "-d", "out"])
    assert "--only-binary=:all:" in command and values(command, "--implementation") == ["cp"]
    assert values(command, "--python-version") == [wheelhouse.PATCH[python]]
    assert values(command, "--python-version")[0].startswith(python + ".")
    assert values(command, "--abi") == ["cp" + python.replace(".", "")]
    assert values(command, "-c") == [str(ROOT / "requirements" / "constraints.txt")]
    assert values(command, "--find-links") == ["/extra"]
    tags = values(command, "--platform")
    expected = {"linux": "manylinux_2_28_x86_64", "macos": "macosx_14_0_arm64", "windows": "win_amd64"}
    assert tags[0] == expected[platform]
    others = {"linux": ("macosx", "win"), "macos": ("linux", "win"), "windows": ("linux", "macosx")}
    assert not any(tag.startswith(others[platform]) for tag in tags)
    # pip with the target's markers; setuptools for the editable install, and pip itself
    assert command[1:6] == ["-m", "tools.wheelhouse", "pip", platform, python]
    assert "pip" in command and any(word.startswith("setuptools") for word in command)
    assert wheelhouse.CPU_INDEX not in command  # PyTorch's index is asked for torch alone
    has_torch = any(word.startswith("torch>=") for word in command)
    assert has_torch == (platform != "linux")  # on Linux PyPI's torch would bring CUDA's libraries


def test_linux_manylinux_tags_stop_at_torchs_glibc_and_keep_the_old_names():
    tags = wheelhouse.PLATFORMS["linux"].tags
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux_2_34_x86_64" not in tags
    old_names = {"manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"}
    assert old_names | {"manylinux_2_17_x86_64", "manylinux_2_5_x86_64"} <= set(tags)


@pytest.mark.parametrize("python", wheelhouse.PYTHONS)
def test_linux_torch_is_the_cpu_build_from_pytorchs_index(python):
    command = wheelhouse.torch_command(python, [], ["download", "-d", "out"])
    assert command[1:3] == ["-m", "pip"]
    assert values(command, "--index-url") == [wheelhouse.CPU_INDEX] and "--no-deps" in command
    assert f"torch=={PIN}+cpu" in command and "--only-binary=:all:" in command
    assert values(command, "--platform")[0] == "manylinux_2_28_x86_64"
    assert values(command, "--python-version") == [wheelhouse.PATCH[python]]


def test_linux_rest_takes_the_cpu_builds_own_dependencies_in_torchs_place():
    command = wheelhouse.rest_command("linux", "3.12", [], ["download"], ["sympy>=1.13.3", "filelock"])
    assert "sympy>=1.13.3" in command and "filelock" in command
    assert "torchao>=0.18" in command and not any(word.startswith(("torch>", "torch=")) for word in command)


class StubPip:
    """Stands in for wheelhouse.run: records each pip command, writes the report a dry run asks for,
    and fails the commands that name FAIL."""

    def __init__(self, fail: str | None = None):
        self.commands, self.fail = [], fail

    def __call__(self, command):
        self.commands.append(command)
        if self.fail and self.fail in command:
            return 1, ["ERROR: No matching distribution found for torch==2.13.0+cpu"]
        if "--report" in command:
            name = "torch" if "--no-deps" in command else "numpy"
            metadata = {"name": name, "version": "1.0", "requires_dist": ["sympy"]}
            report = {"install": [{"metadata": metadata}]}
            Path(values(command, "--report")[0]).write_text(json.dumps(report))
        return 0, []


def test_linux_takes_torch_from_the_cpu_index_then_the_rest_with_torchs_dependencies(monkeypatch, tmp_path):
    pip = StubPip()
    monkeypatch.setattr(wheelhouse, "run", pip)
    missing, resolved = wheelhouse.fetch_target("linux", "3.11", tmp_path, [], dry_run=False)
    assert missing == [] and [p["name"] for p in resolved] == ["torch", "numpy"]
    kinds = [("cpu index" if wheelhouse.CPU_INDEX in c else "pypi") + (" download" if "download" in c else "")
             for c in pip.commands]
    assert kinds == ["cpu index", "cpu index download", "pypi", "pypi download"]
    assert "sympy" in pip.commands[-1] and values(pip.commands[-1], "-d") == [str(tmp_path)]


def test_what_cannot_be_had_is_reported_with_the_command_to_fetch_it_and_the_rest_still_comes(
        monkeypatch, tmp_path, capsys):
    pip = StubPip(fail=wheelhouse.CPU_INDEX)  # PyTorch's index unreachable
    monkeypatch.setattr(wheelhouse, "run", pip)
    status = wheelhouse.build(["linux", "macos"], ["3.12"], tmp_path / "wheels", [])
    assert status == 1
    downloads = [c for c in pip.commands if "download" in c]
    assert [c[4] for c in downloads] == ["linux", "macos"]  # the rest of Linux, and macOS, still downloaded
    err = capsys.readouterr().err
    assert f"MISSING Linux x86-64, Python 3.12: torch {PIN}+cpu and its dependencies" in err
    assert "No matching distribution found for torch" in err
    assert "--platform linux --python 3.12 --dest" in err and "macOS" not in err
    readme = (tmp_path / "wheels" / "README.txt").read_text()
    assert "MISSING" in readme and "Linux x86-64, Python 3.12: torch" in readme


def test_dry_run_downloads_nothing(monkeypatch, tmp_path):
    pip = StubPip()
    monkeypatch.setattr(wheelhouse, "run", pip)
    assert wheelhouse.build(["linux", "windows"], ["3.11"], tmp_path, [], dry_run=True) == 0
    assert pip.commands and not any("download" in c for c in pip.commands)


def make_wheel(folder: Path, name: str, requires: list[str] = ()) -> None:
    """A pure-Python wheel with nothing in it but its metadata."""
    stem = f"{name.replace('-', '_')}-1.0"
    info = f"{stem}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{info}/METADATA", metadata)
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")


@pytest.mark.parametrize("platform, python, wanted", [
    ("windows", "3.12", {"demo", "on-windows", "from-312"}),
    ("macos", "3.11", {"demo", "on-macos"}),
    ("linux", "3.11", {"demo", "on-linux"}),
])
def test_pip_evaluates_markers_as_on_the_target(tmp_path, platform, python, wanted):
    # pip's own --platform would leave sys_platform and python_version markers to this machine's values
    for name in ("on-windows", "on-macos", "on-linux", "from-312"):
        make_wheel(tmp_path, name)
    make_wheel(tmp_path, "demo", [
        'on-windows; sys_platform == "win32"', 'on-macos; platform_system == "Darwin"',
        'on-linux; os_name == "posix" and platform_machine == "x86_64" and sys_platform == "linux"',
        'from-312; python_version >= "3.12"'])
    report = tmp_path / "report.json"
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    env = {k: v for k, v in env.items() if k not in ("PIP_FIND_LINKS", "PIP_CONSTRAINT")}
    command = [sys.executable, "-m", "tools.wheelhouse", "pip", platform, python, "install", "--dry-run",
               "--ignore-installed", "--quiet", "--no-index", "--find-links", str(tmp_path), "--report",
               str(report), "--target", str(tmp_path / "t"), "demo"]
    subprocess.run(command, cwd=ROOT, env=env, check=True)
    assert {p["metadata"]["name"] for p in json.loads(report.read_text())["install"]} == wanted


def test_oldest_patch_follows_requires_python():
    packages = [{"name": "soupsieve", "requires_python": ">=3.11.5"}, {"name": "six"}]
    assert wheelhouse.oldest_patch("3.11", packages) == ("3.11.5", ["soupsieve"])
    assert wheelhouse.oldest_patch("3.12", packages) == ("3.12.0", [])


def test_the_readme_counts_what_fits_each_laptop_and_names_the_install_commands(tmp_path):
    for name in (f"torch-{PIN}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
                 f"torch-{PIN}-cp312-cp312-win_amd64.whl", f"torch-{PIN}-cp311-cp311-macosx_14_0_arm64.whl",
                 "six-1.17.0-py2.py3-none-any.whl", "pyzmq-27.3.0-cp312-abi3-macosx_10_15_universal2.whl"):
        (tmp_path / name).write_bytes(b"x" * 1_000_000)
    text = wheelhouse.write_readme(tmp_path, [], {"3.11": "3.11.5", "3.12": "3.12.0"}).read_text()
    lines = {line.split(":")[0].strip(): line for line in text.splitlines() if ", Python " in line}
    assert "torch-2.13.0+cpu" in lines["Linux x86-64, Python 3.11"] and "2 wheels, 2 MB" in lines[
        "Linux x86-64, Python 3.11"]
    assert "torch MISSING" in lines["Linux x86-64, Python 3.12"]
    mac = lines["macOS arm64, Python 3.12"]
    assert "torch MISSING" in mac and "2 wheels" in mac  # six, and pyzmq's universal2 build
    assert "win_amd64" in lines["Windows x86-64, Python 3.12"] and "torch MISSING" in lines[
        "Windows x86-64, Python 3.11"]
    assert "in all: 5 wheels, 5 MB" in text and "Python 3.11.5 or newer, or any Python 3.12" in text
    assert "make lab WHEELS=DIR" in text and "MISSING when" not in text
    assert "py -3.12 -m venv .venv" in text
    install = r".venv\Scripts\python -m pip install --no-index --find-links DIR"
    install += r" -c requirements\constraints.txt -e ."
    assert install in text
    assert r".venv\Scripts\python -m ipykernel install --sys-prefix --name python3" in text
    assert r".venv\Scripts\python -m tools.course work" in text and r"jupyter lab 00_start_here.ipynb" in text


def dry_make(*variables: str) -> list[str]:
    run = subprocess.run(["make", "-n", "-B", ".venv/.lab", *variables], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return run.stdout.splitlines()


def test_make_lab_with_wheels_installs_from_the_folder_alone():
    lines = dry_make("WHEELS=/media/NO NAME/room-wheels")
    pip = [line for line in lines if " -m pip " in line]
    assert pip and all('--no-index --find-links "/media/NO NAME/room-wheels"' in line for line in pip)
    assert not any("--upgrade pip" in line for line in lines)
    torch = next(i for i, line in enumerate(lines) if line.endswith(" torch"))
    cpu_torch = next(i for i, line in enumerate(lines) if " -m tools.cpu_torch " in line)
    assert torch < cpu_torch < next(i for i, line in enumerate(lines) if line.endswith(" -e ."))


def test_make_lab_without_wheels_is_unchanged():
    lines = dry_make()
    assert not any("--no-index" in line or "--find-links" in line for line in lines)
    pip = [line for line in lines if " -m pip " in line]
    assert len(pip) == 2 and "--upgrade pip" in pip[0] and pip[1].endswith(" -e .")


def test_without_unshare_the_check_still_keeps_pip_off_the_network(monkeypatch):
    monkeypatch.setattr(wheelhouse.shutil, "which", lambda name: None)
    prefix, env, how = wheelhouse.network_off()
    assert prefix == [] and env["PIP_NO_INDEX"] == "1" and env["https_proxy"].startswith("http://127.0.0.1")
    assert "PIP_NO_INDEX" in how

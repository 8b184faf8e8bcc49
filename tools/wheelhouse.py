"""Download every wheel `make lab` installs, for the laptops a workshop room brings, into one folder.

    python3 -m tools.wheelhouse                       # Linux, macOS and Windows, Python 3.11 and 3.12
    python3 -m tools.wheelhouse --platform macos --python 3.12 --dest room-wheels
    python3 -m tools.wheelhouse --find-links DIR      # also take wheels from DIR (torch's CPU build...)
    python3 -m tools.wheelhouse --dry-run             # resolve only: which versions, nothing downloaded
    python3 -m tools.wheelhouse --check               # this machine only, installed with the network off

`make wheelhouse` runs the first line. Participants then install with no network:
``make lab WHEELS=room-wheels`` (docs/offline.md). The folder is flat, so that one ``--find-links``
serves every laptop: pip takes the wheels that fit its own platform and Python.

What goes in, for each platform and Python: the course's dependencies (pyproject.toml) at the pins of
requirements/constraints.txt, with their dependencies; on Linux torch's CPU build from PyTorch's CPU
index (as tools/cpu_torch.py installs it), elsewhere PyPI's torch, a CPU build there; setuptools,
which the editable install builds with; and pip's own wheel. Binary wheels only.

pip's --platform and --python-version choose which wheels fit, but pip still evaluates environment
markers (``colorama; sys_platform == "win32"``, ``appnope; sys_platform == "darwin"``) for the machine
it runs on; so each pip call here runs through ``python -m tools.wheelhouse pip PLATFORM PYTHON ...``,
pip with the markers of the target.

What cannot be downloaded (no wheel, an unreachable index) is skipped; the rest is downloaded, and
the end says what is missing and the command that fetches it on a networked machine. Exit status 1
if anything is missing. The folder gets a README.txt: what is there, how to install from it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
DEST = ROOT / "room-wheels"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # as in tools/cpu_torch.py
PYTHONS = ("3.11", "3.12")  # the tested Pythons (README, docs/maintaining.md)
# The patch releases pip resolves for (its --python-version, and the python_full_version marker): the
# ones tested here. Requires-Python can turn away earlier ones: --dry-run prints the oldest that fits.
PATCH = {"3.11": "3.11.7", "3.12": "3.12.1"}


@dataclass(frozen=True)
class Platform:
    label: str
    tags: tuple[str, ...]  # pip's --platform values, most preferred first
    markers: dict  # environment markers of such a machine


def _manylinux(newest: int = 28) -> tuple[str, ...]:
    """manylinux_2_28 down to manylinux_2_5, with their old names: wheels for glibc 2.28 or older.
    2.28 is the floor of torch's own Linux wheels (manylinux_2_28), so no laptop that can install torch
    is turned away by another wheel."""
    old = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    tags = []
    for minor in range(newest, 4, -1):
        tags.append(f"manylinux_2_{minor}_x86_64")
        if minor in old:
            tags.append(f"{old[minor]}_x86_64")
    return tuple(tags)


PLATFORMS = {
    "linux": Platform("Linux x86-64", _manylinux(),
                      {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
                       "platform_machine": "x86_64"}),
    # torch 2.13.0's macOS wheels are tagged macosx_14_0_arm64; pip also takes wheels for 11.0 to 13.x
    "macos": Platform("macOS arm64", ("macosx_14_0_arm64",),
                      {"os_name": "posix", "sys_platform": "darwin", "platform_system": "Darwin",
                       "platform_machine": "arm64"}),
    "windows": Platform("Windows x86-64", ("win_amd64",),
                        {"os_name": "nt", "sys_platform": "win32", "platform_system": "Windows",
                         "platform_machine": "AMD64"}),
}


def pinned(name: str, constraints: Path = CONSTRAINTS) -> str:
    for line in constraints.read_text(encoding="utf-8").splitlines():
        if line.lower().startswith(f"{name}=="):
            return line.split("==", 1)[1].strip()
    raise SystemExit(f"{constraints} pins no {name}")


def requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower().replace("_", "-")


def requirements() -> list[str]:
    """What make lab installs: the course's dependencies, its build backend, and pip."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [*project["project"]["dependencies"], *project["build-system"]["requires"], "pip"]


def target_options(platform: str, python: str) -> list[str]:
    """pip's options for wheels that install on PLATFORM with CPython PYTHON."""
    abi = "cp" + python.replace(".", "")
    options = ["--only-binary=:all:", "--implementation", "cp", "--python-version", PATCH[python],
               "--abi", abi]
    for tag in PLATFORMS[platform].tags:
        options += ["--platform", tag]
    return options


def pip_for(platform: str, python: str) -> list[str]:
    """pip, evaluating environment markers as on PLATFORM with PYTHON (run_pip)."""
    return [sys.executable, "-m", "tools.wheelhouse", "pip", platform, python]


def links(find_links: list[Path]) -> list[str]:
    return [option for folder in find_links for option in ("--find-links", str(folder))]


def torch_command(python: str, find_links: list[Path], action: list[str]) -> list[str]:
    """Linux: torch's CPU build alone from PyTorch's CPU index, as tools/cpu_torch.py installs it."""
    return [sys.executable, "-m", "pip", *action, "--no-deps", f"torch=={pinned('torch')}+cpu",
            "--index-url", CPU_INDEX, *target_options("linux", python), *links(find_links)]


def rest_command(platform: str, python: str, find_links: list[Path], action: list[str],
                 torch_requires: list[str] | None = None) -> list[str]:
    """Everything else at the pins. On Linux torch itself comes from torch_command, so PyPI's build
    (which brings NVIDIA's CUDA libraries) is never asked for: TORCH_REQUIRES, its CPU build's own
    dependencies, stand in for it (none where that build could not be had)."""
    wanted = requirements()
    if platform == "linux":
        wanted = [r for r in wanted if requirement_name(r) != "torch"] + (torch_requires or [])
    return [*pip_for(platform, python), *action, *target_options(platform, python),
            "-c", str(CONSTRAINTS), *links(find_links), *wanted]


def resolve_action(report: Path, scratch: Path) -> list[str]:
    return ["install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
            "--target", str(scratch)]


def run(command: list[str]) -> tuple[int, list[str]]:
    """Run a pip command quietly; its exit status and its ERROR lines."""
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("ERROR:")]
    unreachable = [line for line in lines if line.startswith("WARNING: Retrying")]
    if done.returncode != 0 and unreachable:  # the index did not answer: say so before pip's verdict
        errors.insert(0, unreachable[-1][:300])
    if done.returncode != 0 and not errors:
        errors = done.stderr.strip().splitlines()[-1:]
    return done.returncode, errors


@dataclass
class Missing:
    platform: str
    python: str
    what: str
    errors: list[str]


def fetch_target(platform: str, python: str, dest: Path, find_links: list[Path],
                 dry_run: bool) -> tuple[list[Missing], list[dict]]:
    """Download (or, dry_run, resolve) one platform and Python; what is missing, and the metadata (name,
    version, requires_python...) of what resolved."""
    missing, resolved = [], []
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        torch_requires = None
        if platform == "linux":
            report = scratch / "torch.json"
            status, errors = run(torch_command(python, find_links, resolve_action(report, scratch / "t")))
            if status == 0:
                torch = json.loads(report.read_text())["install"][0]["metadata"]
                resolved.append(torch)
                torch_requires = torch.get("requires_dist", [])
                if not dry_run:
                    status, errors = run(torch_command(python, find_links, ["download", "-d", str(dest)]))
            if status != 0:
                missing.append(Missing(platform, python, f"torch {pinned('torch')}+cpu and its dependencies",
                                       errors))
        report = scratch / "rest.json"
        action = resolve_action(report, scratch / "r")
        status, errors = run(rest_command(platform, python, find_links, action, torch_requires))
        if status == 0:
            resolved += [package["metadata"] for package in json.loads(report.read_text())["install"]]
            if not dry_run:
                action = ["download", "-d", str(dest)]
                status, errors = run(rest_command(platform, python, find_links, action, torch_requires))
        if status != 0:
            missing.append(Missing(platform, python, "the other packages", errors))
    return missing, resolved


def oldest_patch(python: str, packages: list[dict]) -> tuple[str, list[str]]:
    """The oldest X.Y.Z of PYTHON that every package's Requires-Python admits, and the packages that
    set it (none where X.Y.0 will do)."""
    from pip._vendor.packaging.specifiers import SpecifierSet

    last = []
    for patch in range(0, 100):
        version = f"{python}.{patch}"
        refusing = [p["name"] for p in packages
                    if version not in SpecifierSet(p.get("requires_python") or "")]
        if not refusing:
            return version, last
        last = refusing
    return f"no {python}", []


def summarize(resolved: dict, missing: list[Missing]) -> list[str]:
    """For --dry-run: per platform and Python, the count, the packages the pins leave free, and the
    oldest patch release of the Python that every package accepts."""
    pins = {requirement_name(line) for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines()
            if "==" in line and not line.startswith("#")}
    lines = []
    for (platform, python), packages in resolved.items():
        if any((m.platform, m.python) == (platform, python) for m in missing):
            lines.append(f"  {PLATFORMS[platform].label}, Python {python}: incomplete (below)")
            continue
        free = sorted(f"{p['name']} {p['version']}" for p in packages
                      if requirement_name(p["name"]) not in pins)
        oldest, why = oldest_patch(python, packages)
        lines.append(f"  {PLATFORMS[platform].label}, Python {python}: {len(packages)} packages, all as"
                     f" binary wheels; Python {oldest} or newer" + (f" ({', '.join(why)})" if why else "")
                     + f"; not pinned: {', '.join(free) or 'none'}")
    return lines


# --- what is in the folder ---------------------------------------------------------------------


def supported_tags(platform: str, python: str) -> set:
    """The wheel tags pip accepts on PLATFORM with PYTHON (pip's own copy of `packaging`)."""
    from pip._vendor.packaging import tags

    version = tuple(int(part) for part in python.split("."))
    abi = "cp" + python.replace(".", "")
    platforms = []
    for tag in PLATFORMS[platform].tags:
        if tag.startswith("macosx_"):
            major, minor, arch = tag.removeprefix("macosx_").split("_")
            platforms += tags.mac_platforms((int(major), int(minor)), arch)
        else:
            platforms.append(tag)
    return {*tags.cpython_tags(version, [abi], platforms), *tags.compatible_tags(version, abi, platforms)}


def wheels_for(dest: Path, platform: str, python: str) -> list[Path]:
    from pip._vendor.packaging.utils import parse_wheel_filename

    fits = supported_tags(platform, python)
    return sorted(wheel for wheel in dest.glob("*.whl") if parse_wheel_filename(wheel.name)[3] & fits)


def megabytes(paths: list[Path]) -> str:
    return f"{sum(path.stat().st_size for path in paths) / 1e6:,.0f} MB"


def inventory(dest: Path, platforms: list[str], pythons: list[str]) -> list[str]:
    """One line per platform and Python, one per platform, and the total."""
    lines = []
    for platform in platforms:
        union = set()
        for python in pythons:
            wheels = wheels_for(dest, platform, python)
            union.update(wheels)
            torch = next((w.name for w in wheels if w.name.startswith("torch-")), "torch MISSING")
            lines.append(f"  {PLATFORMS[platform].label}, Python {python}: {len(wheels)} wheels, "
                         f"{megabytes(wheels)} ({torch})")
        lines.append(f"  {PLATFORMS[platform].label}, both Pythons: {megabytes(sorted(union))}")
    every = sorted(dest.glob("*.whl"))
    lines.append(f"  in all: {len(every)} wheels, {megabytes(every)}")
    return lines


README = """\
Wheels for the course "Same code, different numbers": every package `make lab` installs, at the
versions in requirements/constraints.txt, for these platforms and Pythons (MB = 10^6 bytes):

{inventory}

On Linux torch is its CPU build, and needs glibc 2.28 or newer; on macOS torch needs macOS 14 or
newer on Apple silicon. Python itself is not here; install it first:
{pythons}.

Install with no network, from the course's folder (its root, where pyproject.toml is), with DIR
the path to this folder (quote it if it contains spaces).

Linux and macOS:
  make lab WHEELS=DIR

Windows (PowerShell or cmd, no make needed; py -3.11 for Python 3.11):
  py -3.12 -m venv .venv
  .venv\\Scripts\\python -m pip install --no-index --find-links DIR -c requirements\\constraints.txt -e .
  .venv\\Scripts\\python -m ipykernel install --sys-prefix --name python3
  .venv\\Scripts\\python -m tools.course work
  cd work
  ..\\.venv\\Scripts\\jupyter lab 00_start_here.ipynb

(Without make on Linux or macOS: the same commands with .venv/bin/ for .venv\\Scripts\\.)
pip's own wheel is here too, should a venv's pip be too old for these wheels:
  .venv\\Scripts\\python -m pip install --no-index --find-links DIR --upgrade pip
"""


def write_readme(dest: Path, missing: list[Missing], oldest: dict[str, str]) -> Path:
    """README.txt for the folder. OLDEST: for each Python, the oldest patch release the wheels accept."""
    floors = [oldest.get(python, f"{python}.0") for python in PYTHONS]
    pythons = ", or ".join(f"Python {f} or newer" if not f.endswith(".0") else f"any Python {f[:-2]}"
                           for f in floors)
    lines = inventory(dest, list(PLATFORMS), list(PYTHONS))
    text = README.format(inventory="\n".join(lines), pythons=pythons)
    if missing:
        text += "\nMISSING when this folder was made (see the make wheelhouse output):\n"
        text += "".join(f"  {PLATFORMS[m.platform].label}, Python {m.python}: {m.what}\n" for m in missing)
    path = dest / "README.txt"
    path.write_text(text, encoding="utf-8")
    return path


def fetch_again(missing: Missing, dest: Path) -> str:
    """The command that fetches what is missing, on a machine that reaches PyPI and PyTorch's index."""
    where = [] if dest == DEST else ["--dest", os.path.relpath(dest, ROOT)]
    return shlex.join(["python3", "-m", "tools.wheelhouse", "--platform", missing.platform,
                       "--python", missing.python, *where])


def build(platforms: list[str], pythons: list[str], dest: Path, find_links: list[Path],
          dry_run: bool = False) -> int:
    dest.mkdir(parents=True, exist_ok=True)
    start, missing, resolved = time.monotonic(), [], {}
    for platform in platforms:
        for python in pythons:
            print(f"{PLATFORMS[platform].label}, Python {python}: "
                  + ("resolving" if dry_run else "downloading"), flush=True)
            lost, resolved[platform, python] = fetch_target(platform, python, dest, find_links, dry_run)
            missing += lost
    if dry_run:
        print("\n".join(summarize(resolved, missing)))
    else:
        print("\n".join(inventory(dest, platforms, pythons)))
        oldest = {}
        for python in pythons:
            packages = [p for (_, version), found in resolved.items() if version == python for p in found]
            oldest[python] = oldest_patch(python, packages)[0]
        print(f"wrote {write_readme(dest, missing, oldest)}; {time.monotonic() - start:.0f} s")
    sys.stdout.flush()
    for m in missing:
        print(f"MISSING {PLATFORMS[m.platform].label}, Python {m.python}: {m.what}", file=sys.stderr)
        for error in m.errors:
            print(f"  pip: {error}", file=sys.stderr)
        print(f"  on a machine that reaches PyPI and {CPU_INDEX}, run: {fetch_again(m, dest)}",
              file=sys.stderr)
    return 1 if missing else 0


# --- pip with the target's markers ---------------------------------------------------------------


def run_pip(platform: str, python: str, args: list[str]) -> int:
    """pip's main, with environment markers evaluated as on PLATFORM with PYTHON."""
    from pip._internal.cli.main import main as pip_main
    from pip._vendor.packaging import markers

    target = {**markers.default_environment(), **PLATFORMS[platform].markers, "python_version": python,
              "python_full_version": PATCH[python], "implementation_version": PATCH[python],
              "implementation_name": "cpython", "platform_python_implementation": "CPython",
              "platform_release": "", "platform_version": ""}
    markers.default_environment = lambda: dict(target)  # looked up by Marker.evaluate at each call
    return pip_main(args)


# --- the offline check ---------------------------------------------------------------------------


def network_off() -> tuple[list[str], dict, str]:
    """A command prefix and environment that keep the network away; and how, in words."""
    lo_up = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    if shutil.which("unshare") and shutil.which("ip") and subprocess.run(
            [*lo_up, "true"], stderr=subprocess.DEVNULL).returncode == 0:
        return lo_up, {}, "unshare -rn: a network namespace with only the loopback interface"
    unroutable = "http://127.0.0.1:9"
    env = {"PIP_NO_INDEX": "1", **{k: unroutable for k in ("http_proxy", "https_proxy", "HTTP_PROXY",
                                                             "HTTPS_PROXY", "ALL_PROXY")}}
    return [], env, f"PIP_NO_INDEX=1 and proxies set to {unroutable} (unshare -rn does not work here)"


def copy_checkout(target: Path) -> int:
    """The tracked and untracked-but-not-ignored files of this checkout, into TARGET."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split("\0")
    count = 0
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
            count += 1
    return count


def check(find_links: list[Path], keep: bool) -> int:
    """Build a wheelhouse for this machine, install a fresh copy of the course from it with the network
    off, run the set-up check and execute lesson 00 there."""
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        raise SystemExit("--check runs on Linux x86-64 only")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    scratch = Path(tempfile.mkdtemp(prefix="wheelhouse-check-"))
    wheels, repo = scratch / "wheels", scratch / "course"
    times, begin = {}, time.monotonic()
    try:
        status = build(["linux"], [python], wheels, find_links)
        times["download"] = time.monotonic() - begin
        if status != 0:
            return status
        print(f"copied {copy_checkout(repo)} files of this checkout into {repo}")
        prefix, extra, how = network_off()
        print(f"network off: {how}", flush=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PIP_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env |= {"PIP_CONFIG_FILE": os.devnull, **extra}  # no pip configuration: the folder alone
        venv_python = str(repo / ".venv" / "bin" / "python")
        steps = {
            "install": ["make", "--no-print-directory", ".venv/.lab", f"WHEELS={wheels}",
                        f"PYTHON={sys.executable}"],
            "set-up check": [venv_python, "-c", "import helpers; helpers.setup_check()"],
            "work/": [venv_python, "-m", "tools.course", "work"],
            "lesson 00": [str(repo / ".venv" / "bin" / "jupyter"), "nbconvert", "--to", "notebook",
                          "--execute", "--output-dir", str(scratch), "work/00_start_here.ipynb"],
        }
        for name, command in steps.items():
            start = time.monotonic()
            done = subprocess.run([*prefix, *command], cwd=repo, env=env, capture_output=True, text=True)
            times[name] = time.monotonic() - start
            out = (done.stdout + done.stderr).strip()
            if name != "install" or done.returncode != 0:
                print(f"--- {name}, {times[name]:.0f} s:\n{out}")
            if done.returncode != 0:
                print(f"{name} failed (exit status {done.returncode})", file=sys.stderr)
                return 1
        executed = (scratch / "00_start_here.ipynb").read_text(encoding="utf-8")
        verdict = re.search(r"set-up check: \d+ problems?", executed)
        print(f"lesson 00, executed offline, printed: {verdict.group(0) if verdict else 'no set-up check'}")
        print("seconds: " + ", ".join(f"{name} {t:.0f}" for name, t in times.items())
              + f"; in all {time.monotonic() - begin:.0f}")
        return 0 if verdict and verdict.group(0) == "set-up check: 0 problems" else 1
    finally:
        if keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pip"]:  # pip_for's commands
        return run_pip(argv[1], argv[2], argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", nargs="+", choices=list(PLATFORMS), default=list(PLATFORMS))
    parser.add_argument("--python", nargs="+", choices=PYTHONS, default=list(PYTHONS))
    parser.add_argument("--find-links", action="append", type=Path, default=[], metavar="DIR",
                        help="also take wheels from DIR (repeatable)")
    parser.add_argument("--dest", type=Path, default=DEST, help="the folder to fill (default room-wheels/)")
    parser.add_argument("--dry-run", action="store_true", help="resolve each platform and Python only")
    parser.add_argument("--check", action="store_true",
                        help="this machine's platform and Python only, then an offline install and lesson 00")
    parser.add_argument("--keep", action="store_true", help="with --check: keep its temporary folder")
    args = parser.parse_args(argv)
    find_links = [folder.resolve() for folder in args.find_links]
    if args.check:
        return check(find_links, args.keep)
    return build(args.platform, args.python, args.dest.resolve(), find_links, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())

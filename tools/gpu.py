"""The Python side of the GPU pass, for a machine whose Python already has a CUDA build of torch.

    python tools/gpu.py gather [--python-version 3.12] [--with PKG ...]      (make gpu-wheels)
        On a machine with network access: download into a fresh wheelhouse/ (git-ignored) the
        wheels the GPU pass needs besides the GPU machine's own torch, NumPy and matplotlib, for
        CPython 3.12 on manylinux x86-64, at the tested pins: one version of each package. Then
        check them (`check`) and print what travels to the GPU machine (`size`).
    python tools/gpu.py install [--online]
        Install wheelhouse/ into .gpu-site/ (git-ignored) with no package index, byte-compiled, with
        the pip carried in wheelhouse/ (the machine's Python may have none). Without a usable
        wheelhouse it stops at once with a message: it never reaches for PyPI, which an offline
        GPU machine cannot reach (pip would spend minutes retrying). --online allows PyPI where
        there is no wheelhouse, for a networked CI runner.
    python tools/gpu.py test [--jobs N] [--allow-cpu] [--online] [PYTEST ARGS ...]  (make test-gpu)
        `install`, then pytest with .gpu-site/ on PYTHONPATH (notebook kernels inherit it), the
        plugins named explicitly (xdist, nbval, hypothesis, pytest-timeout), and the given arguments
        (default: every test). Refuses to run without CUDA unless --allow-cpu (the rehearsal).
    python tools/gpu.py check
        Check wheelhouse/: one version of each package, at the tested pins, wheels that CPython
        3.12 on manylinux x86-64 can install, everything the pass imports, under 40 MiB.
    python tools/gpu.py size
        What travels to the GPU machine: the working tree's tracked and untracked, not ignored,
        files, plus wheelhouse/ (carried), against the 64 MiB limit.
    python tools/gpu.py cuda-tests
        The unit-test files the GPU pass runs: those that mention ``cuda``, whose tests can take
        a CUDA path or are skipped without CUDA.

Nothing is installed into the machine's own Python: .gpu-site/ goes first on PYTHONPATH for the
run, so its pins (the CPU set's, less torch) are the ones the tests see. The GPU machine's torch,
NumPy and matplotlib are the ones being tested.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = ROOT / "wheelhouse"
SITE = ROOT / ".gpu-site"
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
# What the tests import besides torch, numpy and matplotlib (which the GPU image has; add them
# with --with when another image does not): pip's name, and the module the suite imports.
PACKAGES = {
    "pytest": "pytest",
    "pytest-xdist": "xdist",
    "nbval": "nbval",
    "nbclient": "nbclient",
    "nbformat": "nbformat",
    "ipykernel": "ipykernel",
    "ipywidgets": "ipywidgets",
    "hypothesis": "hypothesis",
    "pyyaml": "yaml",
    "packaging": "packaging",
    "check-jsonschema": "check_jsonschema",
    "torchao": "torchao",
}
# What the GPU pass needs besides the suite, pinned here because the CPU set does not use them:
# pytest-timeout bounds every test and cell, and pip installs the rest where the machine has none.
RUN_PINS = {"pytest-timeout": "2.4.0", "pip": "26.3"}
RUN_MODULES = ["pytest_timeout"]
REQUIREMENTS = [*PACKAGES, *RUN_PINS]
# ruamel.yaml comes with check-jsonschema; the last three come with the GPU image.
MODULES = [*PACKAGES.values(), "ruamel.yaml", "numpy", "matplotlib", "torch"]
PLATFORMS = [
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_26_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux1_x86_64",
    "manylinux_2_5_x86_64",
]
PLUGINS = ["xdist.plugin", "nbval.plugin", "_hypothesis_pytestplugin", "pytest_timeout"]
WHEELHOUSE_LIMIT_MIB = 40
TRAVEL_LIMIT_MIB = 64
# pip without an index, a config file or a version check: nothing it does may need the network.
PIP_ENV = {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


class WheelhouseError(RuntimeError):
    """wheelhouse/ is missing, incomplete or unusable; the message says what to do."""


@contextlib.contextmanager
def pins_without_torch() -> Iterator[Path]:
    """The tested pins less torch, plus the pass's own, as a constraints file for the ``with`` block."""
    lines = [x for x in CONSTRAINTS.read_text().splitlines() if not x.startswith("torch==")]
    lines += [f"{name}=={version}" for name, version in RUN_PINS.items()]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "constraints.txt"
        path.write_text("\n".join(lines) + "\n")
        yield path


def normalize(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503): lower case, runs of -_. as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_tags(filename: str) -> tuple[str, str, list[str], list[str], list[str]]:
    """(name, version, python tags, abi tags, platform tags) of a wheel file name (PEP 427)."""
    parts = filename[: -len(".whl")].split("-")
    if not filename.endswith(".whl") or len(parts) not in (5, 6):
        raise ValueError(f"{filename} is not a wheel file name")
    name, version, python, abi, platform = parts[0], parts[1], parts[-3], parts[-2], parts[-1]
    return normalize(name), version, python.split("."), abi.split("."), platform.split(".")


def installable_on_cp312_manylinux(filename: str) -> bool:
    """Whether CPython 3.12 on manylinux x86-64 can install this wheel."""
    _, _, pythons, abis, platforms = wheel_tags(filename)
    platform_ok = any(p == "any" or (p.startswith("manylinux") and p.endswith("_x86_64")) for p in platforms)

    def python_ok(tag: str) -> bool:
        if tag in ("py3", "cp312"):
            return True
        match = re.fullmatch(r"cp3(\d+)", tag)  # a stable-ABI wheel built for an older CPython 3
        return bool(match) and int(match.group(1)) <= 12 and "abi3" in abis

    return platform_ok and any(python_ok(t) for t in pythons)


def pinned_versions() -> dict[str, str]:
    """The tested pins (requirements/constraints.txt) and the pass's own, by normalized name."""
    pins = dict(line.split("==", 1) for line in CONSTRAINTS.read_text().splitlines() if "==" in line)
    pins.update(RUN_PINS)
    return {normalize(name): version.strip() for name, version in pins.items()}


def check_wheels(
    wheels: list[Path], limit_mib: float = WHEELHOUSE_LIMIT_MIB, pins: dict[str, str] | None = None
) -> list[str]:
    """Everything wrong with a set of wheels for the GPU machine, as sentences (empty: usable)."""
    pins = pinned_versions() if pins is None else pins
    problems = []
    versions: dict[str, set[str]] = {}
    for wheel in wheels:
        try:
            name, version, *_ = wheel_tags(wheel.name)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        versions.setdefault(name, set()).add(version)
        if name in pins and version != pins[name]:
            problems.append(f"{wheel.name}: the tested pin is {name}=={pins[name]}")
        if not installable_on_cp312_manylinux(wheel.name):
            problems.append(f"{wheel.name} does not install on CPython 3.12, manylinux x86-64")
    for name, found in sorted(versions.items()):
        if len(found) > 1:
            problems.append(f"{name}: {len(found)} versions ({', '.join(sorted(found))}); keep one")
    for name in (*PACKAGES, *RUN_PINS):
        if normalize(name) not in versions:
            problems.append(f"{name} is missing")
    size = sum(w.stat().st_size for w in wheels) / 2**20
    if size > limit_mib:
        problems.append(f"{size:.1f} MiB of wheels, over the {limit_mib} MiB limit")
    return problems


def wheel_files(folder: Path | None = None) -> list[Path]:
    folder = WHEELHOUSE if folder is None else folder
    return sorted(folder.glob("*.whl")) if folder.is_dir() else []


def gather(python_version: str, extra: list[str]) -> int:
    """Download the wheels into a fresh folder, check them, and only then replace wheelhouse/."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:"]
    cmd += ["--python-version", python_version, "--implementation", "cp"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    with tempfile.TemporaryDirectory() as scratch, pins_without_torch() as pins:
        fresh = Path(scratch) / "wheelhouse"
        subprocess.run([*cmd, "-d", str(fresh), "-c", str(pins), *REQUIREMENTS, *extra], check=True)
        problems = check_wheels(wheel_files(fresh)) if python_version == "3.12" else []
        if problems:
            print("the downloaded wheels are not usable:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        shutil.rmtree(WHEELHOUSE, ignore_errors=True)
        shutil.move(fresh, WHEELHOUSE)  # only now: a failed download leaves the old wheelhouse/ alone
    wheels = wheel_files()
    size = sum(w.stat().st_size for w in wheels) / 2**20
    print(f"{len(wheels)} wheels, one version of each package, {size:.1f} MiB in wheelhouse/ "
          f"for CPython {python_version} on manylinux x86-64")
    return size_report()


def travelling_files() -> list[Path]:
    """The files of the working tree that the GPU machine receives: tracked, and untracked but not
    ignored (``git ls-files --cached --others --exclude-standard``), that exist."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode()
    files = [ROOT / name for name in out.split("\0") if name]
    return [f for f in files if f.is_file() and not f.is_symlink()]


def size_report() -> int:
    tree = sum(f.stat().st_size for f in travelling_files()) / 2**20
    wheels = sum(w.stat().st_size for w in wheel_files()) / 2**20
    total = tree + wheels
    print(f"travels to the GPU machine: working tree {tree:.1f} MiB + wheelhouse/ {wheels:.1f} MiB "
          f"= {total:.1f} MiB (limit {TRAVEL_LIMIT_MIB} MiB); .git does not travel")
    return 0 if total < TRAVEL_LIMIT_MIB else 1


def site_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(SITE), str(ROOT / "src")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    # Only the plugins the suite uses: a GPU image's own pytest plugins may not suit this pytest.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def missing_modules(modules: list[str] = MODULES) -> list[str]:
    probe = (
        "import importlib.util as u\n"
        "def absent(m):\n"
        "    try:\n"
        "        return u.find_spec(m) is None\n"
        "    except ModuleNotFoundError:  # a dotted name whose parent is missing\n"
        "        return True\n"
        f"print(' '.join(m for m in {modules!r} if absent(m)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=site_env(), capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def pip_command(wheels: list[Path]) -> list[str]:
    """pip run from its own wheel in wheelhouse/ (a wheel is importable as a zip), so the install
    works on a Python without pip; the machine's pip only where wheelhouse/ carries none."""
    carried = [w for w in wheels if wheel_tags(w.name)[0] == "pip"]
    return [sys.executable, str(carried[0] / "pip")] if carried else [sys.executable, "-m", "pip"]


def install(online: bool = False) -> None:
    """Fill .gpu-site/ from wheelhouse/, with no index; raise WheelhouseError when that cannot work."""
    wheels = wheel_files()
    if not wheels:
        if not online:
            raise WheelhouseError(
                "no wheels in wheelhouse/: this command installs offline only. Run `make gpu-wheels` "
                "on a machine with network access and carry wheelhouse/ here (or pass --online on a "
                "machine that can reach PyPI)."
            )
        if missing_modules([*MODULES, *RUN_MODULES]):
            with pins_without_torch() as pins:
                online_args = ["install", "--quiet", "--target", str(SITE), "-c", str(pins)]
                subprocess.run([sys.executable, "-m", "pip", *online_args, *REQUIREMENTS], check=True)
        return
    problems = check_wheels(wheels)
    if problems:
        raise WheelhouseError(
            "wheelhouse/ cannot be installed as it is:\n  " + "\n  ".join(problems)
            + "\nRebuild it with `make gpu-wheels` on a machine with network access."
        )
    digest = hashlib.sha256("\n".join(w.name for w in wheels).encode()).hexdigest()
    stamp = SITE / ".installed"
    if stamp.exists() and stamp.read_text() == digest:
        return
    shutil.rmtree(SITE, ignore_errors=True)
    targets = [str(w) for w in wheels if wheel_tags(w.name)[0] != "pip"]
    offline = ["install", "--quiet", "--no-index", "--no-deps", "--target", str(SITE), *targets]
    subprocess.run([*pip_command(wheels), *offline], check=True, env={**os.environ, **PIP_ENV})
    stamp.write_text(digest)


def test(jobs: int, pytest_args: list[str], allow_cpu: bool, online: bool) -> int:
    import torch

    if not torch.cuda.is_available() and not allow_cpu:
        print(
            f"make test-gpu needs a CUDA device, and torch {torch.__version__} (CUDA {torch.version.cuda}) "
            "sees none here. On a machine without a GPU, run `make test`.",
            file=sys.stderr,
        )
        return 2
    try:
        install(online)
    except WheelhouseError as exc:
        print(exc, file=sys.stderr)
        return 2
    missing = missing_modules([*MODULES, *RUN_MODULES])
    if missing:
        print(
            f"still missing: {', '.join(missing)}. Gather them with `python tools/gpu.py gather --with NAME` "
            "on a networked machine and copy wheelhouse/ here.",
            file=sys.stderr,
        )
        return 2
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (--allow-cpu)"
    print(f"running pytest with torch {torch.__version__} on {device}", flush=True)
    plugins = [arg for p in PLUGINS for arg in ("-p", p)]
    cmd = [sys.executable, "-m", "pytest", *plugins, "-n", str(jobs), "--dist", "loadscope", *pytest_args]
    return subprocess.call(cmd, cwd=ROOT, env=site_env())


def cuda_test_files(root: Path = ROOT) -> list[str]:
    """The unit-test files that mention ``cuda``: the ones whose tests can take a CUDA path."""
    tests = sorted((root / "tests").glob("test_*.py"))
    return [t.relative_to(root).as_posix() for t in tests if re.search(r"\bcuda\b", t.read_text())]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gather", help="download the wheels for an offline GPU machine into wheelhouse/")
    g.add_argument("--python-version", default="3.12")
    g.add_argument(
        "--with", dest="extra", action="append", default=[], help="another requirement, e.g. matplotlib"
    )
    i = sub.add_parser("install", help="install wheelhouse/ into .gpu-site/, offline")
    t = sub.add_parser("test", help="run the tests on this machine's CUDA build of torch")
    t.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 2))
    t.add_argument("--allow-cpu", action="store_true", help="run even without CUDA (the rehearsal)")
    for p in (i, t):
        p.add_argument("--online", action="store_true", help="allow PyPI where there is no wheelhouse/")
    sub.add_parser("check", help="check wheelhouse/")
    sub.add_parser("size", help="the size of what travels to the GPU machine")
    sub.add_parser("cuda-tests", help="the unit-test files that can take a CUDA path")
    args, rest = parser.parse_known_args(argv[1:])
    if rest and args.command != "test":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "gather":
        return gather(args.python_version, args.extra)
    if args.command == "install":
        try:
            install(args.online)
        except WheelhouseError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"installed {len(wheel_files())} wheels into {SITE.relative_to(ROOT)}/")
        return 0
    if args.command == "check":
        problems = check_wheels(wheel_files())
        print("\n".join(problems) if problems else f"wheelhouse/ is usable: {len(wheel_files())} wheels")
        return 1 if problems else 0
    if args.command == "size":
        return size_report()
    if args.command == "cuda-tests":
        print(" ".join(cuda_test_files()))
        return 0
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return test(args.jobs, rest, args.allow_cpu, args.online)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The GPU test run, on a machine whose Python already has a CUDA build of torch.

    python tools/gpu.py gather [--python-version 3.12] [--with PKG ...]
        On a machine with network access: download the wheels the test suite needs, except
        torch, into wheelhouse/ for the GPU machine's Python (Linux x86-64). Copy the repository,
        wheelhouse/ included, to the GPU machine.
    python tools/gpu.py test [--jobs N] [PYTEST ARGS ...]      (make test-gpu)
        On the GPU machine: install what is missing into .gpu-site/ (offline from wheelhouse/
        when it exists, from PyPI otherwise), then run every test with the GPU cells live.

Nothing is installed into the machine's own Python: .gpu-site/ is put on PYTHONPATH for the run
(and for the notebook kernels nbval starts, which inherit it). The pins are the CPU set's, less
torch: the GPU machine's torch is the one being tested.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = ROOT / "wheelhouse"
SITE = ROOT / ".gpu-site"
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
# What the tests import besides torch, numpy and matplotlib (which a GPU image normally has;
# add them with --with when it does not): pip's name, and the module the suite imports.
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
REQUIREMENTS = list(PACKAGES)
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
PIP_INSTALL = [sys.executable, "-m", "pip", "install", "--quiet"]
PLUGINS = ["xdist.plugin", "nbval.plugin", "_hypothesis_pytestplugin"]


@contextlib.contextmanager
def pins_without_torch() -> Iterator[Path]:
    """The tested pins less torch, as a constraints file that exists inside the ``with`` block."""
    lines = [x for x in CONSTRAINTS.read_text().splitlines() if not x.startswith("torch==")]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "constraints.txt"
        path.write_text("\n".join(lines) + "\n")
        yield path


def gather(python_version: str, extra: list[str]) -> int:
    WHEELHOUSE.mkdir(exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "-d",
        str(WHEELHOUSE),
    ]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    with pins_without_torch() as pins:
        subprocess.run([*cmd, "-c", str(pins), *REQUIREMENTS, *extra], check=True)
    wheels = sorted(WHEELHOUSE.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels) / 2**20
    where = WHEELHOUSE.relative_to(ROOT)
    print(f"{len(wheels)} wheels, {size:.1f} MiB in {where}/ for CPython {python_version}")
    return 0


def site_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(SITE), str(ROOT / "src")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    # Only the plugins the suite uses: a GPU image's own pytest plugins may not suit this pytest.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def missing_modules() -> list[str]:
    probe = (
        "import importlib.util as u\n"
        "def absent(m):\n"
        "    try:\n"
        "        return u.find_spec(m) is None\n"
        "    except ModuleNotFoundError:  # a dotted name whose parent is missing\n"
        "        return True\n"
        f"print(' '.join(m for m in {MODULES!r} if absent(m)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=site_env(), capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def install() -> None:
    """Fill .gpu-site/ from wheelhouse/ (offline), or from PyPI when there is no wheelhouse."""
    wheels = sorted(WHEELHOUSE.glob("*.whl")) if WHEELHOUSE.is_dir() else []
    stamp = SITE / ".installed"
    if wheels:
        digest = hashlib.sha256("\n".join(w.name for w in wheels).encode()).hexdigest()
        if stamp.exists() and stamp.read_text() == digest:
            return
        offline = ["--no-index", "--no-deps", "--upgrade", "--target", str(SITE)]
        subprocess.run([*PIP_INSTALL, *offline, *map(str, wheels)], check=True)
        stamp.write_text(digest)
    elif missing_modules():
        with pins_without_torch() as pins:
            online = ["--target", str(SITE), "-c", str(pins)]
            subprocess.run([*PIP_INSTALL, *online, *REQUIREMENTS], check=True)


def test(jobs: int, pytest_args: list[str], allow_cpu: bool) -> int:
    import torch

    if not torch.cuda.is_available() and not allow_cpu:
        print(
            f"make test-gpu needs a CUDA device, and torch {torch.__version__} (CUDA {torch.version.cuda}) "
            "sees none here. On a machine without a GPU, run `make test`.",
            file=sys.stderr,
        )
        return 2
    install()
    missing = missing_modules()
    if missing:
        print(
            f"still missing: {', '.join(missing)}. Gather them with `python tools/gpu.py gather --with NAME` "
            "on a networked machine and copy wheelhouse/ here.",
            file=sys.stderr,
        )
        return 2
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (--allow-cpu)"
    print(f"running the suite with torch {torch.__version__} on {device}", flush=True)
    plugins = [arg for p in PLUGINS for arg in ("-p", p)]
    cmd = [sys.executable, "-m", "pytest", *plugins, "-n", str(jobs), "--dist", "loadscope", *pytest_args]
    return subprocess.call(cmd, cwd=ROOT, env=site_env())


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
    t = sub.add_parser("test", help="run every test on this machine's CUDA build of torch")
    t.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 2))
    t.add_argument("--allow-cpu", action="store_true", help="run even without CUDA (to test this script)")
    args, rest = parser.parse_known_args(argv[1:])
    if args.command == "gather":
        return gather(args.python_version, args.extra)
    return test(args.jobs, rest, args.allow_cpu)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

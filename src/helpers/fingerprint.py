"""Record or compare what decides the numbers on a machine, from Python or from a shell.

:func:`fingerprint` records the settings that decide which numbers this process computes, as a
flat dict that ``json.dump`` writes; :func:`diff_fingerprints` lists the settings in which two such
records differ. The command line does both::

    python -m helpers.fingerprint                  # print the fingerprint as a table
    python -m helpers.fingerprint --json FILE      # write it as JSON (FILE may be - for stdout)
    python -m helpers.fingerprint --diff A.json B.json

``--diff`` prints the settings in which two recorded fingerprints differ and exits with 0 when
they agree, 1 when they differ, and 2 (with a message) when a file is missing, malformed or not a
fingerprint (a JSON object without the ``"torch"`` and ``"python"`` keys).

The command starts a fresh interpreter, so it records what the machine, the environment and the
build decide, and none of the settings a script makes in code (``use_deterministic_algorithms``,
``set_num_threads``, ``set_float32_matmul_precision``). Record those inside the script, after it
has made them::

    import json
    from helpers.fingerprint import fingerprint; json.dump(fingerprint(), open("a.json", "w"))

Introduced in lesson 12.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sys
from collections.abc import Mapping
from pathlib import Path

import torch

from helpers.devices import ABSENT, RESULT_ENV_VARS, precision_settings, read_setting
from helpers.show.tables import Table

__all__ = ["FINGERPRINT_ENV_VARS", "diff_fingerprints", "fingerprint", "main"]

Scalar = str | int | float | bool | None

#: The environment variables a fingerprint records (each as ``env.NAME``), one group a line:
#: threads, instruction sets, oneDNN/MKL math modes, cuBLAS and TF32: ``helpers.devices.RESULT_ENV_VARS``;
#: ``PYTHONHASHSEED`` orders sets of strings, hence the order of anything built from one;
#: ``MKL_ENABLE_INSTRUCTIONS`` caps the instruction set MKL dispatches to, and so its kernels;
#: ``TORCH_BLAS_PREFER_CUBLASLT`` makes torch prefer cuBLASLt for CUDA matmuls, another kernel;
#: ``MKL_DYNAMIC``, ``OMP_DYNAMIC``: TRUE lets the runtime lower the thread count that MKL's CNR needs fixed;
#: ``NCCL_*``: the all-reduce algorithm, protocol, NVLink SHARP and channel count fix the summation order;
#: ``TORCHINDUCTOR_*``: switches of compiled code's numerics (torch/_inductor/config.py reads each);
#: ``LD_PRELOAD`` loads another allocator (so another alignment) or another OpenMP runtime;
#: ``GLIBC_TUNABLES`` can hide CPU features from glibc, which then runs another build of exp, log, sin.
FINGERPRINT_ENV_VARS = (
    *RESULT_ENV_VARS,
    "PYTHONHASHSEED",
    "MKL_ENABLE_INSTRUCTIONS",
    "TORCH_BLAS_PREFER_CUBLASLT",
    "MKL_DYNAMIC",
    "OMP_DYNAMIC",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "TORCHINDUCTOR_FREEZING",  # weights as constants, folded and prepacked for MKL or oneDNN
    "TORCHINDUCTOR_DETERMINISTIC",  # skips the benchmarking that affects numerics
    "TORCHINDUCTOR_BATCH_INVARIANT",  # per-sample results that do not depend on the batch size
    "TORCHINDUCTOR_MAX_AUTOTUNE",  # chooses kernels by timing them
    "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM",  # the same for matrix products only
    "TORCHINDUCTOR_EMULATE_PRECISION_CASTS",  # keeps the bf16/fp16 roundings that fusion would drop
    "TORCHINDUCTOR_CPP_ENABLE_UNSAFE_MATH_OPT_FLAG",  # -funsafe-math-optimizations for CPU kernels
    "TORCHINDUCTOR_CPP_ENABLE_FLOATING_POINT_CONTRACT_FLAG",  # -ffp-contract: FMA contraction
    "LD_PRELOAD",
    "GLIBC_TUNABLES",
)

# Keys for the rows of helpers.devices.precision_settings (the one place that knows which
# precision API this torch has); a row not listed here gets a key made from its name.
_PRECISION_KEYS = {
    "float32 matmul precision": "precision.float32_matmul",
    "fp32_precision (global)": "precision.fp32_precision",
    "fp32_precision (oneDNN matmul)": "precision.fp32_precision.mkldnn.matmul",
    "fp32_precision (oneDNN conv)": "precision.fp32_precision.mkldnn.conv",
    "fp32_precision (oneDNN rnn)": "precision.fp32_precision.mkldnn.rnn",
    "fp32_precision (CUDA matmul)": "precision.fp32_precision.cuda.matmul",
    "fp32_precision (cuDNN conv)": "precision.fp32_precision.cudnn.conv",
    "fp32_precision (cuDNN rnn)": "precision.fp32_precision.cudnn.rnn",
    "TF32 for CUDA matmul (allow_tf32)": "precision.allow_tf32.cuda.matmul",
    "TF32 for cuDNN conv (allow_tf32)": "precision.allow_tf32.cudnn",
    "cuBLAS fp16 reduced-precision reduction": "precision.cublas.fp16_reduced_precision_reduction",
    "cuBLAS bf16 reduced-precision reduction": "precision.cublas.bf16_reduced_precision_reduction",
    "cuBLAS fp16 accumulation": "precision.cublas.fp16_accumulation",
}


def _scalar(value: object) -> Scalar:
    """``value`` as a JSON scalar: a str, int, float, bool or None stays; anything else becomes its str."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


def _cpu_name() -> str | None:
    """The CPU's model name: ``/proc/cpuinfo``'s ``model name`` (Linux), else ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def _library_versions() -> tuple[str | None, str | None, str | None]:
    """The MKL and oneDNN versions and the BLAS library, read from ``torch.__config__.show()``."""
    try:
        config = torch.__config__.show()
    except Exception:  # a build without the config text
        return None, None, None
    mkl = re.search(r"Math Kernel Library Version (\S+?)(?:-Product)?\s", config)
    onednn = re.search(r"(?:MKL-DNN|oneDNN)\s+v(\S+)", config)
    blas = re.search(r"BLAS_INFO=([^,\s]+)", config)
    return tuple(m.group(1) if m else None for m in (mkl, onednn, blas))  # type: ignore[return-value]


def _cuda_devices() -> str | None:
    """Each GPU's name and compute capability; a note instead of an error when CUDA cannot be
    queried (a broken driver, a device in exclusive use by another process)."""
    try:
        if not torch.cuda.is_available():
            return None
        names = []
        for i in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(i)
            names.append(f"{torch.cuda.get_device_name(i)} ({major}.{minor})")
    except (RuntimeError, AssertionError) as error:
        return f"(unreadable: {type(error).__name__})"
    return "; ".join(names)


def _numpy_version() -> str | None:
    """The NumPy version (of the loaded module, else the installed one), without importing it."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        return getattr(numpy, "__version__", None)
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    try:
        return version("numpy")
    except PackageNotFoundError:
        return None


def _nvidia_driver() -> str | None:
    """The NVIDIA kernel driver's version from ``/proc/driver/nvidia/version`` (Linux), else None.

    torch has no API for it, and running ``nvidia-smi`` would cost a process; a machine without
    that file (Windows, no GPU) records None.
    """
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as f:
            match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", f.read())
    except OSError:
        return None
    return match.group(1) if match else None


def _backend_settings() -> dict[str, object]:
    """The backend switches that choose kernels: which may run, and which library is preferred."""
    b = torch.backends
    cuda = getattr(b, "cuda", None)
    reads = {
        "backends.cudnn.enabled": lambda: b.cudnn.enabled,
        "backends.mkldnn.enabled": lambda: b.mkldnn.enabled,
        "backends.mkldnn.deterministic": lambda: b.mkldnn.deterministic,
        "backends.cuda.flash_sdp": lambda: cuda.flash_sdp_enabled(),
        "backends.cuda.mem_efficient_sdp": lambda: cuda.mem_efficient_sdp_enabled(),
        "backends.cuda.math_sdp": lambda: cuda.math_sdp_enabled(),
        "backends.cuda.cudnn_sdp": lambda: cuda.cudnn_sdp_enabled(),
        "backends.cuda.fp16_bf16_reduction_math_sdp": lambda: cuda.fp16_bf16_reduction_math_sdp_allowed(),
        "backends.cuda.preferred_blas_library": lambda: _enum_name(cuda.preferred_blas_library()),
        "backends.cuda.preferred_linalg_library": lambda: _enum_name(cuda.preferred_linalg_library()),
        "backends.mha.fastpath": lambda: b.mha.get_fastpath_enabled(),
        "backends.opt_einsum.enabled": lambda: b.opt_einsum.enabled,
        "backends.opt_einsum.strategy": lambda: b.opt_einsum.strategy,
    }
    values = {key: read_setting(read) for key, read in reads.items()}
    return {key: value for key, value in values.items() if value is not ABSENT}


def _enum_name(value: object) -> object:
    """``Cublas`` for ``torch._C._BlasBackend.Cublas``; other values unchanged."""
    return getattr(value, "name", value)


def fingerprint() -> dict[str, Scalar]:
    """A flat record of the settings that decide which numbers this process computes.

    Keys are short stable strings; values are JSON scalars (str, int, float, bool or None), so
    ``json.dump`` writes it and ``json.load`` gives it back unchanged. The groups:

    * versions and hardware: ``python``, ``platform``, ``torch``, ``numpy``, ``cuda`` (the CUDA
      torch was built with), ``cudnn``, ``mkl`` and ``mkl_version``, ``onednn`` and
      ``onednn_version``, ``blas``, ``cpu`` (the CPU's model name), ``cpu_capability`` (the SIMD
      level of PyTorch's CPU kernels), ``cuda_devices`` (each GPU's name and compute capability),
      ``nvidia_driver`` (Linux only, from ``/proc/driver/nvidia/version``; else None), ``mps``;
    * ``threads.intra_op``, ``threads.inter_op``, ``default_dtype``;
    * ``precision.*``: ``precision.float32_matmul`` and the reduced-precision switches this torch
      has (the ``fp32_precision`` settings, or on an older torch the ``allow_tf32`` flags, and
      cuBLAS's reduced-precision reductions);
    * ``backends.*``: the kernel switches: ``cudnn.enabled``, ``mkldnn.enabled`` and
      ``mkldnn.deterministic``, the scaled-dot-product-attention kernels (``cuda.flash_sdp``,
      ``cuda.mem_efficient_sdp``, ``cuda.math_sdp``, ``cuda.cudnn_sdp``,
      ``cuda.fp16_bf16_reduction_math_sdp``), ``cuda.preferred_blas_library`` and
      ``cuda.preferred_linalg_library``, ``mha.fastpath`` (the fused path of
      ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``), ``opt_einsum.enabled`` and
      ``opt_einsum.strategy``;
    * ``deterministic.*``: ``algorithms``, ``warn_only``, ``cudnn``, ``cudnn_benchmark``,
      ``fill_uninitialized_memory``;
    * ``env.NAME`` for each of ``FINGERPRINT_ENV_VARS``: its value, or None when unset.

    A setting this torch does not have is left out. It does not record what no setting decides:
    the numbers a program's own code or data feed in, or a library that torch loads outside these
    (a plugin's kernels, say). Introduced in lesson 12.
    """
    mkl_version, onednn_version, blas = _library_versions()
    capability = read_setting(lambda: torch.backends.cpu.get_cpu_capability())
    mps = getattr(torch.backends, "mps", None)
    record: dict[str, object] = {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "torch": torch.__version__,
        "numpy": _numpy_version(),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "mkl": torch.backends.mkl.is_available(),
        "mkl_version": mkl_version,
        "onednn": torch.backends.mkldnn.is_available(),
        "onednn_version": onednn_version,
        "blas": blas,
        "cpu": _cpu_name(),
        "cpu_capability": None if capability is ABSENT else capability,
        "cuda_devices": _cuda_devices(),
        "nvidia_driver": _nvidia_driver() if torch.cuda.is_available() else None,
        "mps": bool(mps is not None and mps.is_available()),
        "threads.intra_op": torch.get_num_threads(),
        "threads.inter_op": torch.get_num_interop_threads(),
        "default_dtype": str(torch.get_default_dtype()).replace("torch.", ""),
    }
    for name, value in precision_settings():
        key = _PRECISION_KEYS.get(name) or "precision." + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
        record[key] = value
    record.update(_backend_settings())
    determinism = {
        "deterministic.algorithms": read_setting(torch.are_deterministic_algorithms_enabled),
        "deterministic.warn_only": read_setting(torch.is_deterministic_algorithms_warn_only_enabled),
        "deterministic.cudnn": read_setting(lambda: torch.backends.cudnn.deterministic),
        "deterministic.cudnn_benchmark": read_setting(lambda: torch.backends.cudnn.benchmark),
        "deterministic.fill_uninitialized_memory": read_setting(
            lambda: torch.utils.deterministic.fill_uninitialized_memory
        ),
    }
    record.update({k: v for k, v in determinism.items() if v is not ABSENT})
    for name in FINGERPRINT_ENV_VARS:
        record[f"env.{name}"] = os.environ.get(name)
    return {key: _scalar(value) for key, value in record.items()}


def _check_fingerprint(record: object, name: str) -> None:
    """A mapping of str keys to JSON scalars (str, int, float, bool or None; no NaN or infinity)."""
    if not isinstance(record, Mapping):
        raise TypeError(f"{name} must be a dict of settings, got a {type(record).__name__}")
    for key, value in record.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} has a key that is not a str: {key!r}")
        if not (value is None or isinstance(value, (str, bool, int, float))):
            kind = type(value).__name__
            raise TypeError(f"{name}[{key!r}] must be a str, int, float, bool or None, got a {kind}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name}[{key!r}] must be a finite number, got {value}")


def _differ(x: object, y: object) -> bool:
    """True when two JSON scalars differ; ``True`` and ``1`` differ, ``1`` and ``1.0`` do not."""
    if isinstance(x, bool) != isinstance(y, bool) or isinstance(x, str) != isinstance(y, str):
        return True
    return x != y


def diff_fingerprints(
    a: Mapping[str, object], b: Mapping[str, object], *, title: str = "Settings that differ"
) -> Table:
    """The settings in which two fingerprints differ: a Table with headers ``["setting", "a", "b"]``.

    One row per key whose values differ, sorted by key; a key that only one side has shows
    ``"(absent)"`` on the other, except an ``env.*`` variable that is unset (None) on the side that
    has it: a record made when that variable was not yet looked at agrees with it. Zero rows
    (``len(table.rows) == 0``) when nothing differs. ``a`` and ``b`` are what :func:`fingerprint`
    returns or what ``json.load`` reads back from a file it was written to; any flat dict of
    settings is accepted, so a few chosen keys can be compared too (the command line, which reads
    files, refuses one that is not a fingerprint). Introduced in lesson 12.

    Raises:
        TypeError: ``a`` or ``b`` is not a mapping, has a key that is not a str, or a value that is
            not a JSON scalar (str, int, float, bool or None), named as in ``a['torch']``.
        ValueError: a value is a NaN or an infinity.
    """
    _check_fingerprint(a, "a")
    _check_fingerprint(b, "b")
    absent = "(absent)"
    rows = []
    for key in sorted(set(a) | set(b)):
        if key.startswith("env.") and (key not in a or key not in b):
            # a variable an older record did not look at: unset (None) there is no difference
            x, y = a.get(key), b.get(key)
            if x is not None or y is not None:
                rows.append((key, a.get(key, absent), b.get(key, absent)))
        elif key not in a or key not in b or _differ(a[key], b[key]):
            rows.append((key, a.get(key, absent), b.get(key, absent)))
    return Table(["setting", "a", "b"], rows, title=title)


def _load(path: str) -> dict:
    """A fingerprint read from a JSON file; ``ValueError`` with a message saying what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read it ({type(error).__name__}: {error})") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: holds a JSON {type(record).__name__}, not an object of settings")
    missing = [key for key in ("torch", "python") if key not in record]
    if missing:
        keys = " or ".join(repr(key) for key in missing)
        hint = "write one with python -m helpers.fingerprint --json FILE"
        raise ValueError(f"{path}: not a fingerprint (no {keys} key); {hint}")
    return record


_EPILOG = """\
This command starts a fresh interpreter, so it records what the machine, the environment
and the build decide, and none of the settings a script makes in code
(use_deterministic_algorithms, set_num_threads, set_float32_matmul_precision).
Record those inside the script, after it has made them:

    import json
    from helpers.fingerprint import fingerprint; json.dump(fingerprint(), open("a.json", "w"))

--diff exits with 0 when the fingerprints agree, 1 when they differ, and 2 when a file
is missing, malformed or not a fingerprint."""


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status (0 agree or done, 1 differ, 2 bad file)."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.fingerprint",
        description="Print, record or compare the settings that decide which numbers PyTorch computes.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", metavar="FILE", help="write the fingerprint as JSON to FILE (- for stdout)")
    group.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two recorded fingerprints")
    args = parser.parse_args(argv)

    if args.diff:
        a_path, b_path = args.diff
        try:
            a, b = _load(a_path), _load(b_path)
            table = diff_fingerprints(a, b, title=f"Settings that differ (a: {a_path}, b: {b_path})")
        except (TypeError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        if not table.rows:
            print(f"The fingerprints agree ({len(a)} settings).")
            return 0
        print(table)
        return 1

    record = fingerprint()
    if args.json is not None:
        text = json.dumps(record, indent=2, sort_keys=True) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            try:
                Path(args.json).write_text(text, encoding="utf-8")
            except OSError as error:
                print(f"error: cannot write {args.json}: {error}", file=sys.stderr)
                return 2
        return 0
    print(Table(["setting", "value"], list(record.items()), title="Fingerprint"))
    return 0


def _run() -> int:
    """``main`` for ``python -m``: a reader that closes the pipe early (``| head -1``) ends it
    quietly. The pattern is the one of Python's ``signal`` documentation ("Note on SIGPIPE"), whose
    example exits with 1; here 1 means "they differ", so the status is 141, what a shell reports
    for a process stopped by SIGPIPE (128 + 13)."""
    try:
        status = main()
        sys.stdout.flush()  # the last output is written here, so a closed pipe shows here too
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        return 141
    return status


if __name__ == "__main__":
    sys.exit(_run())

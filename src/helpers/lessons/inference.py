"""CPU inference: what the CPU supports, which library runs a call, and torchao loaded quietly.

Introduced in lesson ``09_fast_cpu_inference``.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable

import torch

__all__ = ["cpu_features", "library_calls", "load_int8_quantization"]


def cpu_features() -> dict[str, object]:
    """What this CPU and this PyTorch build offer for fast inference.

    ``bfloat16 in oneDNN`` is True where PyTorch sends bfloat16 matrix products to oneDNN: on x86
    where oneDNN reports bfloat16 support (PyTorch's own error message names "avx_ne_convert or
    avx512bw, avx512vl and avx512dq", so AVX-512 CPUs without bfloat16 instructions pass too and
    convert), on Arm where the CPU has BF16 instructions. ``AVX512-BF16`` says whether the CPU
    multiplies bfloat16 natively. ``AVX512-VNNI`` is what PyTorch checks before it hands an int8
    matrix product to oneDNN, and, with ``AMX``, what torchao 0.18 checks to choose between a
    uint8 x int8 and an int8 x int8 product; these three read the private ``torch.cpu._is_*``
    functions and are False where they are missing or on CPUs other than x86. Introduced in
    lesson 09.
    """
    mkldnn = torch.backends.mkldnn.is_available()
    bf16 = bool(mkldnn and torch.ops.mkldnn._is_mkldnn_bf16_supported())

    def cpu_has(name: str) -> bool:
        check = getattr(torch.cpu, name, None)
        return bool(check is not None and check())

    return {
        "vector instructions PyTorch uses": torch.backends.cpu.get_cpu_capability(),
        "oneDNN (mkldnn) available": mkldnn,
        "bfloat16 in oneDNN": bf16,
        "AVX512-BF16": cpu_has("_is_avx512_bf16_supported"),
        "AVX512-VNNI": cpu_has("_is_vnni_supported"),
        "AMX": cpu_has("_is_amx_tile_supported"),
        "MKL available": torch.backends.mkl.is_available(),
        "OpenMP available": torch.backends.openmp.is_available(),
    }


# A routine name and a call-like argument list (at least five fields), so that banners such as
# "MKL_VERBOSE Intel(R) MKL 2020.0 ..." are not read as calls.
_MKL_CALL = re.compile(r"^MKL_VERBOSE ([A-Z][A-Z0-9_]*)\(((?:[^,)]*,){4}[^)]*)\)")
_ONEDNN_OPERAND = re.compile(r"^(src|wei|dst)[:_]([a-z0-9]+)")


def _describe(line: str) -> tuple[str, str] | None:
    """One verbose line as (library, call), or None for banners and other lines."""
    mkl = _MKL_CALL.match(line)
    if mkl:
        return "MKL", f"{mkl.group(1)}({','.join(mkl.group(2).split(',')[:5])})"
    fields = line.split(",")
    if fields[0] == "onednn_verbose" and "exec" in fields:
        at = fields.index("exec")
        primitive, implementation, operands = fields[at + 2], fields[at + 3], fields[at + 5]
        types = [m.groups() for m in map(_ONEDNN_OPERAND.match, operands.split()) if m]
        name = " ".join(part for part in (primitive, implementation) if part)
        return "oneDNN", f"{name} ({', '.join(f'{k} {t}' for k, t in types)})"
    return None


def library_calls(fn: Callable[[], object]) -> list[tuple[str, str]]:
    """Run ``fn()`` and return the MKL and oneDNN calls it made, as ``(library, call)`` pairs.

    Uses the on-demand verbose modes ``torch.backends.mkl.verbose`` and
    ``torch.backends.mkldnn.verbose`` (the in-process form of ``MKL_VERBOSE=1`` and
    ``ONEDNN_VERBOSE=1``). Both libraries print to the C-level standard output, so file
    descriptor 1 is pointed at an anonymous temporary file while ``fn`` runs and restored after.
    An MKL call is shown as its routine and first five arguments (``SGEMM(T,N,m,n,k)``); a
    oneDNN call as primitive, implementation and operand dtypes. A library the build lacks is
    skipped. Written for Linux and macOS; on Windows it returns only what the C runtime there
    lets it capture. Introduced in lesson 09.
    """
    libc = ctypes.CDLL(None) if sys.platform != "win32" else None
    sys.stdout.flush()
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(1)
        os.dup2(sink.fileno(), 1)
        try:
            with contextlib.ExitStack() as verbose:
                if torch.backends.mkl.is_available():
                    verbose.enter_context(torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON))
                if torch.backends.mkldnn.is_available():
                    verbose.enter_context(torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON))
                fn()
        finally:
            if libc is not None:
                libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        sink.seek(0)
        lines = sink.read().decode(errors="replace").splitlines()
    return [call for call in map(_describe, lines) if call is not None]


def load_int8_quantization():
    """Import torchao's ``quantize_`` and ``Int8DynamicActivationInt8WeightConfig`` quietly.

    torchao logs warnings at import about optional GPU kernels it cannot load on a CPU-only
    machine; they say nothing about CPU inference, so logging below ERROR is paused while it
    imports. Python 3.12 and newer also report an invalid escape sequence in one of torchao's
    docstrings as a ``SyntaxWarning`` whenever it compiles that file (no cached bytecode), so
    that category is ignored during the import too. Returns
    ``(quantize_, Int8DynamicActivationInt8WeightConfig)``. Introduced in lesson 09.
    """
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
    finally:
        logging.disable(previous)
    return quantize_, Int8DynamicActivationInt8WeightConfig


def threads_in_new_processes(settings: dict[str, dict[str, str]]) -> dict[str, tuple[int, int]]:
    """For each named environment, start a new Python and return (threads at start, after set_num_threads(3)).

    The processes run concurrently. If the wait is interrupted (Kernel > Interrupt, Ctrl-C), every child
    is terminated, one line is printed, and a bare KeyboardInterrupt is raised without the children's output.
    """
    import subprocess

    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    script = ("import torch; print(torch.get_num_threads()); torch.set_num_threads(3); "
              "print(torch.get_num_threads())")
    started = {}
    try:
        for name, env in settings.items():
            started[name] = subprocess.Popen([sys.executable, "-c", script], env={**clean, **env},
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        seen = {}
        for name, process in started.items():
            at_start, after_call = map(int, process.communicate()[0].split())
            seen[name] = (at_start, after_call)
        return seen
    except KeyboardInterrupt:
        for process in started.values():
            process.kill()
            process.wait()
        print(f"Interrupted: stopped the {len(started)} child processes.")
        raise KeyboardInterrupt from None


def interleaved_ratios(fn_a: Callable[[], object], fn_b: Callable[[], object], repeats: int = 5,
                       min_run_time: float = 0.03) -> list[float]:
    """Time fn_a and fn_b alternately, `repeats` times each; return time(a) / time(b), one ratio per round.

    Alternating the two spreads a slow or busy stretch of the machine over both instead of one of
    them: each round times a, then b, right after each other, so a load that lasts longer than a
    round slows both. A burst shorter than a round still moves one ratio; the spread of the ratios
    over the rounds shows how far to trust them.
    """
    from helpers.lessons.bench import time_call

    ratios = []
    for _ in range(repeats):
        a = time_call(fn_a, min_run_time=min_run_time).median
        b = time_call(fn_b, min_run_time=min_run_time).median
        ratios.append(a / b)
    return ratios

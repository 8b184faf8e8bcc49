"""CPU inference: what the CPU offers, which library runs a call, torchao loaded quietly, int8 checks.

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

__all__ = ["FreshPython", "cpu_features", "cpu_model", "int_mm_calls", "interleaved_ratios", "library_calls",
           "load_int8_quantization", "thread_speedups", "threads_in_new_processes"]


def cpu_model() -> str:
    """The CPU's model name as the operating system reports it (``/proc/cpuinfo`` on Linux), or the
    architecture where no name is found. Introduced in lesson 09."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.lower().startswith("model name"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_features() -> dict[str, object]:
    """What this CPU and this PyTorch build offer for fast inference.

    ``bfloat16 in oneDNN`` is True where PyTorch sends bfloat16 matrix products to oneDNN: on x86
    where oneDNN reports bfloat16 support (PyTorch's own error message names "avx_ne_convert or
    avx512bw, avx512vl and avx512dq", so AVX-512 CPUs without bfloat16 instructions pass too and
    convert), on Arm where the CPU has BF16 instructions. ``AVX512-BF16`` says whether the CPU
    multiplies bfloat16 natively. ``AVX512-VNNI`` is what PyTorch checks before it hands an int8
    matrix product to oneDNN, and, with ``AMX``, what torchao 0.18 checks to choose between a
    uint8 x int8 and an int8 x int8 product; these three read the private ``torch.cpu._is_*``
    functions and are False where they are missing or on CPUs other than x86. ``CPU model`` is
    :func:`cpu_model`. Introduced in lesson 09.
    """
    mkldnn = torch.backends.mkldnn.is_available()
    bf16 = bool(mkldnn and torch.ops.mkldnn._is_mkldnn_bf16_supported())

    def cpu_has(name: str) -> bool:
        check = getattr(torch.cpu, name, None)
        return bool(check is not None and check())

    return {
        "CPU model": cpu_model(),
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
                       min_run_time: float = 0.03, calls: int | None = None) -> list[float]:
    """Time fn_a and fn_b alternately, `repeats` times each; return time(a) / time(b), one ratio per round.

    Alternating the two spreads a slow or busy stretch of the machine over both instead of one of
    them: each round times a, then b, right after each other, so a load that lasts longer than a
    round slows both. A burst shorter than a round still moves one ratio; the spread of the ratios
    over the rounds shows how far to trust them. Each timing is a ``time_call`` median, or, with
    ``calls``, the ``time.perf_counter`` time of that many calls: for calls of a tenth of a second
    and more, where one call is already a measurement and ``Timer`` would add calls to calibrate
    (call both once before, so that no round includes a first call's set-up).
    """
    import time

    from helpers.lessons.bench import time_call

    def timed(fn):
        if calls is None:
            return time_call(fn, min_run_time=min_run_time).median
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return time.perf_counter() - start

    ratios = []
    for _ in range(repeats):
        a = timed(fn_a)
        b = timed(fn_b)
        ratios.append(a / b)
    return ratios


def thread_speedups(fn: Callable[[], object], counts: list[int], rounds: int = 3,
                    min_run_time: float = 0.05, calls: int | None = None) -> dict[int, list[float]]:
    """Time ``fn()`` with each intra-op thread count, round by round; return each count's speed-up over 1.

    Each round times every count once, one after the other (``time_call(fn, threads=k)``, which sets
    the count only while it measures), and divides that round's 1-thread time by each count's time, so
    a busy stretch of the machine moves a whole round rather than one count. With ``calls``, each
    timing is instead the ``time.perf_counter`` time of that many calls, after one untimed call, with
    ``torch.set_num_threads(k)`` set for them and the previous count restored after: for calls of
    tens of milliseconds, where ``time_call`` would measure for much longer. One list of ``rounds``
    speed-ups per count; 1 is timed even if ``counts`` leaves it out. Introduced in lesson 09.
    """
    import time

    from helpers.lessons.bench import time_call

    def timed_with(k: int) -> float:
        if calls is None:
            return time_call(fn, min_run_time=min_run_time, threads=k).median
        previous = torch.get_num_threads()
        torch.set_num_threads(k)
        try:
            fn()                                   # untimed: the first call after a change of count
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            return (time.perf_counter() - start) / calls
        finally:
            torch.set_num_threads(previous)

    timed = sorted(set(counts) | {1})
    speedups: dict[int, list[float]] = {k: [] for k in counts}
    for _ in range(rounds):
        seconds = {k: timed_with(k) for k in timed}
        for k in counts:
            speedups[k].append(seconds[1] / seconds[k])
    return speedups


def int_mm_calls(module: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor):
    """Run ``module(inputs)`` under inference mode; return ``(calls, output)``, with ``(a, b, result)``
    for every ``torch._int_mm`` call it made.

    ``torch._int_mm`` is replaced for the duration by a stand-in that calls the real one and keeps its
    operands and a copy of its result (torchao changes the result in place); torchao looks the function
    up at every call, so the stand-in sees them all. Introduced in lesson 09.
    """
    calls, int_mm = [], torch._int_mm

    def recording_int_mm(a, b):
        result = int_mm(a, b)
        calls.append((a, b, result.clone()))
        return result

    torch._int_mm = recording_int_mm
    try:
        with torch.inference_mode():
            output = module(inputs)
    finally:
        torch._int_mm = int_mm
    return calls, output


_WORKER = """
import io, struct, sys, torch
read, write = sys.stdin.buffer.read, sys.stdout.write
while True:
    head = read(8)
    if len(head) < 8:
        break
    question, pairs = torch.load(io.BytesIO(read(struct.unpack("<Q", head)[0])))
    if question == "threads":
        at_start = torch.get_num_threads()
        torch.set_num_threads(3)
        answer = f"{at_start} {torch.get_num_threads()}"
        torch.set_num_threads(at_start)
    else:  # float64 holds every entry of these int8 products exactly
        answer = str(sum(int((torch._int_mm(a, b).double() != a.double() @ b.double()).sum())
                         for a, b in pairs))
    write(answer + "\\n")
    sys.stdout.flush()
"""


class FreshPython:
    """A fresh Python, started with extra environment variables, that answers questions about itself.

    Some settings (``ONEDNN_MAX_CPU_ISA``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``) are read only
    when a library starts, so their effect shows only in a new process. This one starts when the
    object is made (so its start-up can overlap the caller's own imports) and stays up for every
    question, so a lesson pays for one start of PyTorch:

    - ``thread_counts()``: ``torch.get_num_threads()`` there at start-up, and after
      ``torch.set_num_threads(3)`` (the count is then set back);
    - ``wrong_entries(pairs)``: for ``(a, b)`` pairs of int8 matrices, how many entries of
      ``torch._int_mm(a, b)``, computed there, differ from exact arithmetic (float64, exact for
      these sizes).

    ``close()``, or collecting the object, ends the process. If a wait is interrupted (Kernel >
    Interrupt, Ctrl-C), the process is ended, one line is printed, and a bare KeyboardInterrupt
    is raised; the next question starts a new one. Introduced in lesson 09.
    """

    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        self._process = None
        self._start()

    def _start(self):
        import subprocess

        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen([sys.executable, "-c", _WORKER],
                                             env={**os.environ, **self.env}, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self._process

    def _ask(self, question: str, pairs: list) -> str:
        import io
        import struct

        buffer = io.BytesIO()
        torch.save((question, [(a, b) for a, b in pairs]), buffer)
        process = self._start()
        try:
            process.stdin.write(struct.pack("<Q", buffer.getbuffer().nbytes) + buffer.getvalue())
            process.stdin.flush()
            line = process.stdout.readline()
        except KeyboardInterrupt:
            self.close()
            print("Interrupted: stopped the child process.")
            raise KeyboardInterrupt from None
        if not line:
            self.close()
            raise RuntimeError(f"the child process with {self.env} ended without an answer")
        return line.decode()

    def thread_counts(self) -> tuple[int, int]:
        """(threads at start-up, threads after ``torch.set_num_threads(3)``) in the fresh process."""
        at_start, after_call = map(int, self._ask("threads", []).split())
        return at_start, after_call

    def wrong_entries(self, pairs) -> int:
        """How many entries of ``torch._int_mm(a, b)``, over all pairs, are wrong in the fresh process."""
        return int(self._ask("int_mm", pairs))

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    stream.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

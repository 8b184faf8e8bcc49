"""The checkers of lesson 08's exercises (CPU vs GPU performance).

``CHECKERS`` maps each id to its question and checker, ``KINDS`` to what it asks for.
"""

from __future__ import annotations

import contextlib
import io

from helpers._validate import describe

#: (cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms), the right choice, and what a wrong choice there reveals.
#: Hypothetical numbers, chosen so that each common mistake picks wrong somewhere; all are exact in
#: binary floating point, so that sums and ties are exact.
_DEVICE_CASES = (
    ((5.0, 1.0, 0.5, 0.5, 10.0), "cuda", "faster"),
    ((4.0, 1.0, 1.5, 2.0, 10.0), "cpu", "copies"),
    ((4.0, 1.0, 5.0, 1.0, 10.0), "cpu", "copies"),
    ((9.0, 2.0, 3.0, 6.0, 10.0), "cpu", "copy back"),
    ((12.0, 2.0, 3.0, 6.0, 10.0), None, "copy back"),
    ((7.0, 4.0, 3.0, 3.0, 10.0), "cpu", "overlap"),
    ((12.0, 2.0, 2.0, 2.0, 10.0), "cuda", "faster"),
    ((6.0, 2.0, 2.0, 2.0, 10.0), "cpu", "tie"),
    ((10.0, 9.0, 1.0, 1.0, 10.0), "cpu", "edge"),
    ((15.0, 3.0, 3.0, 4.0, 10.0), "cuda", "edge"),
    ((3.0, 1.0, 1.0, 1.0, 2.0), None, "none"),
)

_DEVICE_HINTS = {
    "faster": "it missed a case where the GPU, copies included, answers sooner and within the budget.",
    "copies": (
        "it chose the GPU where its computation is faster but the copies to the device and back make the "
        "request slower than on the CPU: a request pays for every step of its own."
    ),
    "copy back": (
        "it chose the GPU where the copy of the result back to the host breaks the budget: a request is "
        "answered only once its result is back on the host."
    ),
    "overlap": (
        "a request copied in, computed and copied back as a whole cannot overlap its copies with its own "
        "computation: the GPU needs the input before it computes, and the result exists only afterwards. "
        "Overlap (section 8.5) lets one batch's copy run during another batch's computation: it raises the "
        "throughput of a stream of batches, and the service here has one request at a time."
    ),
    "tie": (
        "where both devices take the same time, the prompt asks for the CPU: no copies, "
        "no device to keep busy."
    ),
    "edge": "a latency equal to the budget meets it: compare with <=, not <.",
    "none": (
        "where neither device meets the budget, the answer is None: "
        "a faster device that misses it does not help."
    ),
}


def _choose(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms, mistake=None):
    """The right choice, or the one a common mistake makes (the keys of _DEVICE_MISTAKES)."""
    gpu_total = {
        "compute only": gpu_ms,
        "no copy back": h2d_ms + gpu_ms,
        "overlap": max(h2d_ms, gpu_ms, d2h_ms),
    }.get(mistake, h2d_ms + gpu_ms + d2h_ms)
    fits = (lambda t: t < budget_ms) if mistake == "strict" else (lambda t: t <= budget_ms)
    if mistake == "no budget":
        fits = lambda t: True  # noqa: E731
    options = [(t, device) for t, device in ((cpu_ms, "cpu"), (gpu_total, "cuda")) if fits(t)]
    if not options:
        return None
    if mistake == "tie to the GPU":
        return min(options, key=lambda o: (o[0], o[1] == "cpu"))[1]
    return min(options)[1]  # on a tie "cpu" < "cuda"


#: Common mistakes that _choose can make, and the hint for a function that makes exactly one of them.
_DEVICE_MISTAKES = {
    "compute only": (
        "it compares the computations alone: a request on the GPU also waits for its input to reach the "
        "device and for its result to come back (section 8.5)."
    ),
    "no copy back": _DEVICE_HINTS["copy back"],
    "overlap": _DEVICE_HINTS["overlap"],
    "no budget": _DEVICE_HINTS["none"],
    "strict": _DEVICE_HINTS["edge"],
    "tie to the GPU": _DEVICE_HINTS["tie"],
}


def _ex_08_3(answer: object) -> tuple[bool, str]:
    if not callable(answer):
        return False, "answer with a function choose_device(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms)."
    wrong, returns = [], []
    for args, right, tag in _DEVICE_CASES:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                returned = answer(*args)
        except Exception as exc:  # the learner's function: report any failure as a hint
            return False, f"calling it failed: {type(exc).__name__}: {exc}"
        near_cuda = isinstance(returned, str) and returned.strip().lower() in ("gpu", "cuda:0", "cuda")
        if near_cuda and returned != "cuda":
            return False, f'return "cuda", the string the prompt asks for, not {returned!r}.'
        if isinstance(returned, str) and returned.strip().lower() == "cpu" and returned != "cpu":
            return False, f'return "cpu", the string the prompt asks for, not {returned!r}.'
        if not (returned is None or (isinstance(returned, str) and returned in ("cpu", "cuda"))):
            return False, f'choose_device must return "cpu", "cuda" or None, not {describe(returned)}.'
        returns.append(returned)
        if returned != right:
            wrong.append(tag)
    if not wrong:
        return True, (
            "it adds the copies to the GPU's computation, keeps only devices within the budget, and "
            "prefers the sooner one: a request's latency is the sum of everything it waits for."
        )
    for mistake, hint in _DEVICE_MISTAKES.items():
        if all(returns[i] == _choose(*args, mistake=mistake) for i, (args, _, _) in enumerate(_DEVICE_CASES)):
            return False, hint
    return False, _DEVICE_HINTS[wrong[0]]


def _ex_08_2(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of page faults)."
    if answer == 2**24:
        return False, "that counts elements: a page holds 4096 bytes, and each float32 takes 4 of them."
    if answer == 3 * 2**24 * 4 // 4096:
        return False, "only the result is new memory: a and b were written when they were created."
    if answer == 2**24 * 4 // 4096 + 1:
        return False, (
            "that is the count when the result starts part-way into a page (section 8.3 prints where "
            "it starts): it then spans one page more, and the least is asked."
        )
    if answer != 2**24 * 4 // 4096:
        return False, "divide the bytes of the new result by the bytes of a page."
    return True, (
        "16384: 64 MiB of new result in 4 KiB pages, each faulting on its first write "
        "when no huge pages are used."
    )


def _ex_08_1(answer: object) -> tuple[bool, str]:
    if not isinstance(answer, int) or isinstance(answer, bool):
        return False, "answer with an int (a number of bytes)."
    if answer == 12:
        return False, "a appears twice in the expression but is one tensor: it is read once."
    if answer == 4:
        return False, "the result c is written to memory too."
    if answer != 8:
        return False, "count the distinct float32 tensors (4 bytes each) that are read or written."
    return True, "8: a read once, c written once; counting 12 makes the GB/s 1.5 times too high."


CHECKERS = {
    "08.1": ("the bytes per element that torch.add(a, a, out=c) moves", _ex_08_1),
    "08.2": ("the least number of page faults of one call, in 4 KiB pages", _ex_08_2),
    "08.3": ("a function choose_device(cpu_ms, gpu_ms, h2d_ms, d2h_ms, budget_ms)", _ex_08_3),
}

#: What each exercise asks the learner to do (see helpers.exercises.KINDS).
KINDS = {
    "08.1": "work",
    "08.2": "work",
    "08.3": "decide",
}

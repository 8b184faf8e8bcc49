"""Compare two tensors that may live on different devices or have different dtypes.

Introduced in lesson ``01_floating_point_non_associativity``; lesson 10 builds on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from helpers.floats import FORMATS, _check_tensor, max_ulp_distance
from helpers.tables import Table

__all__ = [
    "Comparison",
    "NamedComparison",
    "compare",
    "compare_named",
    "default_tolerances",
    "reduction_tolerances",
]

# torch.testing.assert_close's defaults (rtol, atol), from its documentation.
_DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def default_tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` that ``torch.testing.assert_close`` uses by default for ``dtype``.

    Introduced in lesson 01; lesson 03 explains where they come from.
    """
    if dtype not in _DEFAULT_TOLERANCES:
        raise TypeError(f"no default tolerances for {dtype}; use a floating dtype")
    return _DEFAULT_TOLERANCES[dtype]


@dataclass(frozen=True)
class Comparison:
    """How far apart two tensors are, by several measures. Introduced in lesson 01."""

    dtype: torch.dtype
    numel: int
    max_abs_error: float
    max_rel_error: float
    max_ulp: int
    frac_bitwise_equal: float
    rtol: float
    atol: float
    close: bool

    @property
    def bitwise_equal(self) -> bool:
        """True when every element has the same bits (``-0.0`` and ``0.0`` count as equal)."""
        return self.frac_bitwise_equal == 1.0

    def table(self, title: str = "Comparison") -> Table:
        """The measures as a :class:`helpers.tables.Table`."""
        name = str(self.dtype).replace("torch.", "")
        return Table(
            ["measure", "value"],
            [
                ("compared as", f"{name}, {self.numel} elements"),
                ("max abs error", self.max_abs_error),
                ("max rel error", self.max_rel_error),
                ("max ULP distance", self.max_ulp),
                ("fraction bitwise equal", round(self.frac_bitwise_equal, 6)),
                (f"assert_close (rtol={self.rtol:g}, atol={self.atol:g})", "pass" if self.close else "FAIL"),
            ],
            title=title,
        )

    def __str__(self) -> str:
        return str(self.table())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def compare(
    actual: torch.Tensor, expected: torch.Tensor, rtol: float | None = None, atol: float | None = None
) -> Comparison:
    """Measure how far ``actual`` is from ``expected``.

    Both are copied to the CPU and compared in the less precise of their two dtypes, which is
    also the dtype whose ``assert_close`` default tolerances give the verdict unless ``rtol`` and
    ``atol`` are given (both or neither). Errors are computed in float64. Shapes must match
    exactly; NaN or inf raise ``ValueError``. Introduced in lesson 01; lesson 10 passes tolerances.
    """
    if (rtol is None) != (atol is None):
        raise ValueError("give both rtol and atol, or neither")
    actual, expected = _check_tensor(actual, "actual"), _check_tensor(expected, "expected")
    for name, t in (("actual", actual), ("expected", expected)):
        if t.dtype not in FORMATS:
            raise TypeError(
                f"{name} has dtype {t.dtype}; compare works on float16, bfloat16, float32, float64"
            )
    if actual.shape != expected.shape:
        raise ValueError(f"shape mismatch: actual {tuple(actual.shape)} vs expected {tuple(expected.shape)}")
    if actual.numel() == 0:
        raise ValueError("nothing to compare: the tensors are empty")
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if not (torch.isfinite(actual).all() and torch.isfinite(expected).all()):
        raise ValueError("compare needs finite values: a tensor holds NaN or inf")
    dtype = max((actual.dtype, expected.dtype), key=lambda d: torch.finfo(d).eps)
    a, e = actual.to(dtype), expected.to(dtype)
    for name, after in (("actual", a), ("expected", e)):
        if not torch.isfinite(after).all():
            raise ValueError(
                f"compare needs finite values: {name} overflows {dtype} (the dtype it is compared in)"
            )
    diff = (a.double() - e.double()).abs()
    rel = diff / e.double().abs()
    rel = torch.where(diff == 0, torch.zeros_like(rel), rel)
    if rtol is None:
        rtol, atol = default_tolerances(dtype)
    try:
        torch.testing.assert_close(a, e, rtol=rtol, atol=atol)
        close = True
    except AssertionError:
        close = False
    return Comparison(
        dtype=dtype,
        numel=a.numel(),
        max_abs_error=float(diff.max()),
        max_rel_error=float(rel.max()),
        max_ulp=max_ulp_distance(a, e),
        frac_bitwise_equal=float((a == e).double().mean()),
        rtol=rtol,
        atol=atol,
        close=close,
    )


def reduction_tolerances(
    dtype: torch.dtype, k: int, scale: float = 1.0, safety: float = 4.0
) -> tuple[float, float]:
    """``(rtol, atol)`` for results that each sum ``k`` terms, computed in ``dtype`` in any order.

    ``rtol = max(default rtol, safety * u * sqrt(k))``, with ``u`` the dtype's unit roundoff: the
    typical error of a ``k``-term sum grows like ``sqrt(k) u`` (lessons 01 and 03), and ``safety``
    leaves room above the typical case. ``atol = rtol * scale``, where ``scale`` is a typical
    magnitude of the results, so that entries near zero (where a relative error means little)
    are judged on the scale of the others. Introduced in lesson 10.
    """
    default_rtol, _ = default_tolerances(dtype)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be positive and finite, got {scale!r}")
    if not (safety > 0 and math.isfinite(safety)):
        raise ValueError(f"safety must be positive and finite, got {safety!r}")
    u = torch.finfo(dtype).eps / 2
    rtol = max(default_rtol, safety * u * math.sqrt(k))
    return rtol, rtol * scale


@dataclass(frozen=True)
class NamedComparison:
    """Comparisons of several named tensors (a model's outputs and gradients, say). Lesson 10."""

    comparisons: dict[str, Comparison]

    @property
    def close(self) -> bool:
        """True when every named tensor passed its tolerance."""
        return all(c.close for c in self.comparisons.values())

    @property
    def bitwise_equal(self) -> bool:
        return all(c.bitwise_equal for c in self.comparisons.values())

    def table(self, title: str = "Comparison by tensor") -> Table:
        rows = [
            (
                name,
                c.max_rel_error,
                c.max_ulp,
                round(c.frac_bitwise_equal, 4),
                f"{c.rtol:.1e}",
                "pass" if c.close else "FAIL",
            )
            for name, c in self.comparisons.items()
        ]
        headers = ["tensor", "max rel error", "max ULP", "bitwise equal", "rtol", "verdict"]
        return Table(headers, rows, title=title)

    def __str__(self) -> str:
        return str(self.table())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


def compare_named(
    actual: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    tolerances: Mapping[str, tuple[float, float]] | None = None,
) -> NamedComparison:
    """:func:`compare` for each name that both mappings hold; ``tolerances`` maps a name to
    ``(rtol, atol)`` (default: the dtype's ``assert_close`` defaults). Introduced in lesson 10.
    """
    if set(actual) != set(expected):
        missing = sorted(set(actual) ^ set(expected))
        raise KeyError(f"the two sides name different tensors: {missing}")
    tolerances = tolerances or {}
    out = {}
    for name in expected:
        rtol, atol = tolerances.get(name, (None, None))
        out[name] = compare(actual[name], expected[name], rtol=rtol, atol=atol)
    return NamedComparison(out)

"""Compare two tensors that may live on different devices or have different dtypes.

Introduced in lesson ``01_floating_point_non_associativity``; lesson 10 builds on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from helpers.floats import FORMATS, _check_tensor, ulp_distance
from helpers.tables import Table

__all__ = ["Comparison", "compare", "default_tolerances"]

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


def compare(actual: torch.Tensor, expected: torch.Tensor) -> Comparison:
    """Measure how far ``actual`` is from ``expected``.

    Both are copied to the CPU and compared in the less precise of their two dtypes, which is
    also the dtype whose ``assert_close`` default tolerances give the verdict. Errors are
    computed in float64. Shapes must match exactly; NaN or inf raise ``ValueError``.
    Introduced in lesson 01.
    """
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
    diff = (a.double() - e.double()).abs()
    rel = diff / e.double().abs()
    rel = torch.where(diff == 0, torch.zeros_like(rel), rel)
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
        max_ulp=int(ulp_distance(a, e).max()),
        frac_bitwise_equal=float((a == e).double().mean()),
        rtol=rtol,
        atol=atol,
        close=close,
    )

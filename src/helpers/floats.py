"""Bit-level views of floating-point numbers and summation in chosen orders.

Introduced in lesson ``01_floating_point_non_associativity``; ``round_mantissa``,
``round_to_format`` and ``matmul_error`` simulate TF32, bfloat16 and float16 inputs in lesson 03.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from helpers.tables import Table

__all__ = [
    "FORMATS",
    "INPUT_FORMATS",
    "FloatAnatomy",
    "float_anatomy",
    "matmul_error",
    "round_mantissa",
    "round_to_format",
    "sum_exact",
    "sum_kahan",
    "sum_pairwise",
    "sum_sequential",
    "ulp",
    "ulp_distance",
    "unit_roundoff",
]

# dtype -> (exponent bits, explicit mantissa bits, integer dtype of the same width)
FORMATS: dict[torch.dtype, tuple[int, int, torch.dtype]] = {
    torch.float16: (5, 10, torch.int16),
    torch.bfloat16: (8, 7, torch.int16),
    torch.float32: (8, 23, torch.int32),
    torch.float64: (11, 52, torch.int64),
}
_NUMPY = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}


def _check_tensor(x: object, name: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, not {type(x).__name__}")
    return x


def _check_float_dtype(dtype: object, allowed=FORMATS) -> torch.dtype:
    if dtype not in allowed:
        names = ", ".join(str(d).replace("torch.", "") for d in allowed)
        raise TypeError(f"dtype {dtype} is not supported here; use one of: {names}")
    return dtype  # type: ignore[return-value]


@dataclass(frozen=True)
class FloatAnatomy:
    """The sign, exponent and mantissa fields of one floating-point value.

    Introduced in lesson 01.
    """

    dtype: torch.dtype
    requested: float
    stored: float
    sign: int
    exponent_bits: str
    mantissa_bits: str
    bias: int
    kind: str

    @property
    def exponent(self) -> int | None:
        """The unbiased exponent (``None`` for zero, inf and NaN)."""
        raw = int(self.exponent_bits, 2)
        if self.kind == "normal":
            return raw - self.bias
        if self.kind == "subnormal":
            return 1 - self.bias
        return None

    @property
    def rounding_error(self) -> float:
        """``stored - requested``, computed in float64."""
        return self.stored - self.requested

    def table(self) -> Table:
        """The fields as a :class:`helpers.tables.Table`."""
        name = str(self.dtype).replace("torch.", "")
        return Table(
            ["field", "bits", "meaning"],
            [
                ("sign", str(self.sign), "-" if self.sign else "+"),
                (
                    "exponent",
                    self.exponent_bits,
                    f"{self.kind}, 2^{self.exponent}" if self.exponent is not None else self.kind,
                ),
                ("mantissa", self.mantissa_bits, f"{len(self.mantissa_bits)} stored bits"),
                ("stored value", "", repr(self.stored)),
                ("rounding error", "", f"{self.rounding_error:.3e}"),
            ],
            title=f"{self.requested!r} as {name}",
        )

    def __str__(self) -> str:
        return str(self.table())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        bits = (
            f"<span style='color:#c0392b'>{self.sign}</span> "
            f"<span style='color:#2471a3'>{self.exponent_bits}</span> "
            f"<span style='color:#229954'>{self.mantissa_bits}</span>"
        )
        return f"<div><code style='font-size:110%'>{bits}</code></div>" + self.table()._repr_html_()


def float_anatomy(value: float | torch.Tensor, dtype: torch.dtype = torch.float32) -> FloatAnatomy:
    """Split ``value``, rounded to ``dtype``, into its sign, exponent and mantissa bits.

    ``value`` is a Python number or a one-element tensor. Introduced in lesson 01.
    """
    dtype = _check_float_dtype(dtype)
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"float_anatomy takes one value, got a tensor of shape {tuple(value.shape)}")
        requested = float(value.double().item())
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        requested = float(value)
    else:
        raise TypeError(f"value must be a number or a one-element tensor, not {type(value).__name__}")
    exp_bits, man_bits, int_dtype = FORMATS[dtype]
    stored = torch.tensor(requested, dtype=torch.float64).to(dtype)
    width = 1 + exp_bits + man_bits
    raw = int(stored.view(int_dtype).item()) & ((1 << width) - 1)
    bits = format(raw, f"0{width}b")
    sign, exponent, mantissa = int(bits[0]), bits[1 : 1 + exp_bits], bits[1 + exp_bits :]
    if exponent == "1" * exp_bits:
        kind = "nan" if "1" in mantissa else "inf"
    elif exponent == "0" * exp_bits:
        kind = "subnormal" if "1" in mantissa else "zero"
    else:
        kind = "normal"
    bias = (1 << (exp_bits - 1)) - 1
    return FloatAnatomy(dtype, requested, float(stored.double().item()), sign, exponent, mantissa, bias, kind)


def ulp(x: torch.Tensor) -> torch.Tensor:
    """The unit in the last place of each element: the gap from ``|x|`` to the next float away from zero.

    Computed in ``x``'s own dtype, so ``ulp(torch.tensor(1.0))`` is float32's ``eps``.
    Introduced in lesson 01.
    """
    x = _check_tensor(x)
    _check_float_dtype(x.dtype)
    a = x.abs()
    return torch.nextafter(a, torch.full_like(a, math.inf)) - a


def _ordinal(x: torch.Tensor) -> torch.Tensor:
    """Map floats to integers that count representable values in order (-0.0 and +0.0 both map to 0)."""
    _, _, int_dtype = FORMATS[x.dtype]
    i = x.view(int_dtype).to(torch.int64)
    if x.dtype != torch.float64:
        width = 16 if int_dtype == torch.int16 else 32
        sign_bit = 1 << (width - 1)
        magnitude = i & (sign_bit - 1)
        return torch.where(i < 0, -magnitude, magnitude)
    magnitude = i & 0x7FFF_FFFF_FFFF_FFFF
    return torch.where(i < 0, -magnitude, magnitude)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How many representable values lie between each pair of elements (0 means equal, -0.0 == 0.0).

    Both tensors must have the same float dtype and shape (broadcasting is not applied, to catch
    mistakes); NaNs raise ``ValueError``. Returns int64. Introduced in lesson 01.
    """
    a, b = _check_tensor(a, "a"), _check_tensor(b, "b")
    if a.dtype != b.dtype:
        raise TypeError(f"ulp_distance needs one dtype, got {a.dtype} and {b.dtype}; cast one first")
    _check_float_dtype(a.dtype)
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {tuple(a.shape)} vs {tuple(b.shape)}")
    a, b = a.detach().cpu(), b.detach().cpu()
    if torch.isnan(a).any() or torch.isnan(b).any():
        raise ValueError("ulp_distance is undefined for NaN")
    return (_ordinal(a) - _ordinal(b)).abs()


def round_mantissa(x: torch.Tensor, bits: int, ties: str = "even") -> torch.Tensor:
    """Round a float32 tensor to ``bits`` explicit mantissa bits, to the nearest value.

    The exponent range stays float32's, so ``bits=10`` simulates TF32 inputs and ``bits=7``
    matches ``x.to(torch.bfloat16).float()``. A value exactly halfway between two neighbours goes
    to the one with an even last bit (``ties="even"``, IEEE 754's default) or to the one further
    from zero (``ties="away"``, the rule of NVIDIA's ``cvt.rna.tf32.f32`` instruction). NaN and inf
    pass through. Introduced in lesson 01, used in lesson 03.
    """
    x = _check_tensor(x)
    if x.dtype != torch.float32:
        raise TypeError(f"round_mantissa works on float32 tensors, not {x.dtype}")
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise TypeError(f"bits must be an int, not {type(bits).__name__}")
    if not 0 <= bits <= 23:
        raise ValueError(f"bits must be between 0 and 23 (float32 stores 23), got {bits}")
    if ties not in ("even", "away"):
        raise ValueError(f"ties must be 'even' or 'away', got {ties!r}")
    if bits == 23:
        return x.clone()
    drop = 23 - bits
    # Work on the unsigned bit pattern: the sign bit is untouched, and a carry out of the
    # mantissa correctly bumps the exponent (the largest floats round up to inf).
    u = x.contiguous().view(torch.int32).to(torch.int64) & 0xFFFF_FFFF
    half = 1 << (drop - 1)
    if ties == "even":
        out = ((u + half - 1 + ((u >> drop) & 1)) >> drop) << drop
    else:
        out = ((u + half) >> drop) << drop
    out = torch.where(out >= 1 << 31, out - (1 << 32), out).to(torch.int32).view(torch.float32)
    return torch.where(torch.isfinite(x), out, x).reshape(x.shape)


# format name -> how float32 inputs are rounded before a tensor-core style product
INPUT_FORMATS = ("float32", "tf32", "bfloat16", "float16")


def round_to_format(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """Round float32 values to what ``fmt`` can hold, returned as float32.

    ``fmt`` is one of ``"float32"`` (unchanged), ``"tf32"`` (10 mantissa bits, ties away from zero,
    as the GPU converts), ``"bfloat16"`` or ``"float16"`` (PyTorch's own conversions, so float16
    also overflows beyond 65504). Introduced in lesson 03.
    """
    x = _check_tensor(x)
    if x.dtype != torch.float32:
        raise TypeError(f"round_to_format works on float32 tensors, not {x.dtype}")
    if fmt == "float32":
        return x.clone()
    if fmt == "tf32":
        return round_mantissa(x, 10, ties="away")
    if fmt == "bfloat16":
        return x.to(torch.bfloat16).float()
    if fmt == "float16":
        return x.to(torch.float16).float()
    raise ValueError(f"unknown format {fmt!r}; use one of: {', '.join(INPUT_FORMATS)}")


def unit_roundoff(fmt: str) -> float:
    """Half the gap between 1.0 and the next value of ``fmt``: the largest relative rounding error.

    Introduced in lesson 03.
    """
    bits = {"float32": 23, "tf32": 10, "bfloat16": 7, "float16": 10, "float64": 52}
    if fmt not in bits:
        raise ValueError(f"unknown format {fmt!r}; use one of: {', '.join(bits)}")
    return 2.0 ** -(bits[fmt] + 1)


def matmul_error(fmt: str, k: int, m: int = 64, seed: int = 0) -> dict[str, float]:
    """Relative error of an (m x k) @ (k x m) product whose inputs are rounded to ``fmt``.

    The inputs are standard normal, drawn on the CPU; products are accumulated in float32 (as
    tensor cores do) and compared with the float64 product of the unrounded inputs. Returns the
    Frobenius-norm relative error (``"rel_fro"``) and the largest error over the largest entry
    (``"max_rel"``). Introduced in lesson 03.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, m, generator=g)
    exact = a.double() @ b.double()
    got = (round_to_format(a, fmt) @ round_to_format(b, fmt)).double()
    diff = (got - exact).abs()
    return {
        "rel_fro": (diff.norm() / exact.norm()).item(),
        "max_rel": (diff.max() / exact.abs().max()).item(),
    }


def _check_sum_input(x: object) -> torch.Tensor:
    x = _check_tensor(x)
    _check_float_dtype(x.dtype, _NUMPY)
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError("nothing to sum: give a tensor whose last dimension is not empty")
    return x.detach().cpu()


def sum_sequential(x: torch.Tensor) -> torch.Tensor:
    """Sum along the last dimension strictly left to right, rounding after every addition.

    This is what a plain ``for`` loop does, in ``x``'s own dtype (float16, float32 or float64).
    Introduced in lesson 01.
    """
    x = _check_sum_input(x)
    arr = x.numpy()
    # ufunc.accumulate is sequential by definition (unlike np.sum, which is pairwise).
    return torch.from_numpy(np.add.accumulate(arr, axis=-1, dtype=arr.dtype)[..., -1].copy())


def sum_pairwise(x: torch.Tensor) -> torch.Tensor:
    """Sum along the last dimension as a balanced binary tree (adjacent pairs, level by level).

    This is the order a parallel reduction uses. Padding with zeros to a power of two changes
    nothing because adding zero is exact. Introduced in lesson 01.
    """
    x = _check_sum_input(x)
    n = x.shape[-1]
    size = 1 << (n - 1).bit_length()
    level = torch.nn.functional.pad(x, (0, size - n)) if size != n else x.clone()
    while level.shape[-1] > 1:
        level = level[..., 0::2] + level[..., 1::2]
    return level[..., 0]


def sum_kahan(x: torch.Tensor) -> torch.Tensor:
    """Kahan's compensated sum along the last dimension, in ``x``'s own dtype.

    A second variable carries the low-order bits that each addition loses. Introduced in lesson 01.
    """
    x = _check_sum_input(x)
    arr = np.moveaxis(x.numpy(), -1, 0)
    total = np.zeros(arr.shape[1:], dtype=arr.dtype)
    carry = np.zeros_like(total)
    for value in arr:
        y = value - carry
        t = total + y
        carry = (t - total) - y
        total = t
    return torch.from_numpy(np.asarray(total))


def sum_exact(x: torch.Tensor) -> torch.Tensor:
    """The exact sum along the last dimension, correctly rounded to float64 (``math.fsum``).

    The reference every other order is measured against. Introduced in lesson 01.
    """
    x = _check_sum_input(x)
    if not torch.isfinite(x).all():
        raise ValueError("sum_exact needs finite values (the tensor holds inf or NaN)")
    rows = x.double().reshape(-1, x.shape[-1]).tolist()
    return torch.tensor([math.fsum(r) for r in rows], dtype=torch.float64).reshape(x.shape[:-1])

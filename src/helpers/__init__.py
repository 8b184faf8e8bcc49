"""Helpers for the course on why PyTorch gives different numbers on different devices and runs.

The lessons teach PyTorch's own API; these helpers carry only what would distract from it.
Take-home tools: ``compare``, ``first_divergence``, ``helpers.fingerprint``, ``helpers.moving``,
``helpers.determinism`` and ``best_device``. ``floats`` holds the arithmetic the lessons study,
``show`` the pictures and tables, ``lessons`` code that serves one lesson, ``exercises`` the
checkers (docs/layout.md). ``import helpers`` imports torch and numpy but not matplotlib or
ipywidgets (``helpers.show.plots`` and ``helpers.show.widgets`` load them when used).
"""

# helpers.fingerprint (fingerprint, diff_fingerprints and `python -m helpers.fingerprint`) is not
# imported here: running a module that the package already imported makes runpy warn. For the same
# reason (`python -m helpers.setup`), setup_check and setup_line are imported on first use (__getattr__).
from helpers.compare import Comparison, compare, compare_named, default_tolerances, reduction_tolerances
from helpers.devices import (
    available_devices,
    best_device,
    environment_report,
    environment_summary,
    module_devices,
)
from helpers.diagnose import Divergence, first_divergence
from helpers.exercises import check
from helpers.floats import (
    float_anatomy,
    matmul_error,
    round_mantissa,
    round_to_format,
    sum_exact,
    sum_kahan,
    sum_pairwise,
    sum_sequential,
    ulp,
    ulp_distance,
    unit_roundoff,
)
from helpers.settings import flush_denormal, matmul_precision, threads
from helpers.show.source import show_source
from helpers.show.tables import Table

__all__ = [
    "Comparison",
    "Divergence",
    "Table",
    "available_devices",
    "best_device",
    "check",
    "compare",
    "compare_named",
    "default_tolerances",
    "environment_report",
    "environment_summary",
    "first_divergence",
    "float_anatomy",
    "flush_denormal",
    "matmul_error",
    "matmul_precision",
    "module_devices",
    "reduction_tolerances",
    "round_mantissa",
    "round_to_format",
    "setup_check",
    "setup_line",
    "show_source",
    "sum_exact",
    "sum_kahan",
    "sum_pairwise",
    "sum_sequential",
    "threads",
    "ulp",
    "ulp_distance",
    "unit_roundoff",
]

__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("setup_check", "setup_line"):
        from helpers import setup

        return getattr(setup, name)
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")

"""Helpers for the course on why PyTorch gives different numbers on different devices and runs.

The lessons teach PyTorch's own API; these helpers carry only what would distract from it:
bit-level views, comparison tables, plots, widgets and exercise checkers. ``import helpers``
imports torch and numpy but not matplotlib or ipywidgets (``helpers.plots`` and
``helpers.widgets`` load them when used).
"""

from helpers.compare import Comparison, compare, compare_named, default_tolerances, reduction_tolerances
from helpers.devices import (
    available_devices,
    best_device,
    environment_report,
    environment_summary,
    module_devices,
)
# helpers.diagnose.fingerprint() is not exported here: helpers.fingerprint is the command line
# (python -m helpers.fingerprint), and a function of the same name would be hidden by it
from helpers.diagnose import Divergence, diff_fingerprints, first_divergence
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
from helpers.tables import Table

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
    "diff_fingerprints",
    "environment_report",
    "environment_summary",
    "first_divergence",
    "float_anatomy",
    "matmul_error",
    "module_devices",
    "reduction_tolerances",
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

__version__ = "0.1.0"

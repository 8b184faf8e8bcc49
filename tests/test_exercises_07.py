"""Lesson 07's exercise checkers accept right answers and reject wrong ones with a hint."""

import torch

from helpers import check


RIGHT = {
    "07.1": "cpu",
    "07.2": "_orig_mod.",
    "07.3": torch.serialization.safe_globals,
    "07.4": "assign",
    "07.5": False,
}
WRONG = {
    "07.1": ["cuda", "cuda:0", 0, None.__class__],
    "07.2": ["_orig_mod", "module.", "orig"],
    "07.3": ["safe_globals", torch.serialization.add_safe_globals, torch.load],
    "07.4": ["strict", "mmap", "assign=True", True, "assign_to_params_buffers"],
    "07.5": [True, "False", 0],
}


def test_07_5_rests_on_the_documented_limits_not_on_fixed_bugs():
    # torch>=2.11 has both published fixes: the verdict must rest on what PyTorch documents for it
    wrong, right = str(check("07.5", True)), str(check("07.5", False))
    assert "section 7.3" in wrong and "CVE" not in wrong
    assert "denial of service" in right and "memory corruption" in right

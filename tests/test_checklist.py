"""The reproducibility checklist: each setting it lists really decides whether two runs match."""

import random

import numpy as np
import pytest
import torch

from helpers.lessons.checklist import SETTINGS, left_open, run_twice

EVERYTHING = {name: True for name in SETTINGS} | {"workers": False}


def test_every_setting_on_makes_the_runs_match_and_leaves_nothing_open():
    outcome = run_twice(**EVERYTHING)
    assert outcome.match and outcome.first_difference is None, outcome
    assert left_open(**EVERYTHING) == []
    assert "match bit for bit" in str(outcome)


@pytest.mark.parametrize(
    "missing, first",
    [
        ("torch_seed", "the initial weights (embed.weight)"),
        ("numpy_seed", "the batch of step 1"),
        ("python_seed", "the batch of step 1"),
    ],
)
def test_a_missing_seed_shows_where_it_acts_first(missing, first):
    outcome = run_twice(**(EVERYTHING | {missing: False}))
    assert not outcome.match and outcome.first_difference == first, outcome
    assert len(left_open(**(EVERYTHING | {missing: False}))) >= 1


def test_workers_are_seeded_by_pytorch_so_the_main_process_seeds_do_not_matter():
    settings = EVERYTHING | {"workers": True, "numpy_seed": False, "python_seed": False,
                             "worker_init_fn": False}
    assert run_twice(**settings).match
    assert left_open(**settings) == []


def test_deterministic_mode_and_thread_count_are_listed_when_left_open():
    assert any("arrival order" in r for r in left_open(**(EVERYTHING | {"deterministic": False})))
    assert any("thread count" in r for r in left_open(**(EVERYTHING | {"same_threads": False})))
    assert len(left_open()) == 6  # nothing set: every source is open


def test_run_twice_restores_every_global_it_touches():
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    threads = torch.get_num_threads()
    before = (torch.get_rng_state(), random.getstate(), np.random.get_state())
    run_twice(torch_seed=True, numpy_seed=True, python_seed=True, deterministic=True)
    assert torch.get_num_threads() == threads and not torch.are_deterministic_algorithms_enabled()
    assert torch.equal(torch.get_rng_state(), before[0]) and random.getstate() == before[1]
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), before[2], strict=True))


def test_a_misspelt_setting_is_refused_by_name():
    with pytest.raises(TypeError, match="unknown setting 'seed'"):
        run_twice(seed=True)


def test_the_widget_runs_on_the_button_and_reports_what_is_open():
    from helpers.lessons.checklist import reproducibility_checklist

    w = reproducibility_checklist(torch_seed=True)
    grid, button, view = w.children
    assert "differ" in view.value and "NumPy" in view.value
    assert repr(w) == "reproducibility_checklist(torch_seed=True)"
    for box in grid.children:
        box.value = box.description != "workers"
    button.click()
    assert "match bit for bit" in view.value and "Nothing is left to chance" in view.value


def test_the_tick_boxes_wrap_to_the_notebook_width_instead_of_scrolling():
    from helpers.lessons.checklist import BOX_WIDTH, reproducibility_checklist

    grid = reproducibility_checklist().children[0]
    assert grid.layout.flex_flow == "row wrap" and grid.layout.width == "100%"
    assert [box.description for box in grid.children] == [name.replace("_", " ") for name in SETTINGS]
    assert all(box.layout.width == BOX_WIDTH and not box.indent for box in grid.children)
    longest = max(len(box.description) for box in grid.children)
    assert float(BOX_WIDTH.removesuffix("em")) >= 0.6 * longest + 2  # label plus the box itself

"""A reproducibility checklist you can try: which seeds and settings make two runs of a training match.

:func:`run_twice` trains a small model twice in this process with the chosen settings and
compares the two runs in the order things happen: the initial weights, then each step's batch
and loss, then the final weights. The data pipeline draws from every global generator a real one
may touch (torch's, NumPy's and Python's ``random``), and the model pools with
``index_put_(accumulate=True)`` over 32,768 rows, whose float32 additions arrive from several
threads in an order that can change from run to run (lesson 04). :func:`reproducibility_checklist`
is the widget lesson 05 shows: a tick box per setting and a button that calls :func:`run_twice`.
Introduced in lesson 05.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:  # ipywidgets is imported lazily
    import ipywidgets

__all__ = ["SETTINGS", "Outcome", "all_settings", "left_open", "reproducibility_checklist", "run_twice"]

#: The settings :func:`run_twice` takes, each with the line of a training script it stands for.
SETTINGS: dict[str, str] = {
    "torch_seed": "torch.manual_seed(0) at the start of each run",
    "numpy_seed": "np.random.seed(0) at the start of each run",
    "python_seed": "random.seed(0) at the start of each run",
    "worker_init_fn": "DataLoader(..., worker_init_fn=seed_worker)",
    "loader_generator": "DataLoader(..., generator=torch.Generator().manual_seed(0))",
    "workers": "DataLoader(..., num_workers=2) (otherwise 0: the main process loads)",
    "same_threads": "the same thread count in both runs "
    "(otherwise the second run uses 1 thread, the first 2)",
    "deterministic": "torch.use_deterministic_algorithms(True)",
}

_TOKENS, _FEATURES, _WIDTH, _ITEMS, _BATCH = 1024, 8, 16, 128, 32  # 32 bags x 1024 rows = 32,768 rows


class _Bags(torch.utils.data.Dataset):
    """Bags of 1024 rows; each item is jittered by torch, NumPy and Python's random, all global."""

    def __init__(self) -> None:
        g = torch.Generator().manual_seed(1234)  # the data themselves are fixed
        self.base = torch.randn(_ITEMS, _TOKENS, _FEATURES, generator=g)
        self.target = torch.randn(_ITEMS, generator=g)

    def __len__(self) -> int:
        return _ITEMS

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        jitter = 0.1 * (torch.rand(1) + random.random() + float(np.random.rand()))
        return self.base[i] + jitter, self.target[i]


class _Net(nn.Module):
    """Embed each row, drop some, add the rows of each bag together, predict one number per bag."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(_FEATURES, _WIDTH)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(_WIDTH, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bags = x.shape[0]
        h = self.drop(torch.relu(self.embed(x.transpose(0, 1).reshape(-1, _FEATURES))))
        owner = torch.arange(bags).repeat(_TOKENS)  # every thread's share of rows reaches every bag
        pooled = torch.zeros(bags, _WIDTH).index_put_((owner,), h, accumulate=True) / _TOKENS
        return self.head(pooled).squeeze(1)


@dataclass(frozen=True)
class _Record:
    initial: dict[str, torch.Tensor]
    batches: list[torch.Tensor]
    losses: list[torch.Tensor]
    final: dict[str, torch.Tensor]


def _train_once(settings: dict[str, bool], threads: int) -> _Record:
    from helpers.determinism import seed_worker

    if settings["torch_seed"]:
        torch.manual_seed(0)
    if settings["numpy_seed"]:
        np.random.seed(0)
    if settings["python_seed"]:
        random.seed(0)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(settings["deterministic"])
    loader = torch.utils.data.DataLoader(
        _Bags(),
        batch_size=_BATCH,
        shuffle=True,
        num_workers=2 if settings["workers"] else 0,
        worker_init_fn=seed_worker if settings["worker_init_fn"] else None,
        generator=torch.Generator().manual_seed(0) if settings["loader_generator"] else None,
    )
    net = _Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    initial = {name: t.clone() for name, t in net.state_dict().items()}
    batches, losses = [], []
    for x, y in loader:
        loss = ((net(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batches.append(x)
        losses.append(loss.detach())
    return _Record(initial, batches, losses, net.state_dict())


def _first_difference(a: _Record, b: _Record) -> str | None:
    for name in a.initial:
        if not torch.equal(a.initial[name], b.initial[name]):
            return f"the initial weights ({name})"
    for step, (xa, xb, la, lb) in enumerate(zip(a.batches, b.batches, a.losses, b.losses, strict=True), 1):
        if not torch.equal(xa, xb):
            return f"the batch of step {step}"
        if not torch.equal(la, lb):
            return f"the loss of step {step} (its batch was the same)"
    for name in a.final:
        if not torch.equal(a.final[name], b.final[name]):
            return f"the final weights ({name}), though every loss matched"
    return None


@dataclass(frozen=True)
class Outcome:
    """What :func:`run_twice` found: whether the runs matched, and where they first differed."""

    settings: dict[str, bool]
    match: bool
    first_difference: str | None
    seconds: float

    def __str__(self) -> str:
        if self.match:
            return "The two runs match bit for bit: initial weights, every batch, every loss, final weights."
        return f"The two runs differ. First difference: {self.first_difference}."


def all_settings(settings: dict[str, bool]) -> dict[str, bool]:
    """Every setting of :data:`SETTINGS`, False where ``settings`` leaves it out; a misspelt name raises."""
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise TypeError(f"unknown setting {unknown[0]!r}; the settings are {', '.join(SETTINGS)}")
    return {name: settings.get(name, False) for name in SETTINGS}


def left_open(**settings: bool) -> list[str]:
    """What can still differ between two runs with these settings, one reason per line.

    Follows from how the training is written and from PyTorch's DataLoader (each worker seeds
    ``random`` and torch with the loader's base seed plus its number, and NumPy's global generator
    with a hash of the two);
    an empty list means nothing is left to chance or to the machine. Settings as for :func:`run_twice`.
    """
    s = all_settings(settings)
    reasons = []
    if not s["torch_seed"]:
        reasons.append(
            (
                "the initial weights and the dropout masks"
                if s["workers"]
                else "the initial weights, the dropout masks and the dataset's torch draws "
                "(made in the main process)"
            )
            + " come from torch's unseeded global generator"
        )
        if not s["loader_generator"]:
            reasons.append(
                ("so do the shuffle and the workers' base seed" if s["workers"] else "so does the shuffle")
                + " (the loader has no generator of its own)"
            )
    if not s["workers"]:
        if not s["numpy_seed"]:
            reasons.append("the dataset draws from NumPy's global generator, unseeded, in the main process")
        if not s["python_seed"]:
            reasons.append("the dataset draws from Python's random, unseeded, in the main process")
    if not s["same_threads"]:
        reasons.append("the thread count changes how sums are split into partial sums (lesson 02)")
    if not s["deterministic"]:
        reasons.append("index_put_(accumulate=True) adds from several threads in arrival order (lesson 04)")
    return reasons


def run_twice(**settings: bool) -> Outcome:
    """Train the small model twice with these settings and compare the runs bit for bit.

    Each keyword is a name of :data:`SETTINGS` set to True or False; a setting left out is False.
    The first run uses 2 threads, the second 2 as well with ``same_threads``, else 1. The global
    generators, the thread count and deterministic mode are restored afterwards. Takes about a
    second (two, with workers). Introduced in lesson 05.
    """
    s = all_settings(settings)
    start = time.perf_counter()
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            first = _train_once(s, threads=2)
            second = _train_once(s, threads=2 if s["same_threads"] else 1)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        random.setstate(python_state)
        np.random.set_state(numpy_state)
    where = _first_difference(first, second)
    return Outcome(s, where is None, where, time.perf_counter() - start)


#: The width of one tick box in :func:`reproducibility_checklist`: the longest label ("loader
#: generator") fits, and the boxes wrap onto as many rows as the notebook's width needs.
BOX_WIDTH = "12.5em"


def reproducibility_checklist(**settings: bool) -> ipywidgets.VBox:
    """A tick box for each seed and setting of :data:`SETTINGS`, and a button that trains the small
    model twice (:func:`run_twice`) and says whether the runs match and where they first differ.

    The keywords tick boxes at the start (True or False, as for :func:`run_twice`); the report shown
    at the start is computed with them. The boxes sit in a wrapping row (``flex_flow="row wrap"``),
    each :data:`BOX_WIDTH` wide, so they fit the notebook's width without a horizontal scroll bar.
    Introduced in lesson 05.
    """
    import ipywidgets as widgets

    from helpers.show.widgets import checklist_html

    chosen = all_settings(settings)
    boxes = {
        name: widgets.Checkbox(value=chosen[name], description=name.replace("_", " "), indent=False,
                               layout=widgets.Layout(width=BOX_WIDTH))
        for name in SETTINGS
    }
    button = widgets.Button(description="Run twice", button_style="primary")
    view = widgets.HTML()

    class ReproducibilityChecklist(widgets.VBox):
        def __repr__(self) -> str:
            ticked = ", ".join(f"{name}=True" for name, box in boxes.items() if box.value)
            return f"reproducibility_checklist({ticked})"

    def run(_button=None) -> None:
        now = {name: box.value for name, box in boxes.items()}
        view.value = "<p>Training twice...</p>"
        view.value = checklist_html(run_twice(**now), left_open(**now))

    button.on_click(run)
    run()
    grid = widgets.Box(
        list(boxes.values()), layout=widgets.Layout(display="flex", flex_flow="row wrap", width="100%")
    )
    return ReproducibilityChecklist([grid, button, view])

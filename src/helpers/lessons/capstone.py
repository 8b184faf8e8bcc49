"""A small model and training script that give different results in two configurations.

The capstone lesson ``12_debugging_a_mismatch`` debugs them: configuration ``A`` (a laptop)
and ``B`` (a server) train the same model on the same data, and differ through five planted
causes:

1. the thread count, with ``index_put_(accumulate=True)`` in the model, whose float32 kernel adds
   atomically on several threads (lesson 04), so B need not repeat itself where its threads run
   at the same time (two or more cores). The pooled summands are float32 products with a learned
   float32 weight, and the pooling and the head run outside autocast, so the order of the
   additions reaches the result in B too;
2. bfloat16 autocast of the per-item layers in B's forward pass (lesson 03);
3. the standardisation statistics kept as plain tensor attributes, which a checkpoint does not
   save, so B's reloaded model standardises with zeros and ones (lessons 06 and 07);
4. the dataset's noise drawn from the global generator before the script seeds it, so it
   depends on whatever drew before; and PyTorch seeds each process's global CPU generator from a
   nondeterministic source, so even two fresh runs of the same configuration differ (lesson 05);
5. the reloaded model left in training mode, so its Dropout is active at evaluation.

Causes 2 to 5 change the result on any CPU. Each cause has a switch in :class:`Config` that
removes it. The lesson prints these parts of the module's source. Introduced in lesson 12.

Section 12.6 is a hunt: a server that predicts with a checkpoint of the fixed configuration, through
:func:`server_model` and the ``server`` command, and disagrees with :func:`load` and the ``laptop``
command. The server's start-up settings and its loading code are a colleague's deployment, in
``helpers/lessons/capstone_server.py``, the hunt's answer: a reader finds what differs with the tools.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
from collections.abc import Iterator

import torch
from torch import nn

from helpers.determinism import deterministic_mode

__all__ = [
    "A", "B", "SERVING", "Config", "NoisyBags", "Net", "Result", "configured", "load", "serve",
    "server_model", "test_bags", "train",
]

FEATURES, ITEMS = 8, 64  # each sample is a bag of 64 items with 8 features


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that differs between two runs of :func:`train`; each default is a planted cause."""

    name: str = "A"
    threads: int = 1                 # torch.set_num_threads for the run
    deterministic: bool = False      # torch.use_deterministic_algorithms(True) for the run
    bf16: bool = False               # bfloat16 autocast in the forward pass
    data_seed: int | None = None     # the dataset's own generator; None: the global one
    from_checkpoint: bool = False    # evaluate a copy reloaded from a checkpoint, as a server does
    stats_as_buffers: bool = False   # keep the standardisation statistics in registered buffers
    eval_after_load: bool = False    # put the reloaded copy in evaluation mode
    seed: int = 0                    # torch.manual_seed before the model is built
    steps: int = 20                  # training steps


A = Config("A", threads=1)
B = Config("B", threads=4, bf16=True, from_checkpoint=True)


class NoisyBags(torch.utils.data.Dataset):
    """256 bags of items: fixed clean features plus noise; the label is computed from the clean ones.

    The noise is drawn from ``generator``, or from the global generator when it is None.
    """

    def __init__(self, generator: torch.Generator | None = None, size: int = 256) -> None:
        clean = torch.rand(size, ITEMS, FEATURES, generator=torch.Generator().manual_seed(12))
        self.labels = (clean[..., 0] * clean[..., 1]).mean(dim=1) - clean[..., 2].mean(dim=1)
        self.items = clean + 0.1 * torch.randn(clean.shape, generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.items[i], self.labels[i]


def flatten(bags: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of bags as one list of items, interleaved, and the bag each item belongs to."""
    batch = bags.shape[0]
    items = bags.transpose(0, 1).reshape(-1, FEATURES)  # item 0 of every bag, then item 1, ...
    return items, torch.arange(items.shape[0]) % batch


class Standardise(nn.Module):
    """Subtract the training items' mean and divide by their standard deviation (set by ``fit``)."""

    def __init__(self, as_buffers: bool = False) -> None:
        super().__init__()
        self.as_buffers = as_buffers
        if as_buffers:  # buffers: saved in the state_dict, moved by .to()
            self.register_buffer("mean", torch.zeros(FEATURES))
            self.register_buffer("std", torch.ones(FEATURES))
        else:           # plain attributes: neither saved nor moved
            self.mean, self.std = torch.zeros(FEATURES), torch.ones(FEATURES)

    def fit(self, items: torch.Tensor) -> None:
        self.mean.copy_(items.reshape(-1, FEATURES).mean(dim=0))
        self.std.copy_(items.reshape(-1, FEATURES).std(dim=0))

    def forward(self, items: torch.Tensor) -> torch.Tensor:
        return (items - self.mean) / self.std


class SumPerBag(nn.Module):
    """Weight each feature by a learned float32 factor, then average the items of each bag:
    ``index_put_`` with ``accumulate=True`` (a segment sum), in float32."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, h: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
        bags = torch.zeros(int(owner.max()) + 1, h.shape[1])  # float32, also under autocast
        return bags.index_put_((owner,), h.float() * self.weight, accumulate=True) / ITEMS


class Net(nn.Module):
    """Standardise each item, embed it, sum each bag, and predict one number per bag.

    With ``bf16`` only the per-item layers run under autocast; the pooling and the head stay in float32.
    """

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.bf16 = config.bf16
        self.standardise = Standardise(config.stats_as_buffers)
        self.embed = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU())
        self.pool = SumPerBag()
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(32, 1)

    def forward(self, items: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):  # the per-item layers
            h = self.embed(self.standardise(items))
        return self.head(self.drop(self.pool(h, owner))).squeeze(1)  # pooling and head in float32


@contextlib.contextmanager
def configured(config: Config) -> Iterator[None]:
    """The process-wide settings of ``config`` (threads, deterministic mode), restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        with deterministic_mode() if config.deterministic else contextlib.nullcontext():
            yield
    finally:
        torch.set_num_threads(threads)


def test_bags() -> tuple[torch.Tensor, torch.Tensor]:
    """Eight clean bags to predict, flattened: the same numbers on every run."""
    return flatten(torch.rand(8, ITEMS, FEATURES, generator=torch.Generator().manual_seed(99)))


def serve(model: Net, config: Config) -> Net:
    """The model as ``config`` evaluates it: itself, or a copy reloaded from a checkpoint."""
    if model.standardise.as_buffers != config.stats_as_buffers:
        raise ValueError(
            f"config has stats_as_buffers={config.stats_as_buffers} but the model was built with "
            f"{model.standardise.as_buffers}: serve a model with the code (Config) that trained it"
        )
    model.eval()
    if not config.from_checkpoint:
        return model
    checkpoint = io.BytesIO()
    torch.save(model.state_dict(), checkpoint)
    checkpoint.seek(0)
    copy = Net(config)
    copy.load_state_dict(torch.load(checkpoint))
    if config.eval_after_load:
        copy.eval()
    return copy


@dataclasses.dataclass
class Result:
    """What :func:`train` returns: the training losses, the trained model, and the served predictions."""

    losses: list[float]
    model: Net
    predictions: torch.Tensor


def train(config: Config) -> Result:
    """Train :class:`Net` under ``config`` and predict :func:`test_bags` with the served model."""
    with configured(config):
        generator = None if config.data_seed is None else torch.Generator().manual_seed(config.data_seed)
        data = NoisyBags(generator)
        torch.manual_seed(config.seed)
        model = Net(config)
        model.standardise.fit(data.items)
        order = torch.Generator().manual_seed(config.seed)
        losses = []
        for _ in range(config.steps):
            bags, labels = data[torch.randint(len(data), (32,), generator=order)]
            loss = nn.functional.mse_loss(model(*flatten(bags)), labels)
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.2 * p.grad  # plain gradient descent
            losses.append(loss.item())
        with torch.no_grad():
            predictions = serve(model, config)(*test_bags())
    return Result(losses, model, predictions)


# --- Section 12.6, the hunt: the laptop's way and the server's way of serving a checkpoint ---------

#: The code the laptop and the server serve with: statistics in buffers (section 12.4's fix).
SERVING = Config("serving", deterministic=True, data_seed=0, stats_as_buffers=True, eval_after_load=True)


def load(state_dict: dict[str, torch.Tensor]) -> Net:
    """The model as the laptop serves it: built with :data:`SERVING`'s code, loaded strictly, in eval mode."""
    model = Net(SERVING)
    model.load_state_dict(state_dict)
    return model.eval()


def server_model(state_dict: dict[str, torch.Tensor]) -> Net:
    """The model as the server's code builds and loads it from ``state_dict``, in eval mode.

    Only the model: the server process's start-up settings are made by the ``server`` command
    (:func:`_main`) before it calls this function, not here.
    """
    from helpers.lessons import capstone_server

    return capstone_server.server_model(state_dict)


def _serve_process(side: str, checkpoint: str) -> dict:
    """What the ``laptop`` or ``server`` command records: its fingerprint and its predictions."""
    from helpers.fingerprint import fingerprint
    from helpers.lessons import capstone_server

    if side == "server":
        capstone_server.start_up()
    state = torch.load(checkpoint)
    model = (server_model if side == "server" else load)(state)
    with torch.no_grad():
        predictions = model(*test_bags())
    return {"fingerprint": fingerprint(), "predictions": predictions.tolist()}


def _main(argv: list[str]) -> None:
    """``python -m helpers.lessons.capstone A|B OUT.json``: train one configuration, record it as JSON.

    ``python -m helpers.lessons.capstone laptop|server CHECKPOINT OUT.json``: serve a checkpoint, record it.
    """
    usage = "usage: python -m helpers.lessons.capstone A|B OUT.json | laptop|server CHECKPOINT OUT.json"
    if len(argv) == 3 and argv[0] in ("laptop", "server"):
        record = _serve_process(argv[0], argv[1])
        with open(argv[2], "w", encoding="utf-8") as out:
            json.dump(record, out)
        return
    if len(argv) != 2 or argv[0] not in ("A", "B"):
        raise SystemExit(usage)
    from helpers.fingerprint import fingerprint

    config = {"A": A, "B": B}[argv[0]]
    initial_seed = torch.initial_seed()  # the global generator's seed before anything draws
    result = train(config)
    with configured(config):
        record = {"fingerprint": fingerprint(), "loss": result.losses[-1],
                  "predictions": result.predictions.tolist(), "initial_seed": initial_seed}
    with open(argv[1], "w", encoding="utf-8") as out:
        json.dump(record, out)


if __name__ == "__main__":
    _main(sys.argv[1:])

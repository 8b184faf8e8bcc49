"""Run small ``torch.distributed`` experiments in child processes and bring the results back.

A notebook cannot host the ranks itself: each rank is a process, started here with
``torch.multiprocessing`` ("spawn", which works on every platform and from a Jupyter kernel)
and the gloo backend on ``127.0.0.1``. Each rank runs one experiment from :data:`EXPERIMENTS`,
saves what it measured with ``torch.save``, and exits; :func:`run_ranks` loads the results,
and raises with the ranks' own logs if any rank failed. The ranks' output goes to log files, not
to the notebook, and every process and the port are released before :func:`run_ranks` returns,
also after a failure. Introduced in lesson ``12_distributed_data_parallel``.
"""

from __future__ import annotations

import datetime
import gc
import math
import os
import socket
import tempfile
import traceback
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["EXPERIMENTS", "free_port", "run_ranks", "single_process_training"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the experiments (run inside each rank) ------------------------------------------------------


def _data(n: int = 10**6) -> torch.Tensor:
    return torch.rand(n, generator=torch.Generator().manual_seed(0))


def allreduce(rank: int, world: int) -> dict:
    """Each rank sums its contiguous share of the same 10^6 numbers; all_reduce adds the shares."""
    x = _data()
    share = x.chunk(world)[rank]
    total = share.sum()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    vectors = torch.rand(world, 1000, generator=torch.Generator().manual_seed(1))
    mine = vectors[rank].clone()
    dist.all_reduce(mine, op=dist.ReduceOp.SUM)  # elementwise sum of every rank's vector
    return {"total": total.item(), "share": share.sum().item(), "vector_sum": mine}


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))


def _dataset() -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(256, 16, generator=g)
    return torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True).sin())


def single_process_training(steps: int = 8, global_batch: int = 64) -> list[torch.Tensor]:
    """The reference for :func:`ddp`: one process, the full global batch per step, plain SGD."""
    torch.manual_seed(0)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = _dataset()
    for step in range(steps):
        idx = torch.arange(step * global_batch, (step + 1) * global_batch) % len(data)
        x, y = data[idx]
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def ddp(rank: int, world: int, steps: int = 8, global_batch: int = 64) -> dict:
    """DDP training: each rank takes its slice of the same global batch; gradients are averaged."""
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    model = nn.parallel.DistributedDataParallel(_model())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = _dataset()
    local = global_batch // world
    for step in range(steps):
        start = step * global_batch + rank * local
        idx = torch.arange(start, start + local) % len(data)
        x, y = data[idx]
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()  # DDP all-reduces and averages the gradients here
        opt.step()
    return {"params": [p.detach().clone() for p in model.module.parameters()]}


def seeding(rank: int, world: int) -> dict:
    """Different seeds per rank, then DDP; a DistributedSampler over two epochs; per-rank streams."""
    torch.manual_seed(100 + rank)  # deliberately different initial weights on each rank
    plain = _model()
    before = [p.detach().clone() for p in plain.parameters()]
    wrapped = nn.parallel.DistributedDataParallel(plain)  # broadcasts rank 0's parameters
    after = [p.detach().clone() for p in wrapped.module.parameters()]
    sampler = torch.utils.data.DistributedSampler(
        range(16), num_replicas=world, rank=rank, shuffle=True, seed=0
    )
    epochs_without = [list(sampler) for _ in range(2)]
    epochs_with = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        epochs_with.append(list(sampler))
    augment = torch.Generator().manual_seed(1234 + rank)  # a per-rank stream for data augmentation
    return {
        "before": before,
        "after": after,
        "without_set_epoch": epochs_without,
        "with_set_epoch": epochs_with,
        "augmentation": torch.rand(3, generator=augment),
    }


def fails(rank: int, world: int) -> dict:
    """Raises on the last rank: used to test that a failure is reported and cleaned up."""
    if rank == world - 1:
        raise RuntimeError(f"rank {rank} fails on purpose")
    dist.barrier()
    return {}


EXPERIMENTS = {"allreduce": allreduce, "ddp": ddp, "seeding": seeding, "fails": fails}


# --- the launcher ---------------------------------------------------------------------------------


def _rank_main(rank: int, world: int, name: str, port: int, folder: str) -> None:
    out = Path(folder)
    log = open(out / f"rank{rank}.log", "w")  # kept open for the whole process
    os.dup2(log.fileno(), 1)  # everything the rank prints goes to its log, not to the notebook
    os.dup2(log.fileno(), 2)
    torch.set_num_threads(1)  # the ranks share the machine's cores, as torchrun arranges
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    try:
        result = EXPERIMENTS[name](rank, world)
        torch.save(result, out / f"rank{rank}.pt")
        del result
        gc.collect()  # release DDP's reducer (and its gloo work) before the group goes
        dist.barrier()  # no rank tears down while another still talks to it
    except BaseException:
        traceback.print_exc()
        raise
    finally:
        dist.destroy_process_group()
        log.flush()


def run_ranks(name: str, world: int) -> dict[int, dict]:
    """Run experiment ``name`` on ``world`` ranks (gloo, this machine) and return each rank's result.

    Raises ``RuntimeError`` with the failing ranks' logs if any rank fails; no process is left
    running either way. Introduced in lesson 12.
    """
    if name not in EXPERIMENTS:
        raise KeyError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    if isinstance(world, bool) or not isinstance(world, int) or not 1 <= world <= 8:
        raise ValueError(f"world must be an int from 1 to 8, got {world!r}")
    with tempfile.TemporaryDirectory(prefix="ranks-") as folder:
        try:
            mp.start_processes(
                _rank_main,
                args=(world, name, free_port(), folder),
                nprocs=world,
                join=True,
                start_method="spawn",
            )
        except Exception as exc:  # a rank raised or died: report what the ranks wrote
            logs = "\n".join(
                f"--- rank {r} ---\n{(Path(folder) / f'rank{r}.log').read_text(errors='replace')[-2000:]}"
                for r in range(world)
                if (Path(folder) / f"rank{r}.log").exists()
            )
            raise RuntimeError(f"experiment {name!r} failed on {world} rank(s):\n{logs}") from exc
        return {r: torch.load(Path(folder) / f"rank{r}.pt", weights_only=True) for r in range(world)}


def sum_bound(n: int) -> float:
    """Worst-case relative error of any order of an ``n``-term float32 sum of positive numbers."""
    u = 2.0**-24
    return n * u / (1 - n * u) if n * u < 1 else math.inf

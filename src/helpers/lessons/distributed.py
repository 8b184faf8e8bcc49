"""Run small ``torch.distributed`` experiments in child processes and bring the results back.

A notebook cannot host the ranks itself: each rank is a process, started here with
``torch.multiprocessing`` ("spawn", which works on every platform and from a Jupyter kernel)
and the gloo backend on ``127.0.0.1``. The ranks meet at a ``TCPStore`` that :func:`run_ranks`
opens in the calling process on a port the operating system picks, so no port is chosen first
and bound later. Starting a rank costs more than a second (a new Python process imports torch,
and the first ``DistributedDataParallel`` imports ``torch._dynamo``), so :func:`run_ranks` starts
the ranks once and has them run a list of experiments from :data:`EXPERIMENTS` in turn, in one
process group. Each rank saves what it measured with ``torch.save`` and exits; :func:`run_ranks`
loads the results, and raises with the ranks' own logs if any rank failed or the run passed its
deadline. The ranks' output goes to log files, not to the notebook. Every file of a run (logs,
results, the ``pytorch-errorfile-*.pickle`` that ``torch.multiprocessing`` writes for a rank
that raises, and the ``torchinductor_<user>`` folder that importing ``torch._dynamo`` creates)
is written into one temporary folder, removed before :func:`run_ranks` returns; the processes
and the store are released too, after a success, a failure, a timeout or an interrupt.

:func:`ring_allreduce` computes in one process what gloo's ring all-reduce returns, addition for
addition. Introduced in lesson ``11_distributed_data_parallel``.
"""

# ruff: noqa: B905 -- lesson 11 prints gradients() as it stands; its zip pairs equal chunks

from __future__ import annotations

import copy
import datetime
import math
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "EXPERIMENTS",
    "UnknownExperimentError",
    "ring_allreduce",
    "run_ranks",
    "single_process_training",
    "load_in_one_process",
    "sharded_model",
    "small_model",
    "sum_bound",
    "sum_data",
    "training_data",
]


# --- data and model shared by the ranks and the notebook ------------------------------------------


def sum_data(n: int = 10**6) -> torch.Tensor:
    """The numbers lesson 11 sums across ranks: multiples of 1/8 from 0 to 7.875.

    Drawn as integers (the same on every machine) and divided by 8 (exact). Each contiguous half
    or third of the 10**6 numbers (``chunk(2)``, ``chunk(3)``) sums to less than 2**21, where
    float32 holds every multiple of 1/8, so such a share is summed exactly in any order (lesson 11
    asserts the bound). Not every 500 000 of them would do: the largest 500 000 sum to
    2 968 146.625. The sum of all 10**6 is above 2**21 and must round.
    """
    return torch.randint(0, 64, (n,), generator=torch.Generator().manual_seed(10)) / 8


def small_model() -> nn.Module:
    """The model of lessons 11 and 14: 16 inputs, 32 tanh units, one output; seed before calling."""
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))


def training_data() -> tuple[torch.Tensor, torch.Tensor]:
    """The 256 training samples of lesson 11: inputs (256, 16) and targets (256, 1)."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(256, 16, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def _batch(step: int, global_batch: int, rank: int = 0, world: int = 1):
    """Rank ``rank``'s equal slice of global batch number ``step`` (wrapping around the data)."""
    x, y = training_data()
    local = global_batch // world
    start = step * global_batch + rank * local
    idx = torch.arange(start, start + local) % len(x)
    return x[idx], y[idx]


def _flat_grad(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def _sgd_step(model: nn.Module, lr: float = 0.1) -> None:
    """Plain SGD, written out (``torch.optim.SGD`` would import ``torch._dynamo`` on first use)."""
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad


def single_process_training(steps: int = 8, global_batch: int = 48) -> list[torch.Tensor]:
    """The reference for :func:`ddp`: one process, the full global batch per step, plain SGD."""
    torch.manual_seed(0)
    model = small_model()
    for step in range(steps):
        x, y = _batch(step, global_batch)
        model.zero_grad()
        F.mse_loss(model(x), y).backward()
        _sgd_step(model)
    return [p.detach().clone() for p in model.parameters()]


# --- the experiments (run inside each rank) ------------------------------------------------------


def allreduce(rank: int, world: int) -> dict:
    """The same numbers summed by the first 1, 2, ... ranks; then every rank's vector, twice."""
    x = sum_data()
    totals = {}
    for size in range(1, world + 1):
        group = dist.new_group(list(range(size)))  # every rank takes part in creating each group
        if rank < size:
            total = x.chunk(size)[rank].sum()  # this rank's contiguous share
            dist.all_reduce(total, group=group)  # adds the shares; every rank receives the total
            totals[size] = total.item()
    vectors = torch.rand(world, 1000, generator=torch.Generator().manual_seed(1))
    mine = vectors[rank].clone()
    dist.all_reduce(mine)  # elementwise sum of every rank's vector
    shifted = torch.cat([torch.zeros(100), vectors[rank]])  # the same vector, 100 places further in
    dist.all_reduce(shifted)
    return {"totals": totals, "vector_sum": mine, "shifted_sum": shifted[100:]}


def gradients(rank: int, world: int, micro_batches: int = 2) -> dict:
    """One step of gradient accumulation with DDP: no all-reduce until the last micro-batch."""
    torch.manual_seed(0)  # the same initial weights on every rank
    model = nn.parallel.DistributedDataParallel(small_model())
    plain = copy.deepcopy(model.module)  # the same weights without DDP, for comparison
    x, y = _batch(step=0, global_batch=48, rank=rank, world=world)
    parts = list(zip(x.chunk(micro_batches), y.chunk(micro_batches)))
    with model.no_sync():  # backward passes only accumulate into .grad: no communication
        for xm, ym in parts[:-1]:
            (F.mse_loss(model(xm), ym) / micro_batches).backward()
    local = _flat_grad(model.module)
    xm, ym = parts[-1]
    (F.mse_loss(model(xm), ym) / micro_batches).backward()  # all-reduces the accumulated gradient
    for xm, ym in parts:
        (F.mse_loss(plain(xm), ym) / micro_batches).backward()
    return {"local": local, "accumulated": _flat_grad(plain), "synced": _flat_grad(model.module)}


def _train_ddp(rank: int, world: int, steps: int, global_batch: int, bucket_cap_mb) -> tuple:
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    model = nn.parallel.DistributedDataParallel(small_model(), bucket_cap_mb=bucket_cap_mb)
    for step in range(steps):
        x, y = _batch(step, global_batch, rank, world)  # this rank's slice of the global batch
        model.zero_grad()
        F.mse_loss(model(x), y).backward()  # DDP all-reduces and averages the gradients here
        _sgd_step(model)
    # bytes, once DDP has rebuilt its buckets after the first steps (absent before: None)
    buckets = model._get_ddp_logging_data().get("rebuilt_bucket_sizes")
    return [p.detach().clone() for p in model.module.parameters()], buckets


def ddp(rank: int, world: int, steps: int = 8, global_batch: int = 48) -> dict:
    """DDP training on equal slices of the global batches of :func:`single_process_training`.

    Trained twice: with the default buckets (25 MiB), and with ``bucket_cap_mb=0.0001`` (about
    100 bytes), which puts this model's four parameters into three buckets. The bucket sizes
    are None where DDP has not rebuilt its buckets yet (after two steps or fewer on one rank).
    """
    params, buckets = _train_ddp(rank, world, steps, global_batch, bucket_cap_mb=None)
    params_small, buckets_small = _train_ddp(rank, world, steps, global_batch, bucket_cap_mb=0.0001)
    return {
        "params": params,
        "bucket_bytes": buckets,
        "params_small_buckets": params_small,
        "small_bucket_bytes": buckets_small,
    }


def sharded_model(seed: int, mesh=None) -> nn.Module:
    """:func:`small_model` from ``seed``, each Linear and then the whole model sharded by FSDP2.

    Over every rank, or over the ranks of ``mesh`` (a ``DeviceMesh``).
    """
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(seed)
    model = small_model()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)  # one all-gather and one reduce-scatter per layer
    return fully_shard(model, mesh=mesh)


def _local_rows(model: nn.Module) -> dict[str, int]:
    return {name: p.to_local().shape[0] for name, p in model.state_dict().items()}


def fsdp(rank: int, world: int, steps: int = 8, global_batch: int = 48, save_to: str | None = None) -> dict:
    """FSDP2 (``fully_shard``) training as :func:`ddp` trains, on the same slices of the same batches.

    Every rank builds the model from seed 0, so every shard starts from the one model. Each rank
    holds a contiguous block of rows of every parameter (``_local_rows``). After training, the full
    parameters are gathered (``full_tensor``) and, with ``save_to``, the sharded state is saved with
    ``torch.distributed.checkpoint`` into that folder, each rank writing its own rows. Then the
    model is built again from seed ``rank`` (a different seed on each rank), to see what FSDP makes
    of that.
    """
    import torch.distributed.checkpoint as dcp

    model = sharded_model(seed=0)
    rows = _local_rows(model)
    for step in range(steps):
        x, y = _batch(step, global_batch, rank, world)
        model.zero_grad()
        F.mse_loss(model(x), y).backward()  # the reduce-scatter averages each gradient's rows here
        _sgd_step(model)
    params = [p.full_tensor().detach().clone() for p in model.parameters()]
    if save_to is not None:
        dcp.save(model.state_dict(), checkpoint_id=save_to)
    mixed = sharded_model(seed=rank)  # the same code, seeded per rank
    return {"rows": rows, "params": params, "per_rank_seed": [p.full_tensor() for p in mixed.parameters()]}


def dcp_load(rank: int, world: int, load_from: str, ranks: int = 2) -> dict:
    """The first ``ranks`` ranks, as a process group of their own, load what :func:`fsdp` saved.

    They shard a freshly built model (other weights, to be overwritten) over their own group, so
    each holds other rows than when the checkpoint was written; the other ranks only take part in
    creating the group. Runs in the same launch as :func:`fsdp`, which saves a second start.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import DeviceMesh

    group = dist.new_group(list(range(ranks)))  # every rank takes part in creating a group
    if rank >= ranks:
        return {}
    model = sharded_model(seed=rank + 100, mesh=DeviceMesh.from_group(group, "cpu"))
    state = model.state_dict()
    dcp.load(state, checkpoint_id=load_from, process_group=group)  # each rank reads the rows it holds now
    model.load_state_dict(state)
    params = [p.full_tensor().detach().clone() for p in model.parameters()]
    return {"rows": _local_rows(model), "params": params}


def load_in_one_process(model: nn.Module, folder: str) -> nn.Module:
    """Load a checkpoint that :func:`fsdp` saved on several ranks into a plain model, in this process.

    ``torch.distributed.checkpoint.load(..., no_dist=True)`` needs no process group; it warns that
    it assumes a single process, which is the intent here, so that one warning is silenced.
    """
    import warnings

    import torch.distributed.checkpoint as dcp

    state = model.state_dict()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled", category=UserWarning)
        dcp.load(state, checkpoint_id=folder, no_dist=True)
    model.load_state_dict(state)
    return model


def seeding(rank: int, world: int) -> dict:
    """Different seeds per rank, then DDP; a DistributedSampler over two epochs."""
    torch.manual_seed(100 + rank)  # deliberately different initial weights on each rank
    plain = small_model()
    before = [p.detach().clone() for p in plain.parameters()]
    wrapped = nn.parallel.DistributedDataParallel(plain)  # broadcasts rank 0's parameters
    after = [p.detach().clone() for p in wrapped.module.parameters()]
    sampler = torch.utils.data.DistributedSampler(
        range(12), num_replicas=world, rank=rank, shuffle=True, seed=0
    )
    epochs_without = [list(sampler) for _ in range(2)]
    epochs_with = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        epochs_with.append(list(sampler))
    return {
        "before": before,
        "after": after,
        "without_set_epoch": epochs_without,
        "with_set_epoch": epochs_with,
    }


def sync_batchnorm(rank: int, world: int) -> dict:
    """SyncBatchNorm in training mode on CPU tensors, inside a process group: the error, if any."""
    try:
        nn.SyncBatchNorm(4)(torch.randn(8, 4))
    except ValueError as exc:
        return {"error": f"ValueError: {exc}"}
    return {"error": None}


def fails(rank: int, world: int) -> dict:
    """Raises on the last rank: used to test that a failure is reported and cleaned up."""
    if rank == world - 1:
        raise RuntimeError(f"rank {rank} fails on purpose")
    dist.barrier()
    return {}


def hangs(rank: int, world: int) -> dict:
    """The last rank sleeps outside any collective: used to test :func:`run_ranks`'s deadline."""
    if rank == world - 1:
        time.sleep(3600)
    return {}


EXPERIMENTS = {
    "allreduce": allreduce,
    "gradients": gradients,
    "ddp": ddp,
    "fsdp": fsdp,
    "dcp_load": dcp_load,
    "seeding": seeding,
    "sync_batchnorm": sync_batchnorm,
    "fails": fails,
    "hangs": hangs,
}


# --- the launcher ---------------------------------------------------------------------------------


def _rank_main(rank: int, world: int, names: list[str], port: int, folder: str, args: dict) -> None:
    out = Path(folder)
    tempfile.tempdir = folder  # what this rank puts in the temporary directory lands in the run's folder
    log = open(out / f"rank{rank}.log", "w")  # kept open for the whole process
    os.dup2(log.fileno(), 1)  # everything the rank prints goes to its log, not to the notebook
    os.dup2(log.fileno(), 2)
    torch.set_num_threads(1)  # the ranks share the machine's cores, as torchrun arranges
    timeout = datetime.timedelta(seconds=60)
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timeout)  # the notebook's store
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
    try:
        results = {name: EXPERIMENTS[name](rank, world, **args.get(name, {})) for name in names}
        torch.save(results, out / f"rank{rank}.pt")
        dist.barrier()  # no rank tears down while another still talks to it
    except BaseException:
        traceback.print_exc()
        raise
    finally:
        dist.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        log.close()
    # Everything is saved and closed. Skip the interpreter's shutdown, which takes more than a
    # second once DistributedDataParallel has imported torch._dynamo.
    os._exit(0)


def _start(names: list[str], world: int, port: int, folder: str, args: dict):
    """Start the ranks; torch.multiprocessing's per-rank error files go into ``folder`` too."""
    saved = tempfile.tempdir
    tempfile.tempdir = folder  # start_processes names each rank's error file with tempfile
    try:
        return mp.start_processes(
            _rank_main, args=(world, names, port, folder, args), nprocs=world, join=False,
            start_method="spawn",
        )
    finally:
        tempfile.tempdir = saved


def _ignore_interrupts():
    """Ignore SIGINT while the ranks start; return the handler to put back, or None.

    A new process inherits an ignored signal (POSIX keeps ``SIG_IGN`` across ``exec``, and Python
    then installs no handler of its own), so the ranks never see Ctrl-C or Kernel > Interrupt,
    which Jupyter sends to the kernel's whole process group: :func:`run_ranks` stops them itself,
    quietly, and no rank prints a traceback. Only the main thread can change a signal's handler;
    elsewhere nothing changes. An interrupt during the few milliseconds of the start is lost;
    :func:`run_ranks` also ignores interrupts while it stops the ranks (see :func:`_stop`).
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(processes) -> None:
    """Terminate the ranks that are still running (SIGTERM, then SIGKILL), and reap them all.

    :func:`run_ranks` calls it with SIGINT ignored, so that a second interrupt cannot cut it short.
    """
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()


def _logs(folder: str, world: int) -> str:
    return "\n".join(
        f"--- rank {r} ---\n{(Path(folder) / f'rank{r}.log').read_text(errors='replace')[-2000:]}"
        for r in range(world)
        if (Path(folder) / f"rank{r}.log").exists()
    )


class UnknownExperimentError(KeyError):
    """:func:`run_ranks` was asked for an experiment :data:`EXPERIMENTS` does not have."""

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0]) if self.args else ""


def run_ranks(
    names: Sequence[str], world: int, timeout: float = 180.0, args: dict[str, dict] | None = None
) -> dict[str, dict[int, dict]]:
    """Run the experiments ``names`` in turn on ``world`` ranks (gloo, this machine), in one launch.

    Returns ``{name: {rank: result}}``. Raises ``RuntimeError`` with the ranks' logs if any rank
    fails, and ``TimeoutError`` if the ranks have not all finished after ``timeout`` seconds (a
    rank stuck outside a collective would otherwise wait forever). No process, file or port is
    left behind in any case. After an interrupt (Kernel > Interrupt, Ctrl-C) the ranks are
    stopped, one line says so, and a bare ``KeyboardInterrupt`` is raised (so that the kernel
    reports the interruption), with no traceback from the ranks or from the launch it cut short.
    A name that :data:`EXPERIMENTS` lacks raises ``UnknownExperimentError`` (a ``KeyError``)
    before any rank starts. ``args`` maps an experiment's name to keyword arguments for it
    (lesson 14 passes folders this way). Introduced in lesson 11.
    """
    unknown = [name for name in names if name not in EXPERIMENTS]
    if unknown:
        raise UnknownExperimentError(f"unknown experiment(s) {unknown!r}; known: {', '.join(EXPERIMENTS)}")
    with tempfile.TemporaryDirectory(prefix="ranks-") as folder:
        # The rendezvous: a key-value store the ranks connect to. Port 0 lets the operating system
        # pick a free port when the store binds it, so no other program can take it in between.
        store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
        context = None
        interrupted = False
        try:
            handler = _ignore_interrupts()
            try:
                context = _start(names, world, store.port, folder, args or {})
            finally:
                if handler is not None:
                    signal.signal(signal.SIGINT, handler)
            deadline = time.monotonic() + timeout
            # join() returns True once every rank has exited with 0; if one fails, it stops the
            # others and raises.
            while not context.join(timeout=max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"experiments {names} on {world} rank(s) did not finish within {timeout:g} s; "
                        f"the ranks were stopped. Their logs:\n{_logs(folder, world)}"
                    )
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as exc:  # a rank raised or died
            logs = _logs(folder, world)
            raise RuntimeError(f"experiments {names} failed on {world} rank(s):\n{logs}") from exc
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if context is not None:
                # nothing to do after a success; after anything else, needed. A second interrupt
                # (a learner pressing again) would cut the joins short with a long traceback:
                # interrupts are ignored until the ranks are stopped and reaped.
                handler = _ignore_interrupts()
                try:
                    _stop(context.processes)
                finally:
                    if handler is not None:
                        signal.signal(signal.SIGINT, handler)
            del store
        if not interrupted:
            results = {r: torch.load(Path(folder) / f"rank{r}.pt", weights_only=True) for r in range(world)}
    if interrupted:
        print(f"Interrupted: stopped the {world} ranks; no process or file is left behind.")
        raise KeyboardInterrupt from None
    return {name: {r: results[r][name] for r in range(world)} for name in names}


# --- computing in one process what the ranks computed ----------------------------------------------


def ring_allreduce(rows: torch.Tensor, max_segment_bytes: int = 1024 * 1024) -> torch.Tensor:
    """What gloo's ring all-reduce returns when rank ``r`` contributes ``rows[r]`` (1-D each).

    gloo (``gloo/allreduce.cc``, ``ring``) cuts the flat buffer into one chunk per rank (of whole
    segments of at most ``max_segment_bytes``, at least two segments per rank). The partial sum of
    chunk ``c`` starts at rank ``c - 1`` and travels down the ring, each rank adding its own
    values, until rank ``c`` adds the last ones: chunk 0 of 3 ranks is ``(v2 + v1) + v0``, chunk 1
    ``(v0 + v2) + v1``, chunk 2 ``(v1 + v0) + v2``. The same additions, in the same order, here.
    Introduced in lesson 11.
    """
    world, n = rows.shape
    if world == 1:
        return rows[0].clone()
    element = rows.element_size()
    per_segment = max(1, max_segment_bytes // element)
    segments = max(math.ceil(n / per_segment), 2 * world)
    segments = math.ceil(segments / world) * world  # the same number of segments for every rank
    chunk = math.ceil(n / segments) * (segments // world)  # elements per chunk
    out = torch.empty_like(rows[0])
    for c in range(world):
        lo, hi = c * chunk, min((c + 1) * chunk, n)
        if lo >= hi:
            continue
        partial = rows[(c - 1) % world, lo:hi].clone()
        for k in range(2, world + 1):
            partial = partial + rows[(c - k) % world, lo:hi]
        out[lo:hi] = partial
    return out


def sum_bound(n: int) -> float:
    """Worst-case relative error of any order of an ``n``-term float32 sum of positive numbers.

    The bound is ``inf`` from ``n = 2**24`` on, where it says nothing.
    """
    u = 2.0**-24
    return n * u / (1 - n * u) if n * u < 1 else math.inf

"""Bad input for helpers.determinism, moving, checkpoints, devices and inference gets a clear error.

Each public name is a ``Case`` (see ``tests/bad_inputs.py``): a call that works, and for each
parameter a strategy of bad values, each of which must be refused with a TypeError or ValueError,
raised by the helpers, naming the parameter. On top of the rule:

* a malformed RNG state (an ``RngSnapshot`` or the dict of ``RngSnapshot.state_dict()``) is
  refused naming the path to the broken part (``snapshot.python[1][5]``, ``state['numpy']['keys']``),
  and ``restore_rng`` leaves every global generator as it was when it refuses one;
* ``cuda_tagged_copy`` refuses bad paths before starting its subprocess (which these tests replace
  with one that fails the test if it is reached);
* ``move`` accepts any ``obj``: odd leaves pass through untouched, and the structures it cannot
  copy (a cycle, a container class it cannot rebuild) are refused naming where they are.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import random
import sys
from collections.abc import Mapping
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader

import helpers.checkpoints
from helpers.checkpoints import cuda_tagged_copy
from helpers.determinism import (
    NoisyDataset,
    RngSnapshot,
    deterministic_flags,
    deterministic_mode,
    philox_randn,
    restore_rng,
    resume_epoch,
    seed_everything,
    seed_worker,
    snapshot_rng,
)
from helpers.devices import best_device, module_devices
from helpers.inference import library_calls
from helpers.moving import Stray, check_one_device, move, stray_tensors, tensor_places
from tests.bad_inputs import (
    ANYTHING,
    JUNK,
    Case,
    _paths,
    _replace,
    same_value,
    anything_but,
    assert_clear_error,
    bad_device,
    bad_dtype,
    bad_int,
    bad_tensor,
    case_params,
    check_case,
    malformed,
    not_a_str,
    not_an_int,
    not_callable,
)

EXAMPLES = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
NOT_A_MODULE = anything_but(torch.nn.Module)


def named(fn, qualname: str):
    """``fn`` under a readable name for test ids and hypothesis reports."""
    fn.__qualname__ = qualname
    return fn


def _global_state() -> tuple:
    """The global generators' states, in a form ``==`` compares."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    cuda = [s.tolist() for s in torch.cuda.get_rng_state_all()] if torch.cuda.is_available() else []
    return (random.getstate(), (name, keys.tolist(), pos, has_gauss, cached),
            torch.get_rng_state().tolist(), cuda)


@pytest.fixture(autouse=True)
def _keep_the_global_generators():
    """Valid calls here seed or restore the global generators: put them back for the other tests."""
    saved = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
             torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
    yield
    random.setstate(saved[0])
    np.random.set_state(saved[1])
    torch.set_rng_state(saved[2])
    if saved[3] is not None:
        torch.cuda.set_rng_state_all(saved[3])


def other_snapshot() -> RngSnapshot:
    """A valid snapshot of a state the global generators are not in, made without touching them."""
    devices = range(torch.cuda.device_count()) if torch.cuda.is_available() else range(0)
    cuda = tuple(torch.Generator(device=f"cuda:{i}").manual_seed(7).get_state() for i in devices)
    return RngSnapshot(random.Random(7).getstate(), np.random.RandomState(7).get_state(),
                       torch.Generator().manual_seed(7).get_state(), cuda)


# ----------------------------------------------------------------------------- strategies

#: Junk that is wrong anywhere in an RNG state: ``JUNK`` without the ints and finite floats that
#: some places hold validly (a state word, a position, a cached Gaussian).
NEVER_VALID = JUNK.filter(
    lambda v: not (type(v) is int and 0 <= v < 2**32) and not (type(v) is float and math.isfinite(v))
)


def not_a_path() -> st.SearchStrategy:
    return st.one_of(anything_but(str), st.sampled_from(["", "a\x00b"]))


def unavailable_devices() -> list[str]:
    """Device names torch knows that this machine lacks."""
    names = ["cuda", "cuda:0", "cuda:7", "mps"]
    have_cuda, count = torch.cuda.is_available(), torch.cuda.device_count()
    have_mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()

    def lacks(name: str) -> bool:
        d = torch.device(name)
        if d.type == "mps":
            return not have_mps
        return not have_cuda or (d.index is not None and d.index >= count)

    return [n for n in names if lacks(n)] + other_unusable_devices()


def other_unusable_devices() -> list[str]:
    """Device types other than cuda/mps that torch knows but cannot use here (each fails its own way)."""
    found = []
    for name in ("xpu", "ipu", "lazy", "privateuseone", "hpu", "mtia", "xla"):
        try:
            torch.empty(0, device=name)
        except Exception:
            found.append(name)
    return found


def bad_move_device() -> st.SearchStrategy:
    """Device arguments ``move`` refuses (None is allowed when a dtype is given)."""
    return st.one_of(bad_device().filter(lambda v: v is not None), st.sampled_from(unavailable_devices()))


def bad_cublas_config() -> st.SearchStrategy:
    return st.one_of(
        anything_but(str, also=lambda v: v is None),
        st.sampled_from(["", "4096:8", ":4096", ":4096:8:", " :4096:8", ":a:b", ":4096:8 ", "CUBLAS"]),
        st.text(max_size=8).filter(lambda s: not s.startswith(":")),
    )


# ----------------------------------------------------------------------------- valid calls

_FILES: dict[str, object] = {}


@pytest.fixture(autouse=True, scope="module")
def _checkpoint_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checkpoints")
    torch.save({"weight": torch.arange(4.0)}, folder / "cpu.pt")
    _FILES.update(source=folder / "cpu.pt", target=folder / "tagged.pt")
    yield
    _FILES.clear()


def state_without_cuda() -> dict:
    """A valid state dict whose every part is wrong if deleted: with no CUDA states (which a state
    dict may lack, since the machine that restores it may have other devices)."""
    return {**other_snapshot().state_dict(), "torch_cuda": []}


def loader() -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    return DataLoader(NoisyDataset(length=8), batch_size=2, shuffle=True, generator=generator)


def noisy_item(i):
    return NoisyDataset(length=4)[i]


class Bag(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)
        self.offset = torch.zeros(2)  # a stray tensor


CASES = [
    # determinism
    Case(seed_everything, lambda: dict(seed=0), {"seed": bad_int(min=0, max=2**32 - 1)}),
    Case(
        deterministic_mode,
        lambda: dict(warn_only=False, cublas_workspace_config=None),
        {"warn_only": anything_but(bool), "cublas_workspace_config": bad_cublas_config()},
    ),
    Case(seed_worker, lambda: dict(worker_id=0), {"worker_id": bad_int(min=0)}),
    Case(NoisyDataset, lambda: dict(length=8, seed=0), {"length": bad_int(min=0), "seed": bad_int(min=0)}),
    Case(named(noisy_item, "NoisyDataset.__getitem__"), lambda: dict(i=1), {"i": not_an_int()},
         names={"i": "i (the index)"}),
    Case(
        restore_rng,
        lambda: dict(snapshot=snapshot_rng()),
        {"snapshot": st.one_of(anything_but(RngSnapshot), malformed(other_snapshot, junk=NEVER_VALID))},
    ),
    Case(
        RngSnapshot.from_state_dict,
        lambda: dict(state=snapshot_rng().state_dict()),
        {"state": st.one_of(ANYTHING, malformed(state_without_cuda, junk=NEVER_VALID))},
    ),
    Case(
        resume_epoch,
        lambda: dict(
            loader=loader(), epoch_start_state=torch.Generator().get_state(), batches_done=1, rng=None
        ),
        {
            "loader": anything_but(DataLoader),
            "epoch_start_state": st.one_of(
                bad_tensor([torch.uint8]),
                st.sampled_from([torch.zeros(5056, dtype=torch.uint8),  # the right size, not a valid state
                                 torch.zeros(16, dtype=torch.uint8),    # a CUDA generator's size
                                 torch.zeros(2, 5056, dtype=torch.uint8)]),
            ),
            "batches_done": st.one_of(bad_int(min=0), st.integers(5, 2**70)),  # 4 batches per epoch
            "rng": st.one_of(anything_but(RngSnapshot, also=lambda v: v is None),
                             malformed(other_snapshot, junk=NEVER_VALID)),
        },
    ),
    Case(
        philox_randn,
        lambda: dict(n=3, seed=10),
        {"n": bad_int(min=1, max=256), "seed": bad_int(min=0, max=2**64 - 1)},
    ),
    # moving
    Case(
        move,
        lambda: dict(obj={"x": torch.ones(2), "n": [1, torch.arange(2)]}, device="cpu", dtype=torch.float64),
        {"device": bad_move_device(), "dtype": bad_dtype(FLOATS).filter(lambda v: v is not None)},
    ),
    Case(
        Stray,
        lambda: dict(name="offset", device=torch.device("cpu")),
        {"name": not_a_str(), "device": bad_device()},
    ),
    Case(stray_tensors, lambda: dict(module=Bag()), {"module": NOT_A_MODULE}),
    Case(check_one_device, lambda: dict(module=torch.nn.Linear(2, 2)), {"module": NOT_A_MODULE}),
    Case(
        tensor_places,
        lambda: dict(module=torch.nn.Linear(2, 2), title="t"),
        {"module": NOT_A_MODULE, "title": not_a_str()},
    ),
    # checkpoints
    Case(
        cuda_tagged_copy,
        lambda: dict(source=_FILES["source"], target=_FILES["target"]),
        {"source": not_a_path(), "target": not_a_path()},
    ),
    # devices
    Case(
        best_device,
        lambda: dict(prefer="cpu"),
        {"prefer": st.one_of(bad_device().filter(lambda v: v is not None),
                             st.sampled_from(["meta", "xla", "hpu", *unavailable_devices()]))},
    ),
    Case(module_devices, lambda: dict(module=torch.nn.Linear(2, 2)), {"module": NOT_A_MODULE}),
    # inference
    Case(library_calls, lambda: dict(fn=lambda: torch.ones(2) @ torch.ones(2)), {"fn": not_callable()}),
]


def test_valid_calls_work():
    for case in CASES:
        case.fn(**case.valid())


@pytest.mark.parametrize("case, param", case_params(CASES))
@given(data=st.data())
@EXAMPLES
def test_bad_input_gets_a_clear_error(case, param, data):
    # cuda_tagged_copy's subprocess is the expensive part: a refused argument must not reach it
    with mock.patch.object(helpers.checkpoints, "subprocess") as subprocess:
        subprocess.run.side_effect = AssertionError("the subprocess started before the checks")
        check_case(case, param, data)


# ----------------------------------------------------------------------------- RNG states: where the fault is


def _leaf_is_valid(path: tuple, value: object) -> bool:
    """Whether ``value`` would be valid at ``path`` of an RNG state (snapshot or dict form)."""
    plain_int = type(value) is int
    finite_float = isinstance(value, float) and math.isfinite(value)
    field, rest = path[0], path[1:]
    if field == "python":
        if rest == (0,):
            return plain_int and value == 3
        if len(rest) == 2 and rest[0] == 1:
            return plain_int and 0 <= value <= (624 if rest[1] == 624 else 2**32 - 1)
        if rest == (2,):
            return value is None or finite_float
    if field == "numpy":
        if rest in ((2,), ("pos",)):
            return plain_int and 0 <= value <= 624
        if rest in ((3,), ("has_gauss",)):
            return plain_int and value in (0, 1)
        if rest in ((4,), ("cached_gaussian",)):
            return finite_float
    return False


def _name(form: str, path: tuple) -> str:
    """How an error names ``path``: ``snapshot.numpy[1]`` or ``state['numpy']['keys']``."""
    if form == "snapshot":
        return f"snapshot.{path[0]}" + "".join(f"[{k!r}]" for k in path[1:]) if path else "snapshot"
    return "state" + "".join(f"[{k!r}]" for k in path)


def _parent_of(obj: object, path: tuple) -> object:
    for key in path:
        obj = getattr(obj, key) if dataclasses.is_dataclass(obj) else obj[key]
    return obj


@st.composite
def broken_rng_state(draw, form: str) -> tuple[object, str]:
    """An RNG state with one part broken, and the name its error must contain.

    The part is replaced by junk that is not valid there, deleted (from a tuple, list or dict), or
    an unknown key is added to a dict.
    """
    valid = other_snapshot() if form == "snapshot" else other_snapshot().state_dict()
    groups: dict[tuple, list[tuple]] = {}  # the 625 paths python[1][i] as one group, to test all parts
    for path in _paths(valid):
        groups.setdefault(path if len(path) <= 2 else (*path[:2], "*"), []).append(path)
    path = draw(st.sampled_from(sorted(groups, key=str)).flatmap(lambda g: st.sampled_from(groups[g])))
    parent = _parent_of(valid, path[:-1])
    # a state dict may hold fewer CUDA states than this machine has devices (see the test below)
    cuda_list = form == "state" and path[:-1] == ("torch_cuda",)
    deletable = isinstance(parent, (tuple, list, Mapping)) and not cuda_list
    actions = ["replace"] + (["delete"] if deletable else [])
    if isinstance(parent, Mapping):
        actions.append("extra")
    action = draw(st.sampled_from(actions))
    if action == "extra":
        key = draw(st.text(min_size=1, max_size=6).filter(lambda k: k not in parent))
        new_parent = {**parent, key: draw(JUNK)}
        broken = _replace(valid, path[:-1], new_parent, delete=False) if path[:-1] else new_parent
        return broken, _name(form, path[:-1])
    if action == "delete":
        return _replace(valid, path, None, delete=True), _name(form, path[:-1])
    original = _parent_of(valid, path)
    junk = JUNK.filter(lambda v: not _leaf_is_valid(path, v) and not same_value(v, original))
    return _replace(valid, path, draw(junk), delete=False), _name(form, path)


@given(broken=broken_rng_state("snapshot"))
@EXAMPLES
def test_a_malformed_snapshot_names_the_broken_part_and_changes_no_generator(broken):
    snapshot, name = broken
    seed_everything(123)
    before = _global_state()
    assert_clear_error(lambda: restore_rng(snapshot), name)
    assert _global_state() == before


@given(broken=broken_rng_state("state"))
@EXAMPLES
def test_a_malformed_state_dict_names_the_broken_part(broken):
    state, name = broken
    assert_clear_error(lambda: RngSnapshot.from_state_dict(state), name)


def test_rng_examples_name_the_field():
    good = other_snapshot()
    cases = {
        "snapshot.torch_cpu": [torch.zeros(5056, dtype=torch.int64), torch.zeros(10, dtype=torch.uint8),
                               torch.zeros(5056, dtype=torch.uint8), torch.zeros(2, 2528, dtype=torch.uint8)],
        "snapshot.torch_cuda": [[], None, (torch.zeros(16, dtype=torch.uint8),) * 9],
        "snapshot.python": [[3, good.python[1], None], (3, good.python[1])],
        "snapshot.python[0]": [(2, good.python[1], None)],
        "snapshot.python[2]": [(3, good.python[1], 1), (3, good.python[1], math.nan)],
        "snapshot.numpy[1]": [("MT19937", good.numpy[1].astype(np.int64), *good.numpy[2:]),
                              ("MT19937", good.numpy[1][:10], *good.numpy[2:])],
        "snapshot.numpy[2]": [("MT19937", good.numpy[1], 625, 0, 0.0),
                              ("MT19937", good.numpy[1], 5.0, 0, 0.0)],
    }
    for name, values in cases.items():
        field = name.split(".")[1].split("[")[0]
        for value in values:
            broken = dataclasses.replace(good, **{field: value})
            assert_clear_error(lambda broken=broken: restore_rng(broken), name)
    assert "CUDA generator states" in str(assert_clear_error(
        lambda: restore_rng(dataclasses.replace(good, torch_cuda=good.torch_cuda + (good.torch_cpu,))),
        "snapshot.torch_cuda"))
    state = good.state_dict()
    with pytest.raises(KeyError, match="missing 'numpy'"):  # a KeyError, as before these checks ...
        RngSnapshot.from_state_dict({k: v for k, v in state.items() if k != "numpy"})
    assert_clear_error(  # ... and a ValueError too
        lambda: RngSnapshot.from_state_dict({k: v for k, v in state.items() if k != "numpy"}), "state")
    assert_clear_error(lambda: RngSnapshot.from_state_dict({**state, "extra": 1}), "state")
    keys = state["numpy"]["keys"].clone()
    keys[3] = 2**32
    assert_clear_error(
        lambda: RngSnapshot.from_state_dict({**state, "numpy": {**state["numpy"], "keys": keys}}),
        "state['numpy']['keys']")
    assert_clear_error(lambda: dataclasses.replace(good, numpy=None).state_dict(), "snapshot.numpy")


def test_a_checkpoint_from_a_machine_with_other_devices_still_reads():
    state = other_snapshot().state_dict()
    state["torch_cuda"] = [torch.zeros(16, dtype=torch.uint8)] * 3  # three CUDA devices there
    snapshot = RngSnapshot.from_state_dict(state)                  # read anywhere ...
    if torch.cuda.device_count() != 3:
        assert_clear_error(lambda: restore_rng(snapshot), "snapshot.torch_cuda")  # ... restored where it fits


def test_a_valid_snapshot_round_trips_exactly():
    snap = other_snapshot()
    restore_rng(RngSnapshot.from_state_dict(snap.state_dict()))
    assert random.random() == random.Random(7).random()
    assert np.random.rand() == np.random.RandomState(7).rand()
    assert torch.equal(torch.rand(3), torch.rand(3, generator=torch.Generator().manual_seed(7)))


def test_restore_rng_puts_everything_back_if_a_setter_fails_anyway(monkeypatch):
    seed_everything(5)
    before = _global_state()

    def failing(state):
        raise RuntimeError("a failure the checks did not foresee")

    monkeypatch.setattr(torch, "set_rng_state", failing)
    with pytest.raises(RuntimeError, match="did not foresee"):
        restore_rng(other_snapshot())  # python's and numpy's generators were set before the failure
    monkeypatch.undo()
    assert _global_state() == before


# ----------------------------------------------------------------------------- other determinism examples


def test_seed_everything_range():
    for seed in (0, 2**32 - 1):
        assert seed_everything(seed)["random"] == seed
    for bad in (-1, 2**32):
        assert_clear_error(lambda bad=bad: seed_everything(bad), "seed")
    with pytest.raises(TypeError, match="seed"):
        seed_everything(np.int64(3))  # an int only, as documented


def test_deterministic_mode_refuses_bad_arguments_before_the_block_starts():
    flags = deterministic_flags()
    assert_clear_error(lambda: deterministic_mode(warn_only=1), "warn_only")
    assert_clear_error(
        lambda: deterministic_mode(cublas_workspace_config="4096:8"), "cublas_workspace_config"
    )
    assert deterministic_flags() == flags


META_INT = torch.tensor(1, device="meta")  # a 0-d integer tensor that holds no value


def test_a_meta_int_is_refused_naming_the_parameter():
    assert_clear_error(lambda: seed_worker(META_INT), "worker_id")
    assert_clear_error(lambda: NoisyDataset(META_INT), "length")
    assert_clear_error(lambda: NoisyDataset(8, META_INT), "seed")
    assert_clear_error(lambda: NoisyDataset(4)[META_INT], "i (the index)")
    state = state_without_cuda()
    assert_clear_error(lambda: RngSnapshot.from_state_dict(
        {**state, "numpy": {**state["numpy"], "pos": META_INT}}), "state['numpy']['pos']")
    assert_clear_error(lambda: resume_epoch(loader(), torch.Generator().get_state(), META_INT), "batches_done")


def test_noisy_dataset_length_fits_len():
    assert len(NoisyDataset(sys.maxsize)) == sys.maxsize  # the largest length len() can return
    assert_clear_error(lambda: NoisyDataset(2**63), "length")


def test_sparse_states_are_refused_naming_the_path():
    state = state_without_cuda()
    sparse_keys = {**state, "numpy": {**state["numpy"], "keys": state["numpy"]["keys"].to_sparse()}}
    assert_clear_error(lambda: RngSnapshot.from_state_dict(sparse_keys), "state['numpy']['keys']")
    sparse_cpu = {**state, "torch_cpu": state["torch_cpu"].to_sparse()}
    assert_clear_error(lambda: RngSnapshot.from_state_dict(sparse_cpu), "state['torch_cpu']")
    good = other_snapshot()
    assert_clear_error(lambda: restore_rng(dataclasses.replace(good, torch_cpu=good.torch_cpu.to_sparse())),
                       "snapshot.torch_cpu")
    assert_clear_error(lambda: resume_epoch(loader(), torch.Generator().get_state().to_sparse(), 0),
                       "epoch_start_state")


def test_an_all_zero_mersenne_twister_state_is_refused():
    good = other_snapshot()
    zero_words = (3, (0,) * 624 + (624,), None)
    top_bit_only_clear = (3, (0x7FFF_FFFF,) + (0,) * 623 + (624,), None)  # still only zeros after a twist
    for python in (zero_words, top_bit_only_clear):
        assert_clear_error(lambda python=python: restore_rng(dataclasses.replace(good, python=python)),
                           "snapshot.python[1]")
    zero_keys = ("MT19937", np.zeros(624, np.uint32), 624, 0, 0.0)
    assert_clear_error(lambda: restore_rng(dataclasses.replace(good, numpy=zero_keys)), "snapshot.numpy[1]")
    state = good.state_dict()
    assert_clear_error(lambda: RngSnapshot.from_state_dict({**state, "python": zero_words}), "state['python'][1]")
    zero = {**state, "numpy": {**state["numpy"], "keys": torch.zeros(624, dtype=torch.int64)}}
    assert_clear_error(lambda: RngSnapshot.from_state_dict(zero), "state['numpy']['keys']")
    # a state with only the top bit of word 0 set is not degenerate (CPython's seeding makes it)
    nearly = (3, (0x8000_0000,) + (0,) * 623 + (624,), None)
    restore_rng(dataclasses.replace(good, python=nearly))
    assert random.random() != 0.0


def test_noisy_dataset_indices():
    data = NoisyDataset(length=3)
    assert torch.equal(data[np.int64(2)][0], data[2][0])  # NumPy ints index as ints do
    with pytest.raises(IndexError, match="out of range for a NoisyDataset of length 3"):
        data[3]
    with pytest.raises(IndexError):
        data[-1]
    assert list(NoisyDataset(length=0)) == []


def test_resume_epoch_refuses_before_it_changes_anything():
    dl = loader()
    generator_state = dl.generator.get_state()
    seed_everything(9)
    before = _global_state()
    bad_rng = dataclasses.replace(other_snapshot(), torch_cpu=torch.zeros(5056, dtype=torch.uint8))
    assert_clear_error(lambda: resume_epoch(dl, torch.Generator().get_state(), 2, bad_rng), "rng.torch_cpu")
    assert torch.equal(dl.generator.get_state(), generator_state) and _global_state() == before
    with pytest.raises(ValueError, match="batches_done"):
        resume_epoch(dl, torch.Generator().get_state(), 5)


def test_resume_epoch_shows_lesson_05_its_own_source():
    source = inspect.getsource(resume_epoch)  # lesson 05 prints it: the checks live in a wrapper
    assert source.startswith("def resume_epoch(")
    assert "loader.generator.set_state(epoch_start_state)" in source
    parameters = list(inspect.signature(resume_epoch).parameters)
    assert parameters == ["loader", "epoch_start_state", "batches_done", "rng"]
    assert "checked before anything changes" in resume_epoch.__doc__


# ----------------------------------------------------------------------------- move: any obj


@dataclasses.dataclass
class Pair:
    left: object
    right: object


LEAVES = st.one_of(
    ANYTHING.filter(lambda v: not isinstance(v, (list, tuple, dict, torch.Tensor))),
    st.builds(torch.randn, st.integers(0, 3)),
    st.builds(lambda n: torch.arange(n), st.integers(0, 3)),
    st.just(frozenset({1})),
    st.just(range(3)),
    st.just("text"),
)
STRUCTURES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
        st.builds(Pair, inner, inner),
    ),
    max_leaves=8,
)


def _check_moved(original: object, moved: object) -> None:
    if isinstance(original, torch.Tensor):
        assert moved.device.type == "meta"
        assert moved.dtype == (torch.float64 if original.is_floating_point() else original.dtype)
    elif isinstance(original, (list, tuple, dict, Pair)):
        assert type(moved) is type(original)
        if isinstance(original, dict):
            assert list(moved) == list(original)
            for k in original:
                _check_moved(original[k], moved[k])
        elif isinstance(original, Pair):
            _check_moved(original.left, moved.left)
            _check_moved(original.right, moved.right)
        else:
            assert len(moved) == len(original)
            for a, b in zip(original, moved, strict=True):
                _check_moved(a, b)
    else:
        assert moved is original  # an unknown leaf passes through untouched


@given(obj=STRUCTURES)
@EXAMPLES
def test_move_accepts_any_obj_and_passes_unknown_leaves_through(obj):
    _check_moved(obj, move(obj, "meta", torch.float64))


def test_move_names_what_it_cannot_copy():
    loop: list = [torch.ones(1)]
    loop.append({"again": loop})
    assert_clear_error(lambda: move(loop, "meta"), "obj[1]['again']")

    class Stubborn(list):
        def __init__(self, a, b):
            super().__init__([a, b])

    assert_clear_error(lambda: move({"x": Stubborn(torch.ones(1), 2)}, "meta"), "obj['x']")
    assert_clear_error(lambda: move(torch.ones(1)), "device")  # neither a device nor a dtype


def test_move_refuses_devices_this_torch_cannot_use():
    for name in other_unusable_devices():
        assert_clear_error(lambda name=name: move(torch.ones(1), name), "device")
    assert move(torch.ones(1), "meta").device.type == "meta"


def test_move_refuses_a_structure_nested_too_deeply():
    deep: list = []
    inner = deep
    for _ in range(20_000):
        inner.append([])
        inner = inner[0]
    error = assert_clear_error(lambda: move(deep, "cpu"), "obj")
    assert "nested too deeply" in str(error)
    assert len(move([[[[torch.ones(1)]]]], "meta")[0][0][0]) == 1  # ordinary nesting still works


def test_stray_search_survives_a_list_that_holds_itself():
    bag = Bag()
    loop: list = [torch.ones(1)]
    loop.append(loop)
    bag.cache = loop
    assert [s.name for s in stray_tensors(bag)] == ["offset", "cache[0]"]
    assert check_one_device(bag) == torch.device("cpu")
    assert "linear.weight" in str(tensor_places(bag))
    deep: list = []
    inner = deep
    for _ in range(20_000):
        inner.append([])
        inner = inner[0]
    bag.deep = deep
    assert_clear_error(lambda: stray_tensors(bag), "deep")


def test_move_and_stray_keep_their_results():
    t = torch.ones(2)
    assert move(t, torch.device("cpu")) is t and move([t], "cpu")[0] is t
    assert Stray("x", "cpu").device == torch.device("cpu")


# ----------------------------------------------------------------------------- checkpoints


def test_cuda_tagged_copy_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"source: no checkpoint at .*absent\.pt"):
        cuda_tagged_copy(tmp_path / "absent.pt", tmp_path / "out.pt")
    with pytest.raises(FileNotFoundError, match="target"):
        cuda_tagged_copy(_FILES["source"], tmp_path / "no" / "such" / "folder.pt")
    assert_clear_error(lambda: cuda_tagged_copy(_FILES["source"], tmp_path), "target")
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    notes, out = tmp_path / "notes.txt", tmp_path / "out.pt"
    error = assert_clear_error(lambda: cuda_tagged_copy(notes, out), "source")
    assert "torch.load" in str(error) and not out.exists()


def test_cuda_tagged_copy_refuses_targets_it_cannot_or_must_not_write(tmp_path):
    source = tmp_path / "cpu.pt"
    torch.save({"w": torch.ones(2)}, source)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link.pt").symlink_to(source)
    os.link(source, tmp_path / "hard.pt")
    refused_before_the_subprocess = {
        "target": [source, str(source), tmp_path / "." / "cpu.pt", tmp_path / "link.pt", tmp_path / "hard.pt",
                   "/dev/null", tmp_path / "fifo", tmp_path / ("x" * 5000)],
    }
    with mock.patch.object(helpers.checkpoints, "subprocess") as subprocess:
        subprocess.run.side_effect = AssertionError("the subprocess started before the checks")
        for target in refused_before_the_subprocess["target"]:
            assert_clear_error(lambda target=target: cuda_tagged_copy(source, target), "target")
        assert_clear_error(lambda: cuda_tagged_copy(tmp_path / ("x" * 5000), tmp_path / "out.pt"), "source")
    assert torch.load(source, weights_only=True)["w"].device.type == "cpu"  # not overwritten
    if sys.platform.startswith("linux"):  # a folder where no file can be created: refused after trying
        assert_clear_error(lambda: cuda_tagged_copy(source, "/proc/x.pt"), "target")


# ----------------------------------------------------------------------------- devices, inference


def test_best_device_names_prefer():
    for bad in ("gpu", "xla", *unavailable_devices()):
        assert_clear_error(lambda bad=bad: best_device(bad), "prefer")
    assert best_device(None) == best_device()


def test_library_calls_refuses_before_redirecting_output():
    with mock.patch("helpers.inference.os.dup2", side_effect=AssertionError("redirected")):
        assert_clear_error(lambda: library_calls(3), "fn")

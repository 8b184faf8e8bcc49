"""The symptom index (``notebooks/appendix/symptoms.ipynb``) quotes what PyTorch really prints.

Each entry for a message is a markdown cell whose id is ``msg-<key>``; the message sits in a
fenced block marked ``text``, where ``…`` stands for a part left out (a class name, a device).
For each key, ``PRODUCED`` holds a function that provokes the message on the CPU with the
installed torch and returns every text it printed (error messages and warnings); each quoted
piece must occur in one of them, in order. The two messages a CPU cannot produce (a GPU-only check
of older releases, and a message of PyTorch Lightning) are in ``QUOTED``: their entries must say
where the text is quoted from. A message only a GPU prints but whose words torch's CPU library
holds sits in a blockquote of one code span (``> `...` ``): its pieces between the type names must be
in ``libtorch_cpu.so``. Entries for symptoms without a message have ids ``sym-<key>``; a message
quoted in one of them must be produced by ``PRODUCED_IN_SYMPTOMS``.
Every entry names its cause, its fix and a lesson section, and every link to a section must
name a heading that exists.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import pickle
import re
import warnings
from pathlib import Path
from unittest import mock

import pytest
import torch
import torch.serialization as ser

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "notebooks" / "appendix" / "symptoms.ipynb"
CELLS = json.loads(PAGE.read_text(encoding="utf-8"))["cells"]
QUOTE = re.compile(r"^```text\n(.*?)\n```", re.S | re.M)
# a link to a lesson section; an anchor may hold a parenthesis pair, as "(Optional)-..." does
LINK = re.compile(r"\]\(\.\./(\d\d_[a-z0-9_]+\.ipynb)#((?:[^()\s]|\([^()\s]*\))+)\)")
LIBRARY_QUOTE = re.compile(r"^> `([^`]+)`$", re.M)


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def entries(prefix: str) -> dict[str, str]:
    return {c["id"][len(prefix) :]: source(c) for c in CELLS if c.get("id", "").startswith(prefix)}


MESSAGES = entries("msg-")
SYMPTOMS = entries("sym-")


def squeeze(text: str) -> str:
    return " ".join(text.split())


# --- provoking each message on the CPU ----------------------------------------------------------


def same_device() -> list[str]:
    # fake tensors carry a CUDA device without a GPU; the binary holds the same words for real ones
    from torch._subclasses.fake_tensor import FakeTensorMode

    texts = []
    try:
        with FakeTensorMode():
            torch.ones(2, device="cuda") + torch.ones(2)
    except RuntimeError as err:
        texts.append(str(err))
    try:
        torch.nn.Linear(3, 3)(torch.ones(1, 3, device="meta"))
    except RuntimeError as err:
        texts.append(str(err))
    return texts


def optimizer_step() -> list[str]:
    """The dtype messages of Adam's step after ``model.double()``, plain and fused.

    The same-device message the entry quotes first is user-reported from ``optimizer.step()`` on a
    GPU; a CPU cannot provoke it there (Adam steps silently after ``model.to("meta")``), so only its
    words are checked, against the same-device error of ``same_device``.
    """
    texts = same_device()[:1]
    for options in ({"foreach": False}, {"fused": True}):
        model = torch.nn.Linear(3, 2)
        optimizer = torch.optim.Adam(model.parameters(), **options)
        for dtype in (torch.float32, torch.float64):  # a step, a move (to float64), a step
            model.to(dtype)
            optimizer.zero_grad()
            model(torch.ones(4, 3, dtype=dtype)).sum().backward()
            try:
                optimizer.step()
            except RuntimeError as err:
                texts.append(str(err))
    return texts


def cuda_tagged_checkpoint(tag: str) -> io.BytesIO:
    """A checkpoint whose storages say ``tag``, as if saved from that GPU."""
    buffer, registry = io.BytesIO(), list(ser._package_registry)
    try:
        ser.register_package(0, lambda s: tag if s.device.type == "cpu" else None, lambda s, loc: None)
        torch.save({"weight": torch.ones(2)}, buffer)
    finally:
        ser._package_registry[:] = registry
    buffer.seek(0)
    return buffer


def cuda_deserialize() -> list[str]:
    texts = []
    try:
        torch.load(cuda_tagged_checkpoint("cuda:0"))
    except RuntimeError as err:
        texts.append(str(err))
    # a machine with one GPU and a file from the second: torch.cuda says one device is there
    with (
        mock.patch.object(torch.cuda, "is_available", lambda: True),
        mock.patch.object(torch.cuda, "device_count", lambda: 1),
    ):
        try:
            torch.load(cuda_tagged_checkpoint("cuda:1"))
        except RuntimeError as err:
            texts.append(str(err))
    return texts


@dataclasses.dataclass
class TrainConfig:
    lr: float = 0.01


def weights_only() -> list[str]:
    buffer = io.BytesIO()
    torch.save({"config": TrainConfig()}, buffer)
    buffer.seek(0)
    try:
        torch.load(buffer)
    except pickle.UnpicklingError as err:
        return [str(err)]
    return []


def state_dict_prefix() -> list[str]:
    model = torch.nn.Linear(4, 2)
    try:
        model.load_state_dict({"module." + k: v for k, v in model.state_dict().items()})
    except RuntimeError as err:
        return [str(err)]
    return []


def deterministic() -> list[str]:
    texts = []
    try:
        for warn_only in (False, True):
            torch.use_deterministic_algorithms(True, warn_only=warn_only)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    torch.zeros(3).put_(torch.tensor([0, 0]), torch.ones(2))
                except RuntimeError as err:
                    texts.append(str(err))
            texts += [str(w.message) for w in caught]
    finally:
        torch.use_deterministic_algorithms(False)
    return texts


def tf32_mix() -> list[str]:
    from helpers import matmul_precision

    with matmul_precision("highest"):  # puts every precision setting back afterwards
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        texts = []
        for read in (lambda: torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision):
            try:
                read()  # reading through an old getter raises
            except RuntimeError as err:
                texts.append(str(err))
    return texts


def test_the_old_setter_puts_both_apis_in_agreement_as_the_tf32_fix_says():
    from helpers import matmul_precision

    for level, tf32 in (("high", True), ("highest", False)):
        with matmul_precision("highest"):
            torch.backends.cuda.matmul.fp32_precision = "tf32"
            torch.set_float32_matmul_precision(level)
            assert torch.backends.cuda.matmul.allow_tf32 is tf32
            assert torch.get_float32_matmul_precision() == level


def batchnorm_single() -> list[str]:
    try:
        torch.nn.BatchNorm1d(4).train()(torch.ones(1, 4))
    except ValueError as err:
        return [str(err)]
    return []


def assert_close() -> list[str]:
    try:
        torch.testing.assert_close(torch.tensor([1.0]), torch.tensor([1.001]))
    except AssertionError as err:
        return [str(err)]
    return []


PRODUCED = {
    "same-device": same_device,
    "optimizer-step": optimizer_step,
    "cuda-deserialize": cuda_deserialize,
    "weights-only": weights_only,
    "state-dict-prefix": state_dict_prefix,
    "deterministic": deterministic,
    "tf32-mix": tf32_mix,
    "assert-close": assert_close,
}
PRODUCED_IN_SYMPTOMS = {"loaded-nonsense": batchnorm_single}
# entries whose text no CPU run of this torch prints, and the words that say so on the page
QUOTED = {"cublas-workspace": "GPU only", "tensor-cores": "PyTorch Lightning"}


@functools.cache
def cpu_library() -> bytes:
    return (Path(torch.__file__).parent / "lib" / "libtorch_cpu.so").read_bytes()


def pieces(quote: str) -> list[str]:
    return [squeeze(p) for p in quote.split("…") if p.strip()]


def test_every_message_entry_is_produced_here_or_says_where_it_is_quoted_from():
    assert MESSAGES and set(MESSAGES) == set(PRODUCED) | set(QUOTED), sorted(MESSAGES)
    for key, text in MESSAGES.items():
        assert QUOTE.search(text), f"msg-{key}: no ```text block with the message"
    for key, label in QUOTED.items():
        text = MESSAGES[key]
        assert label in text and "quoted from" in text and "https://github.com/" in text, key


@pytest.mark.parametrize("key", sorted(PRODUCED) + [f"sym-{k}" for k in sorted(PRODUCED_IN_SYMPTOMS)])
def test_the_quoted_message_is_what_torch_prints(key):
    if key.startswith("sym-"):
        produce, text = PRODUCED_IN_SYMPTOMS[key[4:]], SYMPTOMS[key[4:]]
    else:
        produce, text = PRODUCED[key], MESSAGES[key]
    printed = [squeeze(t) for t in produce()]
    assert printed, f"{key}: nothing was raised or warned"
    for quote in QUOTE.findall(text):
        wanted = pieces(quote)
        found = False
        for text in printed:
            at = 0
            for piece in wanted:
                at = text.find(piece, at)
                if at < 0:
                    break
                at += len(piece)
            found = found or at >= 0
        assert found, f"{key}: {wanted} not in what torch printed: {printed}"


@pytest.mark.skipif(
    not (Path(torch.__file__).parent / "lib" / "libtorch_cpu.so").exists(), reason="no libtorch_cpu.so"
)
def test_the_library_holds_the_real_same_device_message_and_no_cublas_check():
    # the same-device text above comes from fake tensors; the real check's words are in the binary
    assert b"Expected all tensors to be on the same device, but found at least two devices, " in cpu_library()
    # the page says this torch no longer checks CUBLAS_WORKSPACE_CONFIG (the check lived in Context.cpp)
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if version >= (2, 13):
        assert b"CUBLAS_WORKSPACE_CONFIG" not in cpu_library()


def test_every_message_quoted_in_a_symptom_entry_is_produced():
    quoting = {key for key, text in SYMPTOMS.items() if QUOTE.search(text)}
    assert quoting == set(PRODUCED_IN_SYMPTOMS), sorted(quoting)


@pytest.mark.skipif(
    not (Path(torch.__file__).parent / "lib" / "libtorch_cpu.so").exists(), reason="no libtorch_cpu.so"
)
def test_the_gpu_only_convolution_message_is_in_the_cpu_library():
    quotes = [q for text in MESSAGES.values() for q in LIBRARY_QUOTE.findall(text)]
    assert quotes and "GPU only" in MESSAGES["same-device"], "the convolution's form of the same-device error"
    for quote in quotes:
        parts = [p for p in re.split(r"torch\.(?:cuda\.)?[A-Za-z]+Tensor", quote) if p]
        assert len(parts) >= 2, quote
        missing = [p for p in parts if p.encode() not in cpu_library()]
        assert not missing, missing


def test_the_gpu_only_quotes_name_their_source_lines():
    cublas = MESSAGES["cublas-workspace"]
    assert "aten/src/ATen/Context.cpp" in cublas and "alertCuBLASConfigNotDeterministic" in cublas
    lightning = MESSAGES["tensor-cores"]
    assert "src/lightning/fabric/accelerators/cuda.py" in lightning
    assert "_check_cuda_matmul_precision" in lightning


@pytest.mark.parametrize("key", sorted(MESSAGES) + sorted(SYMPTOMS))
def test_each_entry_gives_cause_fix_and_a_lesson_section(key):
    text = MESSAGES.get(key) or SYMPTOMS[key]
    assert text.startswith("### "), f"{key}: an entry starts with a '### ' heading"
    for label in ("**Cause.**", "**Fix.**", "**Explained in**"):
        assert label in text, f"{key}: no {label}"
    assert LINK.search(text), f"{key}: no link to a lesson section"


def anchors(notebook: str) -> set[str]:
    """The anchors JupyterLab (and the site) give a notebook's headings: spaces become hyphens."""
    cells = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    found = set()
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for line in source(cell).splitlines():
                if re.match(r"#{1,3} ", line):
                    found.add(line.lstrip("#").strip().replace("`", "").replace(" ", "-"))
    return found


def test_every_section_link_names_a_heading_that_exists():
    links = [m for c in CELLS if c["cell_type"] == "markdown" for m in LINK.findall(source(c))]
    assert len(links) >= len(MESSAGES) + len(SYMPTOMS)
    missing = [f"{nb}#{anchor}" for nb, anchor in links if anchor not in anchors(nb)]
    assert not missing, missing
    own = anchors("appendix/symptoms.ipynb")
    local = [
        m for c in CELLS if c["cell_type"] == "markdown" for m in re.findall(r"\]\(#([^)\s]+)\)", source(c))
    ]
    assert local and not [a for a in local if a not in own], [a for a in local if a not in own]


def test_the_page_names_the_torch_version_its_messages_were_checked_with():
    stated = re.search(r"quoted from torch (\d+\.\d+) on a CPU", source(CELLS[0]))
    assert stated, "the first cell says which torch the messages are quoted from"
    assert torch.__version__.startswith(stated[1] + "."), f"page: {stated[1]}, installed: {torch.__version__}"
    sources = source(next(c for c in CELLS if c.get("id") == "page-sources"))
    assert f"printed by torch {stated[1]} on a CPU" in sources

"""The set-up line (``helpers.setup_line``, ``python -m helpers.setup``) and its tally (tools/setup_tally.py):
this machine's line reads back as it was written; lines from other machines, built by the same code with
their answers swapped in, tally right; lesson 00 ends with the line."""

from __future__ import annotations

import platform
import subprocess
import sys
import types

import ipywidgets
import nbformat
import pytest
import torch

from helpers import setup
from tools import setup_tally
from tools.course import NOTEBOOKS


def test_the_line_made_here_reads_back_as_the_same_fields():
    line = setup.make_setup_line()
    assert line.isascii() and "\n" not in line and len(line) < 300, line
    read = setup_tally.read_line(line, "here")
    assert read.unreadable is None, read.unreadable
    assert setup.MARKER == f"{setup_tally.NAME} v1" and setup.FIELDS == setup_tally.FORMATS["v1"]
    assert list(read.fields) == list(setup.FIELDS)
    assert read.fields["python"] == platform.python_version()
    assert read.fields["torch"] == torch.__version__
    assert read.fields["threads"] == str(torch.get_num_threads())
    assert read.fields["cpu"] == torch.backends.cpu.get_cpu_capability()
    assert read.fields["widgets"] == "not checked (run lesson 00)"  # pytest is no Jupyter kernel
    assert read.fields["problems"] == "0" and read.problems == []
    if not torch.cuda.is_available():
        assert read.fields["gpu"] in ("none", "Apple MPS")


# --- other machines: the real line builder, with their answers monkeypatched in --------------------

def machine(monkeypatch, *, system, machine, python, torch_version, cuda=None, mps=False, capability="AVX2",
            threads=4, gpu=None, widgets=None, ipywidgets_version=None, mac="", release="6.8.0", version="",
            os_release=None):
    """Make ``helpers.setup`` see another machine; ``widgets``: True drawn, False not, None no kernel."""
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.delenv("KAGGLE_KERNEL_RUN_TYPE", raising=False)
    for name, value in {"system": system, "machine": machine, "python_version": python, "release": release,
                        "version": version}.items():
        monkeypatch.setattr(platform, name, lambda value=value: value)
    monkeypatch.setattr(platform, "mac_ver", lambda: (mac, ("", "", ""), ""))
    monkeypatch.setattr(platform, "freedesktop_os_release", lambda: os_release or {})
    monkeypatch.setattr(torch, "__version__", torch_version)
    monkeypatch.setattr(torch.version, "cuda", cuda)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: mps)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu is not None)
    if gpu is not None:
        monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: gpu[0])
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=0: gpu[1])
    monkeypatch.setattr(setup, "_in_kernel", lambda: widgets is not None)
    monkeypatch.setattr(setup, "_probe", None if widgets is None else types.SimpleNamespace(drawn=widgets))
    if ipywidgets_version:
        monkeypatch.setattr(ipywidgets, "__version__", ipywidgets_version)
    return setup.make_setup_line()


MACHINES = {
    "mac": dict(system="Darwin", machine="arm64", python="3.11.9", torch_version="2.13.0", mps=True,
                capability="DEFAULT", threads=8, widgets=True, mac="14.5"),
    "windows": dict(system="Windows", machine="AMD64", python="3.12.4", torch_version="2.13.0+cpu",
                    release="11", version="10.0.22631", threads=6),
    "t4": dict(system="Linux", machine="x86_64", python="3.11.7", torch_version="2.13.0+cu128", cuda="12.8",
               gpu=("Tesla T4", (7, 5)), widgets=True, os_release={"ID": "ubuntu", "VERSION_ID": "22.04"}),
    "old": dict(system="Linux", machine="x86_64", python="3.11.2", torch_version="2.10.1+cpu", widgets=False,
                ipywidgets_version="7.7.1", os_release={"ID": "debian", "VERSION_ID": "12"}),
}


@pytest.fixture
def lines(monkeypatch):
    made = {}
    for name, answers in MACHINES.items():
        with monkeypatch.context() as patch:
            made[name] = machine(patch, **answers)
    return made


def test_each_machine_says_what_it_is(lines):
    fields = {name: setup_tally.read_line(line, name).fields for name, line in lines.items()}
    assert (fields["mac"]["os"], fields["mac"]["build"], fields["mac"]["gpu"]) == ("macOS 14.5", "CPU+MPS",
                                                                                  "Apple MPS")
    assert fields["windows"]["os"] == "Windows 11 (10.0.22631)" and fields["windows"]["python"] == "3.12.4"
    assert fields["windows"]["widgets"] == "not checked (run lesson 00)"
    assert (fields["t4"]["build"], fields["t4"]["gpu"]) == ("CUDA 12.8", "Tesla T4 cc 7.5")
    assert fields["t4"]["os"] == "Linux ubuntu 22.04"
    assert fields["old"]["problems"] == (
        "2: torch too old (2.10.1+cpu < 2.11); ipywidgets too old (7.7.1 < 8.0)")
    assert fields["old"]["widgets"] == "not shown"
    assert all(len(line) < 300 for name, line in lines.items() if name != "old"), lines


def test_the_tally_counts_machines_once_groups_problems_and_lists_what_it_cannot_read(lines):
    chat = "\n".join([
        "[10:01] Ana: here is mine",
        f"[10:02] Ana: {lines['old']}",                 # Ana's first paste, before she ran make lab
        f"[10:03] Ben: {lines['windows']}",
        f"10:04 AM From Chen Li to Everyone: {lines['t4']}",
        f"[10:05] Dee: {lines['old']}",
        f"[10:06] Eve: {lines['mac'][:70]}",            # cut off by the chat
        f"[10:07] Ana: {lines['mac']}",                  # Ana's second paste counts, not her first
        f"`{lines['windows']}`",                         # no name: counted on its own
    ])
    result = setup_tally.tally(setup_tally.find_lines([("chat.txt", chat)]))
    assert sorted(m.name for m in result.machines) == ["Ana", "Ben", "Chen Li", "Dee", "chat.txt:8"]
    assert result.repeated == 1
    assert sorted(m.name for m in result.ready) == ["Ana", "Ben", "Chen Li", "chat.txt:8"]
    assert result.by_problem == {"torch too old": [("Dee", "2.10.1+cpu < 2.11")],
                                 "ipywidgets too old": [("Dee", "7.7.1 < 8.0")]}
    assert result.widgets_not_shown == ["Dee"]
    assert sorted(result.widgets_not_checked) == ["Ben", "chat.txt:8"]
    assert result.counts["OS"] == {"Linux": 2, "Windows": 2, "macOS": 1}
    assert result.counts["Python"] == {"3.11": 3, "3.12": 2}
    assert result.counts["torch build"] == {"CPU": 3, "CUDA 12.8": 1, "CPU+MPS": 1}
    assert result.counts["GPU"] == {"none": 3, "Tesla T4 cc 7.5": 1, "Apple MPS": 1}
    (garbled,) = result.unreadable
    assert (garbled.who, garbled.where) == ("Eve", "chat.txt:6")
    assert garbled.unreadable.startswith("fields missing")
    text = setup_tally.report(result)
    assert text.startswith("5 machines: 4 ready (0 problems), 1 not")
    assert "  torch too old (1): Dee (2.10.1+cpu < 2.11)" in text
    assert "chat.txt:6 (Eve): fields missing" in text


def test_a_csv_export_and_standard_input(lines, tmp_path, monkeypatch, capsys):
    form = tmp_path / "form.csv"
    form.write_text(f'Timestamp,Name,Line\n2026-12-01 10:02:11,Ana,"{lines["t4"]}"\n', encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(read=lambda: f"Ben: {lines['mac']}\n"))
    assert setup_tally.main([str(form), "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 machines: 2 ready") and "GPU: Apple MPS (1), Tesla T4 cc 7.5 (1)" in out
    assert setup_tally.tally(setup_tally.find_lines([("f", form.read_text())])).machines[0].who == "Ana"


def test_the_widget_is_shown_once_the_front_end_reports_a_view(monkeypatch):
    """What JupyterLab's widget manager does on drawing the probe: `_view_count` 0 -> 1, sent back to the
    kernel; after "Run All" that arrives after the line was printed, and the line is redrawn."""
    shown, updates = [], []
    handle = types.SimpleNamespace(update=lambda obj, **kw: updates.append(obj["text/plain"]))
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs) or handle)
    monkeypatch.setattr(setup, "_in_kernel", lambda: True)
    monkeypatch.setattr(setup, "_probe", None)
    setup.setup_check()
    probe = shown[0]
    assert probe._view_count == 0 and not probe.drawn
    setup.setup_line()
    assert "| widgets=not shown |" in shown[-1]["text/plain"] and updates == []
    probe.set_state({"_view_count": 1})  # the front end's message, as the kernel applies it
    assert probe.drawn and len(updates) == 1 and "| widgets=shown |" in updates[0]
    assert "| widgets=shown |" in setup.make_setup_line()


def test_python_m_helpers_setup_prints_one_line_and_no_warning():
    run = subprocess.run([sys.executable, "-m", "helpers.setup"], capture_output=True, text=True, check=True)
    (line,) = run.stdout.splitlines()
    assert line.startswith(setup.MARKER + " | os=")
    assert "RuntimeWarning" not in run.stderr, run.stderr  # runpy's, were helpers.setup imported by helpers


def test_lesson_00_ends_with_the_line():
    cells = nbformat.read(NOTEBOOKS / "00_start_here.ipynb", as_version=4).cells
    code = [cell for cell in cells if cell.cell_type == "code"]
    assert code[-1].id == "l00-setup-line" and code[-1].source == "helpers.setup_line()"
    assert code[-1].metadata["tags"] == ["nbval-ignore-output"]
    intro = cells[[cell.id for cell in cells].index("l00-setup-line") - 1]
    assert intro.id == "l00-setup-line-intro" and "paste it where your instructor asks" in intro.source

"""helpers.lessons.inference: CPU features, and torchao imported without noise."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import torch

from helpers.lessons.inference import _describe, cpu_features, library_calls, load_int8_quantization


def test_cpu_features_reports_the_build():
    features = cpu_features()
    assert features["oneDNN (mkldnn) available"] == torch.backends.mkldnn.is_available()
    assert isinstance(features["bfloat16 in oneDNN"], bool)
    assert isinstance(features["vector instructions PyTorch uses"], str)
    assert isinstance(features["AVX512-VNNI"], bool)
    assert isinstance(features["AVX512-BF16"], bool) and isinstance(features["AMX"], bool)
    if features["AVX512-VNNI"]:
        assert "avx512_vnni" in Path("/proc/cpuinfo").read_text() or not Path("/proc/cpuinfo").exists()
    if features["AMX"]:
        assert "amx_tile" in Path("/proc/cpuinfo").read_text() or not Path("/proc/cpuinfo").exists()


def test_describe_reads_mkl_and_onednn_verbose_lines():
    assert _describe("MKL_VERBOSE SGEMM(T,N,4096,64,1024,0x7ffe,0x7fb8,1024) 14.35ms CNR:OFF Dyn:1") == (
        "MKL",
        "SGEMM(T,N,4096,64,1024)",
    )
    assert _describe("MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64") is None
    old_banner = "MKL_VERBOSE Intel(R) MKL 2020.0 Product build 20191122 for Intel(R) 64 architecture"
    assert _describe(old_banner) is None
    line = (
        "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_bf16,undef,"
        "src:bf16::blocked:ab::f0 wei:bf16::blocked:ba::f0 dst:bf16::blocked:ab::f0,attr-scratchpad:user,,"
        "64x1024:1024x4096,2.25"
    )
    assert _describe(line) == ("oneDNN", "matmul brg_matmul:avx512_core_bf16 (src bf16, wei bf16, dst bf16)")
    old_style = (
        "onednn_verbose,exec,cpu,gemm_api,,undef,"
        "src_u8::blocked:ab:f0 wei_s8::blocked:ab:f0 dst_s32::blocked:ab:f0,,,64x1024:1024x256,13.7"
    )
    assert _describe(old_style) == ("oneDNN", "gemm_api (src u8, wei s8, dst s32)")
    assert _describe("onednn_verbose,v1,info,cpu,isa:Intel AVX-512") is None


def test_library_calls_names_the_library_and_restores_stdout():
    layer, batch = torch.nn.Linear(256, 512), torch.randn(32, 256)
    before = os.fstat(1)
    with torch.inference_mode():
        calls = library_calls(lambda: layer(batch))
        assert library_calls(lambda: None) == []
    after = os.fstat(1)
    assert (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
    if torch.backends.mkl.is_available():
        assert [library for library, _ in calls] == ["MKL"] and calls[0][1] == "SGEMM(T,N,512,32,256)"


def test_load_int8_quantization_is_quiet_and_restores_logging():
    code = (
        "import logging; from helpers.lessons.inference import load_int8_quantization; "
        "q, c = load_int8_quantization(); print(q.__name__, c.__name__, logging.root.manager.disable)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["quantize_", "Int8DynamicActivationInt8WeightConfig", "0"]
    assert done.stderr == ""


def test_int8_quantization_keeps_a_linear_model_close():
    quantize_, config = load_int8_quantization()
    assert logging.root.manager.disable == 0
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).eval()
    x = torch.randn(16, 64)
    with torch.inference_mode():
        ref = model(x)
        quantize_(model, config())
        out = model(x)
    assert ((out - ref).norm() / ref.norm()).item() < 0.05


def test_threads_in_new_processes_reads_the_variables():
    from helpers.lessons.inference import threads_in_new_processes

    seen = threads_in_new_processes({"omp1": {"OMP_NUM_THREADS": "1"},
                                     "mkl2": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2"}})
    assert seen == {"omp1": (1, 3), "mkl2": (2, 3)}


def test_threads_in_new_processes_interrupted_stops_children(monkeypatch, capsys):
    import pytest

    from helpers.lessons import inference

    started = []
    real_popen = subprocess.Popen

    class RecordingPopen(real_popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

        def communicate(self, *args, **kwargs):
            raise KeyboardInterrupt

    monkeypatch.setattr(subprocess, "Popen", RecordingPopen)
    with pytest.raises(KeyboardInterrupt) as info:
        inference.threads_in_new_processes({"a": {"OMP_NUM_THREADS": "1"}, "b": {"OMP_NUM_THREADS": "1"}})
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert len(started) == 2 and all(p.poll() is not None for p in started)   # both children are gone
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "Interrupted" in out


def test_interleaved_ratios_one_per_round():
    from helpers.lessons.inference import interleaved_ratios

    ratios = interleaved_ratios(lambda: None, lambda: None, repeats=3, min_run_time=0.001)
    assert len(ratios) == 3 and all(r > 0 for r in ratios)


def test_cpu_model_is_a_name():
    from helpers.lessons.inference import cpu_model

    name = cpu_model()
    assert isinstance(name, str) and name and name == cpu_features()["CPU model"]


def test_thread_speedups_one_list_per_count_and_1_is_1():
    from helpers.lessons.inference import thread_speedups

    x = torch.randn(64, 64)
    found = thread_speedups(lambda: x @ x, [1, 2], rounds=2, min_run_time=0.001)
    assert sorted(found) == [1, 2] and all(len(v) == 2 for v in found.values())
    assert found[1] == [1.0, 1.0] and all(r > 0 for r in found[2])
    assert sorted(thread_speedups(lambda: x @ x, [2], rounds=1, min_run_time=0.001)) == [2]


def test_thread_speedups_with_a_fixed_number_of_calls_sets_and_restores_the_count():
    from helpers.lessons.inference import thread_speedups

    before, seen = torch.get_num_threads(), []
    found = thread_speedups(lambda: seen.append(torch.get_num_threads()), [2], rounds=2, calls=3)
    assert sorted(found) == [2] and len(found[2]) == 2 and all(r > 0 for r in found[2])
    assert seen == ([1] * 4 + [2] * 4) * 2          # one untimed call and 3 timed ones per count and round
    assert torch.get_num_threads() == before


def test_int_mm_calls_records_operands_and_results():
    from helpers.lessons.inference import int_mm_calls

    g = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (32, 64), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (64, 16), dtype=torch.int8, generator=g)
    real = torch._int_mm
    calls, out = int_mm_calls(lambda t: torch._int_mm(t, b) * 2, a)
    assert torch._int_mm is real                          # put back afterwards
    assert len(calls) == 1 and calls[0][0] is a and calls[0][1] is b
    assert torch.equal(calls[0][2], a.double().mm(b.double()).int()) and torch.equal(out, 2 * calls[0][2])


def test_fresh_python_reads_its_variables_counts_wrong_entries_and_stays_up():
    from helpers.lessons.inference import FreshPython

    g = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (32, 64), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (64, 16), dtype=torch.int8, generator=g)
    fresh = FreshPython({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2"})
    assert fresh._process.poll() is None                      # started at once, before any question
    try:
        assert fresh.thread_counts() == (2, 3)   # MKL_NUM_THREADS wins; set_num_threads beats both
        first = fresh._process.pid
        assert fresh.wrong_entries([(a, b)]) == 0   # no cap: PyTorch's exact loop or oneDNN with VNNI
        assert fresh.wrong_entries([(a, b), (a, b)]) == 0
        assert fresh.thread_counts() == (2, 3)                # the count was set back
        assert fresh._process.pid == first                    # one process for every question
    finally:
        fresh.close()
    assert fresh._process is None


def test_fresh_python_interrupted_stops_the_child(capsys):
    import pytest

    from helpers.lessons.inference import FreshPython

    fresh = FreshPython({})
    process = fresh._process
    real_stdout = process.stdout

    class Interrupting:
        def readline(self):
            raise KeyboardInterrupt

        def close(self):
            real_stdout.close()

    process.stdout = Interrupting()
    with pytest.raises(KeyboardInterrupt) as info:
        fresh.thread_counts()
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert process.poll() is not None and fresh._process is None
    assert capsys.readouterr().out.count("\n") == 1


def test_interleaved_ratios_with_a_fixed_number_of_calls():
    from helpers.lessons.inference import interleaved_ratios

    counted = []
    ratios = interleaved_ratios(lambda: counted.append("a"), lambda: counted.append("b"), repeats=2, calls=3)
    assert len(ratios) == 2 and all(r > 0 for r in ratios)
    assert counted == ["a"] * 3 + ["b"] * 3 + ["a"] * 3 + ["b"] * 3   # alternately, round by round

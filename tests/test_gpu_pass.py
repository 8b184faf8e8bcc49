"""tools/gpu_pass.sh's own logic, with a stand-in for the GPU machine's Python (seconds, no GPU).

The stand-in answers each command the pass gives it as the real one would, in a line or two, and can
hang in one stage (FAKE_HANG=record, nbval or unit) so that the time limits can be seen working.
What the stages really do is rehearsed by `make gpu-rehearsal`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PASS = ROOT / "tools" / "gpu_pass.sh"

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in ("bash", "timeout", "stat")),
    reason="needs bash and GNU coreutils' timeout (Linux)",
)

FAKE_PYTHON = r"""#!/usr/bin/env bash
# Stands in for the GPU machine's python3 in the tests of tools/gpu_pass.sh.
case "$1" in
  -c)
    case "$2" in
      *"sys.exit(not torch.cuda.is_available())"*) exit 1 ;;  # no CUDA here
      *"torch.__version__"*) echo "3.12.3 torch 2.11.0+cu130 CUDA 13.0 device: none" ;;
      *) echo "imports and font cache ready" ;;
    esac ;;
  tools/gpu.py)
    case "$2" in
      install) echo "installed 62 wheels into .gpu-site/" ;;
      cuda-tests) echo "tests/test_devices.py" ;;
      test)
        stage=unit
        for arg in "$@"; do [ "$arg" = notebooks ] && stage=nbval; done
        [ "${FAKE_HANG:-}" = "$stage" ] && sleep 60
        [ "$stage" = nbval ] && head -c "${FAKE_LOG_BYTES:-0}" /dev/zero | tr '\0' 'x'
        echo "$stage: 3 passed in 0.5s" ;;
    esac ;;
  tools/record_gpu.py)
    while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
    echo '{"measurements": {}}' > "$out/reference.json.partial"
    [ "${FAKE_HANG:-}" = record ] && sleep 60
    echo '{}' > "$out/reference.json" && rm "$out/reference.json.partial"
    echo weights > "$out/linear_4x2_saved_on_gpu.pt"
    echo "wrote $out/reference.json" ;;
esac
"""


def run_pass(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    out = tmp_path / "out"
    full_env = {**os.environ, "GPU_PYTHON": str(fake), **env}
    done = subprocess.run(
        ["bash", str(PASS), *args, str(out)], env=full_env, capture_output=True, text=True, timeout=120
    )
    return done, out


def summary(out: Path) -> str:
    return (out / "summary.txt").read_text()


def test_the_pass_writes_at_most_eight_flat_small_files(tmp_path):
    done, out = run_pass(tmp_path, "--cpu")
    assert done.returncode == 0, done.stdout + done.stderr
    entries = list(out.iterdir())
    assert len(entries) <= 8 and all(e.is_file() for e in entries), entries
    assert all(e.stat().st_size <= 16 * 2**20 for e in entries)
    names = {e.name for e in entries}
    assert {"summary.txt", "install.log", "record.log", "nbval.log", "unit.log"} <= names
    assert {"reference.json", "linear_4x2_saved_on_gpu.pt"} <= names
    text = summary(out)
    for stage in ("install", "record", "nbval", "unit"):  # in this order: the recording comes first
        assert f"stage {stage}: exit 0" in text
    assert text.index("stage record") < text.index("stage nbval") < text.index("stage unit")
    assert "nbval: 3 passed" in text and "result: pass" in text


def test_a_hung_stage_is_stopped_and_the_later_ones_still_run(tmp_path):
    done, out = run_pass(tmp_path, "--cpu", FAKE_HANG="record", LIMIT_RECORD="2")
    assert done.returncode == 1
    text = summary(out)
    assert "stage record: TIMED OUT" in text
    assert "stage nbval: exit 0" in text and "stage unit: exit 0" in text and "result: FAIL" in text
    assert (out / "reference.json.partial").exists()  # what the recorder finished comes back
    assert not (out / "reference.json").exists()


def test_a_spent_budget_skips_the_stages_it_cannot_fit(tmp_path):
    done, out = run_pass(tmp_path, "--cpu", GPU_PASS_BUDGET="12")
    assert done.returncode != 0
    assert "stage install: not run, the budget of 12 s is spent" in summary(out)


def test_a_log_over_the_cap_keeps_its_beginning_and_end(tmp_path):
    done, out = run_pass(tmp_path, "--cpu", GPU_PASS_FILE_CAP="2000", FAKE_LOG_BYTES="50000")
    assert done.returncode == 0, done.stdout + done.stderr
    log = (out / "nbval.log").read_text()
    assert (out / "nbval.log").stat().st_size <= 2000 and "bytes cut" in log
    assert log.rstrip().endswith("nbval: 3 passed in 0.5s")


def test_gpu_mode_stops_at_once_without_cuda(tmp_path):
    done, out = run_pass(tmp_path)
    assert done.returncode == 2
    assert "no CUDA device visible" in summary(out)
    assert not (out / "install.log").exists()

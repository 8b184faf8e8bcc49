#!/usr/bin/env bash
# The whole GPU pass in one command, for the GPU machine (one H200, Python 3.12 with torch 2.11.0+cu130,
# no network), from a copy of this repository with wheelhouse/ (`make gpu-wheels`) carried along:
#
#   bash tools/gpu_pass.sh OUTDIR          on the GPU machine
#   bash tools/gpu_pass.sh --cpu OUTDIR    the rehearsal on a CPU (make gpu-rehearsal)
#
# Stages, in this order, each bounded by a hard `timeout` and writing into OUTDIR as it goes, so
# that whatever finished comes back even if a later stage hangs or the machine is taken back:
#   install  wheelhouse/ into .gpu-site/ (git-ignored), offline, with no fallback to PyPI; then
#            matplotlib's font cache, which would otherwise be built inside a lesson (stderr)
#   record   the GPU reference data (tools/record_gpu.py), first and alone on the machine: no test
#            runs while anything is timed; it warms the GPU up until its SM clock is near its
#            maximum before the first timed size. nvidia-smi samples the clocks meanwhile.
#   nbval    every notebook (lessons and solutions) with the GPU branches and `gpu` cells live,
#            CUDA as it is (nothing patched), a time limit per cell and per test item
#   unit     the unit tests that can take a CUDA path (`tools/gpu.py cuda-tests`), a limit per test
# The test stages run notebooks in parallel (GPU_PASS_JOBS, default 4 here, with the cores shared
# out among them): cells that time GPU or CPU work then print numbers measured under load, which is
# why such outputs are never compared (nbval-ignore-output) and why the recorder runs alone first.
#
# OUTDIR stays flat and small, at most 8 files, each capped at 16 MiB:
#   summary.txt   the machine, and per stage: exit status, seconds, limit, last line of its log
#   install.log  record.log  nbval.log  unit.log
#   clocks.csv    nvidia-smi samples (SM clock, power, utilisation) during the recording
#   reference.json and linear_4x2_saved_on_gpu.pt, the recorded data (reference.json.partial
#                 instead, holding the measurements that finished, if the recorder was stopped)
# Copy the data into the course with `make gpu-data FROM=OUTDIR`, which also re-executes the
# lessons that show them.
#
# Limits in seconds, from the environment: GPU_PASS_BUDGET for the whole pass (default 540, inside
# the GPU machine's 10 minutes per command), LIMIT_INSTALL 120, LIMIT_RECORD 240, LIMIT_NBVAL 330,
# LIMIT_UNIT 150 per stage (each cut to what is left of the budget), CELL_TIMEOUT 120 per notebook
# cell, TEST_TIMEOUT 150 per test item. GPU_PYTHON: the Python to test (default python3).
set -uo pipefail

mode=gpu
if [ "${1:-}" = "--cpu" ]; then mode=cpu; shift; fi
if [ $# -ne 1 ]; then
  echo "usage: bash tools/gpu_pass.sh [--cpu] OUTDIR" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "cannot create $1" >&2; exit 2; }
cd "$(dirname "$0")/.." || exit 2
python="${GPU_PYTHON:-python3}"
budget=${GPU_PASS_BUDGET:-540}
cores=$(nproc 2>/dev/null || echo 2)
default_jobs=$(( cores < 4 ? cores : 4 ))
jobs=${GPU_PASS_JOBS:-$default_jobs}
threads=$(( cores / jobs > 2 ? cores / jobs : 2 ))
summary="$out/summary.txt"
cap=${GPU_PASS_FILE_CAP:-$((16 * 1024 * 1024))}  # bytes per file (smaller only in the tests)
export PYTHONUNBUFFERED=1

note() { echo "$*" | tee -a "$summary"; }

# A file over the cap keeps its beginning and its end.
cap_file() {
  local f=$1 size half
  [ -f "$f" ] || return 0
  size=$(stat -c %s "$f")
  half=$(( (cap - 100) / 2 ))
  if [ "$size" -gt "$cap" ]; then
    { head -c "$half" "$f"; printf '\n[... %s bytes cut ...]\n' "$((size - 2 * half))"; tail -c "$half" "$f"; } > "$f.cut"
    mv "$f.cut" "$f"
  fi
}

# run NAME LIMIT LOG COMMAND...: the command under a hard time limit (cut to what is left of the
# budget), its output straight into LOG (no pipe, so a stray child holding stdout cannot block),
# and one line in the summary.
run_stage() {
  local name=$1 limit=$2 log=$3 left start rc last status
  shift 3
  left=$(( budget - SECONDS - 5 ))
  if [ "$left" -lt 10 ]; then
    note "stage $name: not run, the budget of $budget s is spent"
    return 99
  fi
  if [ "$left" -lt "$limit" ]; then limit=$left; fi
  start=$SECONDS
  echo "== $name (limit $limit s) ==" >&2
  timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
  rc=$?
  cap_file "$log"
  case $rc in
    0) status="exit 0" ;;
    124|137) status="TIMED OUT (exit $rc)" ;;
    *) status="exit $rc" ;;
  esac
  last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-200)
  note "stage $name: $status in $(( SECONDS - start )) s (limit $limit s): $last"
  return $rc
}

: > "$summary"
note "GPU pass ($mode mode), $(date -u +%Y-%m-%dT%H:%M:%SZ), budget $budget s, repository $(git rev-parse --short HEAD 2>/dev/null || echo '(no git)')"
note "host: $cores cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null), $jobs test jobs with $threads threads each"
note "python: $(timeout 120 "$python" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda, "device:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' 2>&1 | tail -n 1)"
if command -v nvidia-smi >/dev/null; then
  note "nvidia-smi: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,persistence_mode --format=csv,noheader 2>&1 | head -n 2)"
else
  note "nvidia-smi: not found"
fi
if [ "$mode" = gpu ] && ! timeout 120 "$python" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())'; then
  note "no CUDA device visible to $python: stopping (use --cpu for the rehearsal on a CPU)"
  exit 2
fi
allow_cpu=(); dry_run=()
if [ "$mode" = cpu ]; then allow_cpu=(--allow-cpu); dry_run=(--dry-run); fi

failed=0
# shellcheck disable=SC2016  # $1 is expanded by the inner bash, which gets the Python as its argument
run_stage install "${LIMIT_INSTALL:-120}" "$out/install.log" \
  bash -c '"$1" tools/gpu.py install && PYTHONPATH=.gpu-site "$1" -c "import matplotlib.pyplot, nbval, ipykernel; print(\"imports and font cache ready\")"' _ "$python" \
  || { note "the install failed: nothing else can run"; exit 1; }

sampler=""
if [ "$mode" = gpu ] && command -v nvidia-smi >/dev/null; then
  timeout "${LIMIT_RECORD:-240}" nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,temperature.gpu,memory.used \
    --format=csv -lms 250 > "$out/clocks.csv" 2>&1 &
  sampler=$!
fi
run_stage record "${LIMIT_RECORD:-240}" "$out/record.log" \
  env PYTHONPATH=src "$python" tools/record_gpu.py "${dry_run[@]}" --out "$out" || failed=1
if [ -n "$sampler" ]; then kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; cap_file "$out/clocks.csv"; fi
rm -f "$out"/*.tmp

export OMP_NUM_THREADS=$threads
run_stage nbval "${LIMIT_NBVAL:-330}" "$out/nbval.log" \
  "$python" tools/gpu.py test --jobs "$jobs" "${allow_cpu[@]}" -- -p tests.pytest_course --color=no -q -rs \
  --timeout "${TEST_TIMEOUT:-150}" --nbval-cell-timeout "${CELL_TIMEOUT:-120}" notebooks || failed=1

# shellcheck disable=SC2046  # the file list is meant to split into words
run_stage unit "${LIMIT_UNIT:-150}" "$out/unit.log" \
  "$python" tools/gpu.py test --jobs "$jobs" "${allow_cpu[@]}" -- --color=no -q -rs \
  --timeout "${TEST_TIMEOUT:-150}" $("$python" tools/gpu.py cuda-tests) || failed=1

files=$(find "$out" -mindepth 1 | wc -l)
note "total: $SECONDS s; $files files in $out; result: $([ "$failed" = 0 ] && echo pass || echo FAIL)"
exit "$failed"

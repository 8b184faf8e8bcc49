#!/usr/bin/env bash
# The whole GPU pass in one command, for a CUDA machine: the test suite with the GPU cells live,
# then the reference recording. Logs and the recorded data go to OUTDIR (default: gpu-pass/).
#   bash tools/gpu_pass.sh [OUTDIR]
# Then copy OUTDIR/gpu_reference/* into src/helpers/data/gpu_reference/, check `git diff`, and commit.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu-pass}"
mkdir -p "$out/gpu_reference"
python="${GPU_PYTHON:-python3}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/nvidia-smi.csv" 2>&1 || true
start=$(date +%s)
"$python" tools/gpu.py test --color=no -q -rs 2>&1 | tee "$out/test-gpu.log"
tests=${PIPESTATUS[0]}
PYTHONPATH=src "$python" tools/record_gpu.py --out "$out/gpu_reference" 2>&1 | tee "$out/record.log"
recorded=${PIPESTATUS[0]}
echo "test-gpu exit ${tests}, record exit ${recorded}, $(( $(date +%s) - start )) s in all" | tee "$out/summary.txt"
[ "$tests" -eq 0 ] && [ "$recorded" -eq 0 ]

#!/usr/bin/env bash
# The GPU pass rehearsed on this CPU machine (make gpu-rehearsal): the GPU machine's software, and
# nothing else, then the same `tools/gpu_pass.sh` in its CPU mode.
#
#   bash tools/rehearse_gpu.sh [OUTDIR]          (default OUTDIR: .gpu-rehearsal/out)
#
# 1. A CPython 3.12 environment in .gpu-rehearsal/venv (git-ignored) holding only what the GPU
#    machine's Python holds (requirements/gpu-machine.txt: torch 2.11.0, whose PyPI build is the
#    CUDA 13.0 one and runs on a CPU, numpy 2.5, matplotlib, pytest, pytest-xdist, pytest-timeout,
#    hypothesis). Its wheels are cached in ~/.cache/fp-course/gpu-machine-wheels (about 2.6 GB,
#    downloaded once) and installed from there with no index.
# 2. wheelhouse/ made by `make gpu-wheels` when it is missing.
# 3. .gpu-site/ removed and fresh matplotlib and Inductor caches, as on a bare GPU machine, and
#    `tools/gpu_pass.sh --cpu OUTDIR` run with the network shut off for pip (no index, no config
#    file, an unreachable proxy), so that an install that would reach for PyPI fails here as it
#    would there. In CPU mode the recorder makes its dry run and the tests run with --allow-cpu.
# Set REHEARSAL_PYTHON to a CPython 3.12 (default: python3.12 on PATH, else pyenv's 3.12.1).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.gpu-rehearsal/out}"
env_dir=.gpu-rehearsal/venv
cache="${REHEARSAL_CACHE:-$HOME/.cache/fp-course/gpu-machine-wheels}"
requirements=requirements/gpu-machine.txt
# The first candidate that runs and is 3.12 (a pyenv shim for python3.12 can exist and still fail).
py312="${REHEARSAL_PYTHON:-}"
if [ -z "$py312" ]; then
  for candidate in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python; do
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then
      py312=$candidate
      break
    fi
  done
fi

start=$SECONDS
stamp="$env_dir/.requirements"
if [ ! -x "$env_dir/bin/python" ] || ! cmp -s "$requirements" "$stamp"; then
  "$py312" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' \
    || { echo "REHEARSAL_PYTHON must be a CPython 3.12, like the GPU machine's" >&2; exit 2; }
  rm -rf "$env_dir"
  "$py312" -m venv "$env_dir"
  mkdir -p "$cache"
  offline=(--no-index --find-links "$cache" -r "$requirements")
  if ! "$env_dir/bin/python" -m pip install --quiet "${offline[@]}" 2>/dev/null; then
    echo "downloading the GPU machine's wheels into $cache (once; about 2.6 GB)"
    "$env_dir/bin/python" -m pip download --quiet -d "$cache" -r "$requirements"
    "$env_dir/bin/python" -m pip install --quiet "${offline[@]}"
  fi
  cp "$requirements" "$stamp"
fi
"$env_dir/bin/python" -c 'import torch, sys; print(f"rehearsal environment: Python {sys.version.split()[0]}, torch {torch.__version__}")'
echo "environment ready in $((SECONDS - start)) s"

start=$SECONDS
if ! compgen -G "wheelhouse/*.whl" >/dev/null; then
  make gpu-wheels
fi
echo "wheelhouse ready in $((SECONDS - start)) s"

rm -rf .gpu-site  # a bare GPU machine has none: the pass must build it from wheelhouse/
scratch=$(mktemp -d)  # fresh caches, as on a bare machine: matplotlib's font list, Inductor's kernels
trap 'rm -rf "$scratch"' EXIT
export MPLCONFIGDIR="$scratch/matplotlib" TORCHINDUCTOR_CACHE_DIR="$scratch/inductor"
export PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS=
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9
# A 2-core CPU is slower than the GPU machine's 16 cores: the stage limits and the budget are
# raised so that every stage can finish, and the stage times the summary reports are the
# measurements. The limits per notebook cell and per test are the GPU machine's.
export GPU_PASS_BUDGET="${GPU_PASS_BUDGET:-1800}" LIMIT_INSTALL="${LIMIT_INSTALL:-300}" \
  LIMIT_RECORD="${LIMIT_RECORD:-600}" LIMIT_NBVAL="${LIMIT_NBVAL:-900}" LIMIT_UNIT="${LIMIT_UNIT:-600}"
GPU_PYTHON="$PWD/$env_dir/bin/python" bash tools/gpu_pass.sh --cpu "$out"

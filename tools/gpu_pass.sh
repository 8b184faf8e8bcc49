#!/usr/bin/env bash
# The GPU pass: every notebook executed with CUDA visible, kept as the record (docs/gpu.md).
#
#   bash tools/gpu_pass.sh wheels                    on a networked machine (make gpu-wheels)
#   bash tools/gpu_pass.sh run [--cpu] OUTDIR [NB]   on the CUDA machine (make gpu-pass)
#
# wheels: download into wheelhouse/ what the pass needs besides the CUDA machine's own torch, numpy
#   and matplotlib (the notebook runner and kernel, nbval, pytest, widgets, torchao, pip) for
#   CPython 3.12 on manylinux x86-64, at the versions requirements/constraints.txt pins.
# run: install wheelhouse/ offline into .gpu-site/, then execute each notebook (all of them, or
#   the NB given) one at a time, with the `gpu` cells and the torch.cuda.is_available() branches
#   live, saving it to OUTDIR and a line to OUTDIR/results.txt as it finishes; then nbval over the
#   same notebooks, its log in OUTDIR/nbval.log. Exits non-zero if anything failed. Without CUDA it
#   refuses, unless --cpu (a rehearsal on a CPU). Paths are relative to the repository root.
#
# Environment: GPU_PYTHON, the Python under test (python3); PYTHON, the Python that downloads
# (python3); NOTEBOOK_TIMEOUT, seconds per notebook (900); NBVAL_TIMEOUT, seconds for nbval
# (1800); NBVAL_JOBS, its parallel workers (4); WHEEL_PYTHON_VERSION (3.12).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
wheelhouse=wheelhouse
site=.gpu-site
# Besides what the CUDA machine's Python has; their dependencies come along.
packages=(nbval nbclient nbformat ipykernel jupyter_client ipywidgets torchao pytest-xdist hypothesis pip)
# ...but not these, which the machine has and the pass tests: they must not be shadowed.
machine_own='^(torch|numpy|matplotlib|triton|nvidia_.*|cuda_.*)-'

wheels() {
  local python=${PYTHON:-python3} scratch pins platforms=()
  for tag in manylinux_2_17 manylinux2014 manylinux_2_24 manylinux_2_26 manylinux_2_27 \
             manylinux_2_28 manylinux_2_34 manylinux1 manylinux_2_5; do
    platforms+=(--platform "${tag}_x86_64")
  done
  scratch=$(mktemp -d) && pins="$scratch/constraints.txt"
  grep -v '^torch==' requirements/constraints.txt > "$pins"
  "$python" -m pip download --quiet --only-binary=:all: --implementation cp \
    --python-version "${WHEEL_PYTHON_VERSION:-3.12}" "${platforms[@]}" \
    -d "$scratch/wheels" -c "$pins" "${packages[@]}" || { rm -rf "$scratch"; return 1; }
  if find "$scratch/wheels" -name '*.whl' -printf '%f\n' | grep -E "$machine_own"; then
    echo "these would shadow the CUDA machine's own packages; not writing $wheelhouse/" >&2
    rm -rf "$scratch"
    return 1
  fi
  rm -rf "$wheelhouse" && mv "$scratch/wheels" "$wheelhouse" && rm -rf "$scratch"
  echo "$(find "$wheelhouse" -name '*.whl' | wc -l) wheels, $(du -sh "$wheelhouse" | cut -f1) in $wheelhouse/"
}

# wheelhouse/ into .gpu-site/, with the pip it carries and no index; skipped if already done.
install() {
  local python=$1 pip
  pip=$(ls "$wheelhouse"/pip-*.whl 2>/dev/null | head -n 1)
  if [ -z "$pip" ]; then
    echo "no pip wheel in $wheelhouse/: run 'bash tools/gpu_pass.sh wheels' on a networked machine" >&2
    return 1
  fi
  if [ -f "$site/.installed" ] && ls "$wheelhouse" | cmp -s - "$site/.installed"; then return 0; fi
  rm -rf "$site"
  # shellcheck disable=SC2046  # one argument per wheel
  PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 "$python" "$pip/pip" install --quiet \
    --no-index --no-deps --target "$site" $(ls "$wheelhouse"/*.whl | grep -v '/pip-') || return 1
  ls "$wheelhouse" > "$site/.installed"
}

run() {
  local mode=gpu python=${GPU_PYTHON:-python3} out results begin start rc status line ok=0 failed=0 notebooks
  if [ "${1:-}" = "--cpu" ]; then mode=cpu; shift; fi
  if [ $# -lt 1 ]; then echo "usage: bash tools/gpu_pass.sh run [--cpu] OUTDIR [NOTEBOOK ...]" >&2; return 2; fi
  out=$1; shift
  mkdir -p "$out" || return 2
  if [ $# -gt 0 ]; then notebooks=("$@")
  else notebooks=(notebooks/[0-9][0-9]_*.ipynb notebooks/solutions/*.ipynb notebooks/appendix/*.ipynb)
  fi
  if [ "$mode" = gpu ] && ! "$python" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
    echo "$python sees no CUDA device: run this on a CUDA machine (or rehearse with run --cpu)" >&2
    return 2
  fi
  start=$SECONDS
  install "$python" || { echo "installing $wheelhouse/ into $site/ failed" >&2; return 1; }
  export PYTHONPATH="$PWD/$site:$PWD/src" PYTHONUNBUFFERED=1
  # Builds matplotlib's font cache here, not inside a lesson (where it would write to stderr).
  "$python" -c 'import ipykernel, matplotlib.pyplot, nbclient, nbval, torch' || return 1
  echo "install: $((SECONDS - start)) s" >&2

  results="$out/results.txt"
  "$python" -c 'import platform, torch; c = torch.cuda.is_available()
print(f"# Python {platform.python_version()}, torch {torch.__version__}, CUDA {torch.version.cuda},",
      torch.cuda.get_device_name(0) if c else "no CUDA device (rehearsal)")' > "$results"
  echo "# $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" >> "$results"
  : > "$out/execute.log"
  begin=$SECONDS
  for nb in "${notebooks[@]}"; do
    start=$SECONDS
    timeout --kill-after=10 "${NOTEBOOK_TIMEOUT:-900}" \
      "$python" -m tools.execute --keep-cuda --out "$out" "$nb" > "$out/last.log" 2>&1
    rc=$?
    cat "$out/last.log" >> "$out/execute.log"
    if [ $rc = 0 ]; then status="ok"; ok=$((ok + 1))
    elif [ $rc = 124 ] || [ $rc = 137 ]; then status="TIMED OUT"; failed=$((failed + 1))
    else status="FAILED"; failed=$((failed + 1))
    fi
    line=$(printf '%-9s %5d s  %s' "$status" $((SECONDS - start)) "$nb")
    if [ "$status" = FAILED ]; then
      line="$line  $(grep -m1 '^FAILED' "$out/last.log" | sed 's/^FAILED [^:]*: //' | cut -c1-200)"
    fi
    echo "$line" | tee -a "$results"
  done
  rm -f "$out/last.log"
  echo "executed ${#notebooks[@]} notebooks: $ok ok, $failed failed or timed out, $((SECONDS - begin)) s" \
    | tee -a "$results"

  # nbval: the compared outputs must be the stored CPU ones, with the gpu cells live.
  start=$SECONDS
  PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 timeout --kill-after=10 "${NBVAL_TIMEOUT:-1800}" \
    "$python" -m pytest -p nbval.plugin -p xdist.plugin -n "${NBVAL_JOBS:-4}" --dist loadscope \
    -q --color=no "${notebooks[@]}" > "$out/nbval.log" 2>&1
  rc=$?
  echo "nbval: exit $rc in $((SECONDS - start)) s: $(grep -v '^\s*$' "$out/nbval.log" | tail -n 1)" \
    | tee -a "$results"
  [ "$failed" = 0 ] && [ "$rc" = 0 ]
}

case "${1:-}" in
  wheels) wheels ;;
  run) shift; run "$@" ;;
  *) echo "usage: bash tools/gpu_pass.sh wheels | run [--cpu] OUTDIR [NOTEBOOK ...]" >&2; exit 2 ;;
esac

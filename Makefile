# The course's commands: `make lab` to learn, `make test` to check everything (README.md).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PINS   := -c requirements/constraints.txt
JOBS   ?= 2
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

.PHONY: help lab test test-slow lint execute docs pins clean gpu-wheels gpu-pass colab-check

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's/:.*## /\t/'

# WHEELS=DIR: install from that folder of wheels alone, with no network (make wheelhouse; docs/offline.md).
FROM_WHEELS = $(if $(WHEELS),--no-index --find-links "$(WHEELS)")

# What a learner needs: the base dependencies at the tested pins, the kernel, matplotlib's font cache.
$(VENV)/.lab: pyproject.toml requirements/constraints.txt
	@test -x $(PY) || $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11, 5) and "The course needs Python 3.11.5 or newer (a pinned package needs it); try: make lab PYTHON=python3.12")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(if $(WHEELS),,$(PIP) install --quiet --upgrade pip)
	@# with WHEELS, torch first from the folder: tools.cpu_torch then finds the pinned torch and asks no index
	$(if $(WHEELS),$(PIP) install --quiet $(FROM_WHEELS) $(PINS) torch)
	$(PY) -m tools.cpu_torch $(PINS)  # Linux without an NVIDIA GPU: the CPU build of torch (tools/cpu_torch.py)
	$(PIP) install --quiet $(FROM_WHEELS) $(PINS) -e .
	@# ipykernel's installer leaves an empty tmp*_kernels folder in TMPDIR: give it one of its own
	scratch=$$(mktemp -d) && TMPDIR=$$scratch $(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null; status=$$?; rm -rf "$$scratch"; exit $$status
	$(PY) -c "import matplotlib.pyplot"  # build the font cache now, not inside a lesson
	touch $@

# What the whole suite needs besides: the test and docs extras.
$(VENV)/.test: $(VENV)/.lab
	$(PIP) install --quiet $(PINS) -e ".[test,docs]"
	touch $@

lab: $(VENV)/.lab  ## set up .venv when missing, copy the lessons into work/ (yours to change), open JupyterLab there
	$(PY) -m tools.course work
	cd work && $(abspath $(VENV))/bin/jupyter lab 00_start_here.ipynb $(LAB_ARGS)

.PHONY: setup-line
setup-line: $(VENV)/.lab  ## print the one line to paste before a workshop
	@$(PY) -m helpers.setup

test: $(VENV)/.test  ## set up .venv with the test and docs extras, then the unit tests and nbval over every notebook
	$(PY) -m pytest -n $(JOBS) --dist loadscope -m "not slow"

test-slow: $(VENV)/.test  ## the tests that start many processes: the GPU branches on the CPU, nbval's gpu tag, the website
	$(PY) -m pytest -n $(JOBS) --dist loadscope -m slow tests

lint: $(VENV)/.test  ## ruff over src/, tests/ and tools/ (the rules in pyproject.toml)
	$(PY) -m ruff check

execute: $(VENV)/.test  ## re-execute every notebook from a clean kernel, then regenerate navigation and tables
	$(PY) -m tools.execute notebooks notebooks/solutions notebooks/appendix
	$(PY) -m tools.course write

docs: $(VENV)/.test  ## build the website into site/ from the stored outputs (needs npm once)
	$(PY) -m tools.build_docs

pins:  ## re-resolve the tested versions in a scratch venv and rewrite requirements/constraints.txt
	$(PYTHON) -m tools.refresh_pins

clean:  ## remove .venv and site/
	rm -rf $(VENV) site

gpu-wheels:  ## on a networked machine: download into wheelhouse/ what the GPU pass installs offline
	bash tools/gpu_pass.sh wheels

gpu-pass:  ## on a CUDA machine: run every notebook with the GPU cells live, into gpu-pass/ (docs/gpu.md)
	bash tools/gpu_pass.sh run $(GPU_PASS_ARGS) gpu-pass

colab-check:  ## run every notebook as on Colab: its Python 3.13 and versions in .colab-venv/, each notebook alone (docs/colab.md)
	$(PYTHON) -m tools.colab_check $(COLAB_CHECK_ARGS)

.PHONY: workshop
workshop: $(VENV)/.test  ## build the slides and the handout into docs/workshop/ from the notebooks
	$(PY) -m tools.workshop write

.PHONY: wheelhouse wheelhouse-check
wheelhouse:  ## on a networked machine: every wheel make lab installs, for Linux, macOS and Windows, into room-wheels/ (docs/offline.md)
	$(PYTHON) -m tools.wheelhouse $(WHEELHOUSE_ARGS)

wheelhouse-check:  ## a wheelhouse for this machine only, then a fresh copy installed from it with the network off, and lesson 00 run (docs/offline.md)
	$(PYTHON) -m tools.wheelhouse --check $(WHEELHOUSE_ARGS)

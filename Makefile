# The course's commands. `make lab` and `make test` are all a new reader needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
JOBS   ?= 2
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

.PHONY: help lab test test-with test-torch-newest test-unit test-notebooks test-browser browser docs test-gpu gpu-wheels record-gpu gpu-rehearsal gpu-data test-gpu-data execute nav pins clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's/:.*## /\t/'

# The virtual environment is (re)built when it is missing or the pins change.
$(STAMP): pyproject.toml requirements/constraints.txt
	@test -x $(PY) || $(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "The course needs Python 3.11 or newer (its pinned numpy and ipython do); $(PYTHON) is " + sys.version.split()[0] + ". Install a newer one (pyenv, or your system packages) and run, for example: make test PYTHON=python3.11")'
	@test -x $(PY) || $(PYTHON) -c 'import sys; v = sys.version_info[:2]; v > (3, 12) and print("Note: Python %d.%d is newer than those the course is tested with (3.11 and 3.12); it may work." % v)'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c requirements/constraints.txt -e ".[test]"
	@# ipykernel's installer leaves an empty tmp*_kernels folder in TMPDIR: give it one of its own
	scratch=$$(mktemp -d) && TMPDIR=$$scratch $(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (course)" >/dev/null; status=$$?; rm -rf "$$scratch"; exit $$status
	$(PY) -c "import matplotlib.pyplot"  # build the font cache now, not inside a lesson
	touch $(STAMP)

lab: $(STAMP)  ## set up .venv when missing, then open JupyterLab on notebooks/
	cd notebooks && $(abspath $(VENV))/bin/jupyter lab 00_start_here.ipynb $(LAB_ARGS)

test: $(STAMP)  ## set up .venv when missing, then run every test (unit tests and nbval)
	$(PY) -m pytest -n $(JOBS) --dist loadscope

# Another Python or torch: every test again in an environment of its own (.venv-py<X.Y>-torch-<V>/),
# with every other package at the tested pins. The newest torch the project's machines can install
# is a CUDA build from PyPI, which runs on a CPU. pip honours PIP_FIND_LINKS for wheels on disk.
TORCH ?= 2.14.1
TORCH_NEWEST ?= 2.14.1
OTHER = .venv-py$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')-torch-$(TORCH)
test-with:  ## every test again with another torch (TORCH=2.14.1) and Python (PYTHON=python3.12), in its own .venv-py*-torch-*
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "The course needs Python 3.11 or newer; $(PYTHON) is " + sys.version.split()[0])'
	test -x $(OTHER)/bin/python || $(PYTHON) -m venv $(OTHER)
	grep -v '^torch==' requirements/constraints.txt > $(OTHER)/constraints.txt
	$(OTHER)/bin/python -m pip install --quiet --upgrade pip
	$(OTHER)/bin/python -m pip install --quiet -c $(OTHER)/constraints.txt -e ".[test]" torch==$(TORCH)
	scratch=$$(mktemp -d) && TMPDIR=$$scratch $(OTHER)/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (course, torch $(TORCH))" >/dev/null; status=$$?; rm -rf "$$scratch"; exit $$status
	$(OTHER)/bin/python -c "import matplotlib.pyplot"
	$(OTHER)/bin/python -m pytest -n $(JOBS) --dist loadscope

test-torch-newest:  ## every test again with the newest torch tried here (TORCH_NEWEST, 2.14.1), in its own environment
	$(MAKE) test-with TORCH=$(TORCH_NEWEST)

test-unit: $(STAMP)  ## only the helper and repository tests
	$(PY) -m pytest -n $(JOBS) --dist loadscope tests

test-notebooks: $(STAMP)  ## only nbval over the notebooks
	$(PY) -m pytest -n $(JOBS) --dist loadscope notebooks

test-browser: $(STAMP)  ## only the browser tests (the built site and JupyterLab, in headless Chromium)
	$(PY) -m pytest -rs tests/test_browser.py

browser:  ## install headless Chromium and its driver from Debian/Ubuntu packages (needs root and apt)
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then echo "chromium and chromedriver are installed"; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  apt-get install -y -q chromium chromium-driver >/dev/null || (apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null); \
	else echo "no root or no apt-get: install chromium and chromedriver yourself; until then the browser tests are skipped (and say so)"; fi

docs: $(STAMP)  ## build the website (Sphinx, myst-nb, Book Theme) into site/ from the stored outputs (no re-execution)
	$(PY) tools/build_docs.py

# The GPU side runs on the GPU machine's own Python (with its CUDA build of torch), not .venv.
GPU_PYTHON ?= python3

test-gpu:  ## on a CUDA machine: every test with the GPU cells live (offline from wheelhouse/; GPU_ONLINE=1 allows PyPI)
	$(GPU_PYTHON) tools/gpu.py test $(if $(GPU_ONLINE),--online)

gpu-wheels:  ## on a networked machine: download what test-gpu needs for an offline GPU machine
	$(PYTHON) tools/gpu.py gather --python-version $(or $(GPU_PYTHON_VERSION),3.12)

record-gpu:  ## on a CUDA machine: measure and write the recorded GPU reference data
	PYTHONPATH=src $(GPU_PYTHON) tools/record_gpu.py

gpu-rehearsal:  ## on a CPU: the GPU pass (tools/gpu_pass.sh) rehearsed with the GPU machine's software only
	bash tools/rehearse_gpu.sh

gpu-data: $(STAMP)  ## after a GPU pass: install its recording (FROM=OUTDIR) and re-execute the lessons that show it
	$(if $(FROM),,$(error give the GPU pass's output folder: make gpu-data FROM=OUTDIR))
	$(PY) tools/gpu_data.py install $(FROM)
	$(PY) tools/gpu_data.py refresh

test-gpu-data: $(STAMP)  ## nbval over the lessons with the recorder's dry-run data installed as if real (minutes)
	GPU_DATA_NBVAL=1 $(PY) -m pytest -p no:cacheprovider -rs tests/test_gpu_data.py

nav: $(STAMP)  ## regenerate navigation, the lesson map and the README table
	$(PY) tools/course.py write

execute: $(STAMP) nav  ## re-execute every notebook from a clean kernel and save its outputs
	$(PY) tools/execute.py notebooks notebooks/solutions notebooks/appendix
	$(PY) tools/course.py write

pins:  ## re-resolve the tested versions in a scratch venv and rewrite requirements/constraints.txt
	$(PYTHON) tools/refresh_pins.py

clean:  ## remove the virtual environment
	rm -rf $(VENV)

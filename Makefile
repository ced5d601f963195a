# Two commands do everything on a fresh machine:
#   make demo   set up .venv and run the main job on the bundled demo data
#   make test   set up .venv (with test tools) and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch: an unpinned torch pulls several GB of CUDA wheels on a CPU machine.
# On a GPU machine: make TORCH_SPEC="torch" ...
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?= -q -n 2

.PHONY: demo test setup clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(BIN)/qgen demo --out qgen-out

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python benchmarks/preprocess_bench.py

clean:
	rm -rf $(VENV) qgen-out .pytest_cache

# One set of commands, used by developers and CI alike.
#   make demo   set up everything, then render the demo model to docs/images/demo.svg
#   make test   set up everything, lint and format-check (ruff), type-check (mypy), then run the whole test suite
#   make bench  set up everything (plus torchview), then print the benchmark table
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0

.PHONY: setup demo test bench clean format

setup: $(VENV)/.installed graphviz

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# a CPU build of torch first, so nothing below pulls CUDA packages
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# the Graphviz `dot` program: system package where we may install one, else graphviz-pure
graphviz: $(VENV)/.installed
	@command -v dot >/dev/null 2>&1 || ( [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && apt-get install -y -qq graphviz >/dev/null) ) || \
	  $(PY) -m pip install -q graphviz-pure || echo "warning: no Graphviz program; DOT and JSON output still work"

demo: setup
	$(PY) -m tensorview.demo docs/images/demo.svg

test: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy tensorview
	$(PY) -m pytest

# rewrite the tree in the project's format (what `make test` checks)
format: setup
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

bench: setup
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info

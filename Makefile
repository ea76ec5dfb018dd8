# One set of commands, used by developers and CI alike.
#   make demo   set up everything, then render the demo model to docs/images/demo.svg
#   make test   set up everything, lint and format-check (ruff), type-check (mypy), then run the whole test suite
#   make bench  set up everything (plus torchview), then print the benchmark table
#   make test-torch TORCH=torch==2.15.0
#               the test suite against another torch, in its own virtualenv (.venv-torch)
#   make test-latest
#               the test suite against the newest release of every dependency but torch, in its
#               own virtualenv (.venv-latest): what the lock will meet next (drift printed first)
#   make lock   rewrite requirements/lock.txt from .venv-latest (after `make test-latest` passed)
#   make vendor refresh the viewer's vendored elkjs and dagre from the npm registry
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0
# PyTorch's CPU wheel index: used for torch when it answers (tools/torch_index.py probes it
# with a 3 s limit), else pip's configured index as before
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_VENV  ?= .venv-torch
LATEST_VENV ?= .venv-latest
# exact versions of everything installed besides torch (a pip constraints file; tools/lock.py):
# what passed yesterday passes today. `LOCK=` (empty) installs the newest versions instead.
LOCK ?= requirements/lock.txt
CONSTRAINTS = $(if $(LOCK),-c $(LOCK))
# the layout engines of the HTML viewer, vendored into the package (make vendor): elkjs for
# saved pages, dagre (with graphlib built in) for notebook outputs
ELKJS_VERSION ?= 0.12.1
DAGRE_VERSION ?= 3.1.3
GRAPHLIB_VERSION ?= 4.0.6
VENDOR := tensorview/render/viewer/vendor

.PHONY: setup demo test test-torch test-latest lock bench clean format vendor chromium

setup: $(VENV)/.installed graphviz chromium

$(VENV)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	# pip and the build backend at locked versions; tensorview is built with these
	# (--no-build-isolation), not with whatever setuptools PyPI has today
	$(PY) -m pip install -q --disable-pip-version-check --upgrade $(CONSTRAINTS) pip setuptools
	# torch first, from the CPU index where reachable, so nothing below pulls CUDA packages
	# (its own dependencies are then moved to their locked versions by the next step)
	$(PY) -m pip install -q "$(TORCH)" $$($(PY) tools/torch_index.py "$(TORCH_INDEX)")
	$(PY) -m pip install -q --no-build-isolation $(CONSTRAINTS) -e '.[dev]'
	touch $@

# the Graphviz `dot` program: system package where we may install one, else graphviz-pure
graphviz: $(VENV)/.installed
	@command -v dot >/dev/null 2>&1 || ( [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && apt-get install -y -qq graphviz >/dev/null) ) || \
	  $(PY) -m pip install -q $(CONSTRAINTS) graphviz-pure || echo "warning: no Graphviz program; DOT and JSON output still work"

# headless Chromium and its driver for the viewer's browser tests: the system packages where
# we may install them (else those tests are skipped and say why)
chromium:
	@( command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 ) || \
	  ( [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) ) || \
	  echo "warning: no chromium/chromedriver; the viewer's browser tests will be skipped"

# the viewer's layout library, from the npm registry (npm pack: no install, no scripts run)
vendor:
	rm -rf build/elkjs && mkdir -p build/elkjs
	cd build/elkjs && npm pack --silent elkjs@$(ELKJS_VERSION) >/dev/null && tar xzf elkjs-$(ELKJS_VERSION).tgz
	cp build/elkjs/package/lib/elk.bundled.js $(VENDOR)/elk.bundled.js
	cp build/elkjs/package/LICENSE.md $(VENDOR)/LICENSE-elkjs.md
	echo $(ELKJS_VERSION) > $(VENDOR)/VERSION
	cd build/elkjs && npm pack --silent @dagrejs/dagre@$(DAGRE_VERSION) @dagrejs/graphlib@$(GRAPHLIB_VERSION) >/dev/null
	cd build/elkjs && mkdir -p dagre graphlib && tar xzf dagrejs-dagre-$(DAGRE_VERSION).tgz -C dagre && \
	  tar xzf dagrejs-graphlib-$(GRAPHLIB_VERSION).tgz -C graphlib
	cp build/elkjs/dagre/package/dist/dagre.min.js $(VENDOR)/dagre.min.js
	cp build/elkjs/dagre/package/LICENSE $(VENDOR)/LICENSE-dagre
	cp build/elkjs/graphlib/package/LICENSE $(VENDOR)/LICENSE-graphlib
	echo $(DAGRE_VERSION) > $(VENDOR)/VERSION-dagre
	@echo "elkjs $(ELKJS_VERSION), dagre $(DAGRE_VERSION) vendored into $(VENDOR); update the versions in $(VENDOR)/README.md"

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

# the suite on another torch, e.g. the newest: make test-torch TORCH=torch==2.15.0
# (its own virtualenv, so .venv keeps the torch CI uses; pip swaps torch in place on reruns)
test-torch:
	$(MAKE) setup VENV=$(TORCH_VENV) TORCH="$(TORCH)"
	$(TORCH_VENV)/bin/python -m pip install -q "$(TORCH)" $$($(TORCH_VENV)/bin/python tools/torch_index.py "$(TORCH_INDEX)")
	$(TORCH_VENV)/bin/python -c "import torch; print('torch', torch.__version__)"
	$(TORCH_VENV)/bin/python -m pytest

# the newest release of every dependency but torch (pinned to TORCH: a newer one would pull
# CUDA packages), in .venv-latest; `make lock` then writes these versions into the lock
test-latest:
	$(MAKE) setup VENV=$(LATEST_VENV) LOCK=
	echo "$(TORCH)" > $(LATEST_VENV)/torch-pin.txt
	$(LATEST_VENV)/bin/python -m pip install -q --upgrade --upgrade-strategy eager -c $(LATEST_VENV)/torch-pin.txt pip setuptools
	$(LATEST_VENV)/bin/python -m pip install -q --upgrade --upgrade-strategy eager --no-build-isolation \
	  -c $(LATEST_VENV)/torch-pin.txt -e '.[dev,bench]'
	$(LATEST_VENV)/bin/python tools/lock.py drift $(LATEST_VENV)/bin/python
	$(LATEST_VENV)/bin/python -m pytest

lock:
	test -x $(LATEST_VENV)/bin/python || $(MAKE) test-latest
	$(LATEST_VENV)/bin/python tools/lock.py write $(LATEST_VENV)/bin/python

bench: setup
	$(PY) -m pip install -q --no-build-isolation $(CONSTRAINTS) -e '.[bench]'
	$(PY) bench/run.py
	$(PY) bench/diff.py

clean:
	rm -rf $(VENV) $(TORCH_VENV) $(LATEST_VENV) build *.egg-info

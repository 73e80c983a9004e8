SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PY_SRC := agentloop reasoner_svc tool_svc gateway tests bench examples

.PHONY: help install proto check-proto lint format typecheck test unit bench bench-load soak run clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install agentloop with its dev tools

proto: $(STAMP) ## Regenerate the Python stubs (and .pyi type stubs) from protos/
	$(BIN)/python scripts/protogen.py

check-proto: $(STAMP) ## Fail when regenerating the stubs would change them
	$(BIN)/python scripts/check_proto.py

lint: $(STAMP) ## ruff lint + format check
	$(BIN)/ruff check $(PY_SRC) scripts
	$(BIN)/ruff format --check $(PY_SRC) scripts

format: $(STAMP) ## Apply ruff formatting and fixes
	$(BIN)/ruff check --fix $(PY_SRC) scripts
	$(BIN)/ruff format $(PY_SRC) scripts

typecheck: $(STAMP) ## mypy --strict on our packages
	$(BIN)/mypy agentloop reasoner_svc tool_svc gateway bench scripts examples

unit: $(STAMP) ## Unit tests only (no network)
	$(BIN)/pytest tests/unit -q

test: $(STAMP) check-proto lint typecheck ## The whole suite: generated-code drift, lint, types, unit + integration tests
	$(BIN)/pytest -q

bench: $(STAMP) ## Benchmarks (overhead, checkpoints, store hot path); results go to bench/results/
	$(BIN)/python -m bench.overhead
	$(BIN)/python -m bench.checkpoints
	$(BIN)/python -m bench.store_hotpath

bench-load: $(STAMP) ## Load test: 50 concurrent streaming runs for 180 s, RSS sampled; bench/results/load.json
	$(BIN)/python -m bench.load

soak: $(STAMP) ## Soak: 30 min of mixed runs, kill -9 of every service, a 60 s reasoner outage; bench/results/soak.json
	$(BIN)/python -m bench.soak --minutes 30

run: $(STAMP) ## The demo: scripted model + three services as processes + a streamed question
	$(BIN)/agentloop demo

clean: ## Remove the venv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

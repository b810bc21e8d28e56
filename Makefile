# Flowdeck: `make run` starts the server, `make test` runs every check CI runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/flowdeck serve

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check backend tests
	$(BIN)/ruff format --check backend tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/flowdeck bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

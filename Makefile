# Flowdeck: `make run` starts the server, `make test` runs every check CI runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck unit openapi-viewer frontend frontend-lint frontend-test api-types check-api-types e2e chromium bench chaos clean

# The editor (frontend/) is built by Vite into static/, which `flowdeck serve` serves at /.
# It is rebuilt only when a source is newer than static/index.html; node_modules is reinstalled
# (npm ci, from package-lock.json) only when the lock file is newer than the last install.
NPM ?= npm
NODE_STAMP := frontend/node_modules/.installed-stamp
FRONTEND_SOURCES := $(shell find frontend/src -type f 2>/dev/null) frontend/index.html frontend/embed.html frontend/package.json \
	frontend/tsconfig.json frontend/vite.config.ts

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(NODE_STAMP): frontend/package-lock.json
	cd frontend && $(NPM) ci --no-audit --no-fund
	touch $(NODE_STAMP)

static/index.html: $(NODE_STAMP) $(FRONTEND_SOURCES)
	cd frontend && $(NPM) run build

frontend: static/index.html

# /schema's viewer (Swagger UI) is the npm package swagger-ui-dist (pinned in frontend/package.json), copied into
# the Python package at build time rather than committed: `flowdeck serve` serves it at /schema/assets, offline.
VIEWER := backend/flowdeck/api/openapi_viewer
VIEWER_FILES := swagger-ui-bundle.js swagger-ui-standalone-preset.js swagger-ui.css favicon-32x32.png LICENSE NOTICE \
	swagger-ui-bundle.js.LICENSE.txt swagger-ui-standalone-preset.js.LICENSE.txt

$(VIEWER)/swagger-ui-bundle.js: $(NODE_STAMP)
	cd frontend/node_modules/swagger-ui-dist && cp $(VIEWER_FILES) ../../../$(VIEWER)/

openapi-viewer: $(VIEWER)/swagger-ui-bundle.js

run: $(STAMP) frontend openapi-viewer
	$(BIN)/flowdeck serve

test: lint typecheck unit check-api-types frontend-lint frontend-test e2e

# The editor's REST types (frontend/src/generated/api.ts) are written by openapi-typescript from the OpenAPI
# document the app serves at /schema/openapi.json (written by `flowdeck generate --openapi`, no server needed);
# the Socket.IO payloads and statuses by `flowdeck generate`. `api-types` rewrites them all; `check-api-types`
# fails when a committed file differs from what the current backend gives.
API_DOC := frontend/node_modules/.cache/flowdeck/openapi.json

api-types: $(STAMP) $(NODE_STAMP)
	@mkdir -p $(dir $(API_DOC))
	$(BIN)/flowdeck generate --openapi $(API_DOC)
	cd frontend && $(NPM) run -s api-types
	$(BIN)/flowdeck generate

check-api-types: $(STAMP) $(NODE_STAMP)
	@mkdir -p $(dir $(API_DOC))
	$(BIN)/flowdeck generate --openapi $(API_DOC)
	cd frontend && $(NPM) run -s api-types:check
	$(BIN)/flowdeck generate --check

# ESLint (eslint.config.js: typescript-eslint and the React hooks rules).
frontend-lint: $(NODE_STAMP)
	cd frontend && $(NPM) run -s lint

# Vitest: the editor's pure graph logic (handles, cycle check, undo stack, conversion, run reducer).
frontend-test: $(NODE_STAMP)
	cd frontend && $(NPM) test

# Playwright (Python) against a real `flowdeck serve`, driving Debian's /usr/bin/chromium
# (installed by `chromium` when missing and this user may; otherwise it says the command to run).
e2e: $(STAMP) frontend openapi-viewer chromium
	$(BIN)/pytest e2e -n $(E2E_PROCESSES) --dist loadfile

chromium:
	@.ci/ensure-chromium

lint: $(STAMP)
	$(BIN)/ruff check backend tests e2e
	$(BIN)/ruff format --check backend tests e2e

typecheck: $(STAMP)
	$(BIN)/mypy

# The suite's tests mostly wait (on servers they start, timers, PostgreSQL), so pytest-xdist runs them in
# TEST_PROCESSES processes, a test file per process at a time (each has its own PostgreSQL database and ports):
# 8 minutes instead of 22 on 2 cores. `.venv/bin/pytest tests/…` still runs any part in one process.
TEST_PROCESSES ?= 3
E2E_PROCESSES ?= 2

unit: $(STAMP) openapi-viewer
	@.ci/ensure-wrk
	$(BIN)/pytest -n $(TEST_PROCESSES) --dist loadfile

bench: $(STAMP)
	$(BIN)/flowdeck bench

# The chaos suite (tests/chaos, docs/operations.md "The chaos suite"): MINUTES of random faults on PostgreSQL, then
# as long on SQLite, every invariant checked after each. `make test` runs a short version (25 s and 15 s of faults).
MINUTES ?= 5
chaos: $(STAMP)
	FLOWDECK_CHAOS_SECONDS=$$(( $(MINUTES) * 60 )) $(BIN)/pytest tests/chaos -s -p no:cacheprovider

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache frontend/node_modules static e2e/screenshots
	cd $(VIEWER) && rm -f $(VIEWER_FILES)

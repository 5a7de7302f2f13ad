# The one gate: `make check` (format, lint, types, size, tests). CI runs it through .ci/run.
PY ?= python
export PYTHONDONTWRITEBYTECODE = 1

.PHONY: check lint size test test-gpu

check: lint size test

lint:
	$(PY) -m ruff format --check src tests problems bench
	$(PY) -m ruff check src tests problems bench
	$(PY) -m mypy

# src/rung's line budget and per-module limit (tests/size_gate.py says why and where it is set)
size:
	$(PY) tests/size_gate.py

test:
	$(PY) -m pytest -n 2 --dist loadfile -q

test-gpu:
	$(PY) -m pytest -m gpu -q

# The one gate: `make check` (format, lint, types, tests). CI runs it through .ci/run.
PY ?= python
export PYTHONDONTWRITEBYTECODE = 1

.PHONY: check lint test test-gpu

check: lint test

lint:
	$(PY) -m ruff format --check src tests problems bench
	$(PY) -m ruff check src tests problems bench
	$(PY) -m mypy

test:
	$(PY) -m pytest -n 2 --dist loadfile -q

test-gpu:
	$(PY) -m pytest -m gpu -q

"""How a judge-side rung says it did not pass: raise `Failed` or `Skipped` with figures."""

from __future__ import annotations

from typing import Any


class Failed(Exception):
    def __init__(self, message: str, metrics: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metrics = metrics or {}


class Skipped(Exception):
    def __init__(self, message: str, metrics: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metrics = metrics or {}

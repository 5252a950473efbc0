"""The placeholder ``--redact`` writes in place of a value it hides (`live.redact_paths`,
which re-exports it): here apart, so that what reads a recording knows it without importing
any part of the live proxy."""

from __future__ import annotations

__all__ = ["REDACTED"]

REDACTED = "«redacted»"

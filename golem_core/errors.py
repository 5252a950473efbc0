"""The one exception tree of golem_core.

Handlers raise `GolemError` subclasses; the dispatcher turns each into the GOLEM domain code it
names. Codec problems seen by the blocking adapter are `WireError`s. Decoders never raise: they
report bad input as events (see `framing`), so these exceptions are for code that chose to stop.
"""

from __future__ import annotations

from typing import Any, Optional


class GolemCoreError(Exception):
    """Base of every exception golem_core raises."""


class GolemError(GolemCoreError):
    """A handler-level failure that maps to one GOLEM domain error code."""

    code = "INTERNAL_ERROR"

    def __init__(self, message: str, details: Optional[dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidParams(GolemError):
    """A parameter is missing, of the wrong type or out of range."""

    code = "INVALID_PARAMS"

    def __init__(
        self, message: str, param: Optional[str] = None, details: Optional[dict[str, Any]] = None
    ) -> None:
        merged = dict(details or {})
        if param is not None:
            merged.setdefault("param", param)
        super().__init__(message, merged or None)
        self.param = param


class ObjectNotFound(GolemError):
    """A GUID does not name an object in the document."""

    code = "OBJECT_NOT_FOUND"


class OperationFailed(GolemError):
    """The geometry kernel returned null or false."""

    code = "OPERATION_FAILED"


class UiTimeout(GolemError):
    """The UI thread did not run the handler within the allowed time."""

    code = "TIMEOUT"


class MethodNotFound(GolemError):
    """The method is not in the dispatcher's registry."""

    code = "NOT_FOUND"


class NotImplementedMethod(GolemError):
    """The method is known but not modelled (the plugin raises NotImplementedError)."""

    code = "NOT_IMPLEMENTED"


class WireError(GolemCoreError):
    """A framing or decoding problem met by a blocking reader that cannot go on."""


class FrameTooLarge(WireError):
    """A frame header (or line) declared more than the configured cap."""

    def __init__(self, declared: int, limit: int) -> None:
        super().__init__(f"frame of {declared} bytes exceeds the {limit}-byte limit")
        self.declared = declared
        self.limit = limit


class TruncatedFrame(WireError):
    """The peer closed the stream in the middle of a frame."""

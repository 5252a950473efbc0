"""How a live session that could not start is told: the listen or recording error it started
with, unwrapped from trio's exception group, as one line (`os_problem`). ``proxy`` with or
without its observer in a process of its own, and under the TUI, word it the same way."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Optional, TypeVar

import trio

from ._common import CommandError, error_line

__all__ = ["os_problem", "run_session", "startup_error"]

T = TypeVar("T")


def run_session(record_path: Optional[str], serve: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(serve, *args)``, returning what it returns. Raises CommandError when the
    session could not start (a port in use, the recording at ``record_path``); anything else
    it raised, unchanged."""
    try:
        return trio.run(serve, *args)
    except BaseException as exc:
        failed = startup_error(exc)
        if failed is None:
            raise
        raise CommandError(os_problem(failed, record_path)) from None


def startup_error(exc: BaseException) -> Optional[OSError]:
    """The ListenError (or OSError, for the recording file) a session failed to start with.
    It is raised inside the session's nursery, so trio wraps it in an exception group."""
    while not isinstance(exc, OSError):
        inner = getattr(exc, "exceptions", None)
        if not inner or len(inner) != 1:
            return None
        exc = inner[0]
    return exc


def os_problem(exc: OSError, record_path: Optional[str] = None) -> str:
    """One line for an OSError at setup or startup: the listener's own sentence, or the file
    and what is wrong with it (an existing recording suggests --overwrite)."""
    line = error_line(exc) or str(exc)
    if isinstance(exc, FileExistsError) and record_path is not None:
        return f"{line} (pass --overwrite to replace it)"
    return line

"""The real server's envelopes (``server.py`` on 9876, ``grasshopper/gh_server.py`` on 9877).

The real plugin has two layers. The server's own registry holds only the built-ins (``ping``,
``shutdown``, ``list_methods``); every other name goes to the dispatcher (``dispatcher.py``),
whose error envelope the server then flattens:

- a dispatcher error (unknown method, or a handler that raised) becomes
  ``{"code": -32000, "message": …}``: no ``details``, the domain code is gone;
- a dispatcher success is sent as ``result or {}`` (an empty list or 0 becomes ``{}``);
- handlers of the wrapped modules (manipulation, operations) never raise: their error dict is
  the *result* of a success envelope (see `wrapped`);
- the UI thread not answering within 30 s escapes both and is sent as -32603
  ``"Internal error: run_on_ui_thread: …"``.

Reading: a frame that is not UTF-8 JSON ends the connection without an answer; so does a
JSON value that is not an object (the real server's accept thread dies on it; here only that
connection ends, see docs/headless-plugin.md). ``id`` may be anything or missing (``null``
is echoed), ``method`` defaults to ``""``, ``params`` that are not an object become ``{}``.
"""

from __future__ import annotations

import functools
import json
import traceback
from typing import Any, Optional

from golem_core.dispatcher import Dispatcher, Handler
from golem_core.errors import UiTimeout
from golem_core.messages import Malformed, Request
from golem_core.profiles import GOLEM

from .kit import GolemFailure

__all__ = [
    "GhServerErrors",
    "MainServerErrors",
    "Responder",
    "dispatcher_message",
    "wrapped",
    "wrapped_table",
]

APPLICATION_ERROR = -32000
INTERNAL_ERROR = -32603
MAIN_UI_TIMEOUT = (
    "Internal error: run_on_ui_thread: UI thread did not respond within 30 seconds. "
    "Rhino may be busy or a modal dialog may be blocking execution."
)
GH_UI_TIMEOUT = "GH server: UI thread did not respond within 30 seconds."


def dispatcher_message(method: str, exc: Exception) -> str:
    """The message the real dispatcher puts in its error for a handler that raised ``exc``
    (the server keeps only this message)."""
    if isinstance(exc, NotImplementedError):
        return str(exc) or f"Method not implemented: {method}"
    if isinstance(exc, (ValueError, TypeError, KeyError)):
        return str(exc)
    return f"Unhandled exception in handler '{method}': {exc!r}"


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"id": request_id, "result": None, "error": {"code": code, "message": message}}


class MainServerErrors:
    """The main channel (``server.py``)."""

    timeout_message = MAIN_UI_TIMEOUT

    def success(self, request: Request, result: Any, builtin: bool) -> dict[str, Any]:
        if builtin:
            return GOLEM.success(request.id, {} if result is None else result)
        return GOLEM.success(request.id, result or {})

    def method_not_found(self, request: Request) -> dict[str, Any]:
        return _error(request.id, APPLICATION_ERROR, f"Method not found: {request.method}")

    def handler_failed(self, request: Request, exc: Exception) -> dict[str, Any]:
        if isinstance(exc, UiTimeout):
            return _error(request.id, INTERNAL_ERROR, self.timeout_message)
        return _error(request.id, APPLICATION_ERROR, dispatcher_message(request.method, exc))

    def unparseable(self, message: Malformed) -> Optional[dict[str, Any]]:
        return None

    def unencodable(self, request_id: Any, exc: Exception) -> Optional[dict[str, Any]]:
        return None  # the real send raises TypeError and the connection goes


class GhServerErrors(MainServerErrors):
    """The Grasshopper channel (``gh_server.py``): the same dispatcher, but a success is sent
    as ``result`` unless it is None, and a UI timeout has its own message."""

    timeout_message = GH_UI_TIMEOUT

    def success(self, request: Request, result: Any, builtin: bool) -> dict[str, Any]:
        return GOLEM.success(request.id, {} if result is None else result)


def wrapped_table(table: dict[str, Handler]) -> dict[str, Handler]:
    """``table`` with every handler `wrapped`, as the real modules that wrap them all."""
    return {name: wrapped(handler) for name, handler in table.items()}


def wrapped(handler: Handler) -> Handler:
    """The real ``wrap_handler``: exceptions become an error dict returned as the result."""

    @functools.wraps(handler)
    def wrapper(params: dict[str, Any]) -> Any:
        try:
            return handler(params)
        except GolemFailure as exc:
            return exc.to_dict()
        except (ValueError, TypeError) as exc:
            return {
                "code": "INVALID_PARAMS",
                "message": str(exc),
                "details": {"exception_type": type(exc).__name__},
            }
        except KeyError as exc:
            text = str(exc).strip("'\"")
            if "not found" in text.lower():
                return {"code": "OBJECT_NOT_FOUND", "message": text}
            return {
                "code": "INVALID_PARAMS",
                "message": f"Missing or invalid key: {text}",
                "details": {"exception_type": "KeyError"},
            }
        except TimeoutError as exc:
            return {"code": "TIMEOUT", "message": str(exc) or "Operation timed out"}
        except NotImplementedError as exc:
            return {"code": "NOT_IMPLEMENTED", "message": str(exc) or "Not implemented"}
        except Exception as exc:
            return {
                "code": "INTERNAL_ERROR",
                "message": f"Unhandled exception: {exc!r}",
                "details": {"traceback": traceback.format_exc()},
            }

    return wrapper


class Responder:
    """Bytes in, framed bytes out (None: close the connection), as the real server loop reads
    a request and sends its answer."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def __call__(self, payload: bytes) -> Optional[bytes]:
        try:
            obj = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            # The real loop's "unexpected read error": no answer, the connection closed.
            return None
        if not isinstance(obj, dict):
            return None
        request_id = obj.get("id")
        method = obj.get("method", "")
        params = obj.get("params", {})
        if not isinstance(params, dict):
            params = {}
        if not isinstance(method, str):
            try:
                hash(method)
            except TypeError as exc:
                # `method in registry` raises; the server loop answers -32603.
                return self.dispatcher.encode_reply(
                    request_id, _error(request_id, INTERNAL_ERROR, f"Internal error: {exc}")
                )
            reply = _error(request_id, APPLICATION_ERROR, f"Method not found: {method}")
            return self.dispatcher.encode_reply(request_id, reply)
        request = Request(request_id, method, params, obj)
        return self.dispatcher.encode_reply(request_id, self.dispatcher.dispatch(request))

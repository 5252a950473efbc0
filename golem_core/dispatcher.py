"""The dispatcher: method name → handler, with the GOLEM plugin's built-ins and error mapping.

An object you construct (no module-level registry, no registration by import side effect).
`dispatch()` turns a typed request into a response envelope and never raises: handler
exceptions become GOLEM domain errors, exactly as the plugin's dispatcher reports them.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, Optional, TypeVar

from .errors import GolemError, InvalidParams, UiTimeout
from .messages import ABSENT, Malformed, Message, Request, Role
from .profiles import GOLEM, Profile

__all__ = ["Dispatcher", "Handler", "UiRunner", "UiTimeout", "require"]

Handler = Callable[[dict[str, Any]], Any]
UiRunner = Callable[[Callable[[], Any], float], Any]
"""``runner(call, timeout)`` runs ``call`` on the UI thread and returns its result; it raises
`UiTimeout` when the UI thread did not run it within ``timeout`` seconds."""

F = TypeVar("F", bound=Handler)

BUILTINS = ("ping", "shutdown", "list_methods")
DEFAULT_UI_TIMEOUT = 30.0


class Dispatcher:
    """Routes requests to handlers. Thread-safe for dispatching once registration is done."""

    def __init__(
        self,
        *,
        profile: Profile = GOLEM,
        ui_runner: Optional[UiRunner] = None,
        ui_timeout: float = DEFAULT_UI_TIMEOUT,
        include_traceback: bool = True,
        on_shutdown: Optional[Callable[[], None]] = None,
    ) -> None:
        self.profile = profile
        self.ui_runner = ui_runner
        self.ui_timeout = ui_timeout
        self.include_traceback = include_traceback
        self.on_shutdown = on_shutdown
        self.shutdown_requested = False
        self._handlers: dict[str, Handler] = {}
        self._on_ui_thread: dict[str, bool] = {}
        self._handlers["ping"] = self._ping
        self._handlers["shutdown"] = self._shutdown
        self._handlers["list_methods"] = self._list_methods
        for name in BUILTINS:
            self._on_ui_thread[name] = False

    # -- registration ------------------------------------------------------------------------
    def register(self, name: str, handler: Handler, *, ui_thread: bool = True) -> None:
        """Register ``handler`` for ``name``. Raises ValueError when the name is taken."""
        if not name or not isinstance(name, str):
            raise ValueError("method name must be a non-empty string")
        if name in self._handlers:
            raise ValueError(f"method {name!r} is already registered")
        self._handlers[name] = handler
        self._on_ui_thread[name] = ui_thread

    def method(self, name: str, *, ui_thread: bool = True) -> Callable[[F], F]:
        """Decorator form of `register`."""

        def decorate(handler: F) -> F:
            self.register(name, handler, ui_thread=ui_thread)
            return handler

        return decorate

    def methods(self) -> list[str]:
        """Every registered method name, built-ins included, sorted."""
        return sorted(self._handlers)

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    # -- dispatching -------------------------------------------------------------------------
    def dispatch(self, request: Request) -> dict[str, Any]:
        """Run the handler for ``request`` and return the response envelope. Never raises."""
        handler = self._handlers.get(request.method)
        if handler is None:
            return self.profile.method_not_found(request.id, request.method)
        params = request.params if isinstance(request.params, dict) else {}
        try:
            if self.ui_runner is not None and self._on_ui_thread[request.method]:
                result = self.ui_runner(lambda: handler(params), self.ui_timeout)
            else:
                result = handler(params)
        except GolemError as exc:
            return self.profile.error(request.id, exc.code, exc.message, exc.details)
        except NotImplementedError as exc:
            message = str(exc) or f"{request.method} is not implemented"
            return self.profile.error(
                request.id, "NOT_IMPLEMENTED", message, {"method": request.method}
            )
        except Exception as exc:  # the plugin's contract: a handler bug is an answer, not a crash
            details: dict[str, Any] = {"method": request.method, "type": type(exc).__name__}
            if self.include_traceback:
                details["traceback"] = traceback.format_exc()
            return self.profile.error(
                request.id, "INTERNAL_ERROR", f"{type(exc).__name__}: {exc}", details
            )
        # The spec: `result` is never absent on success, at minimum {}. Only None becomes {}.
        return self.profile.success(request.id, {} if result is None else result)

    def dispatch_message(self, message: Message) -> Optional[dict[str, Any]]:
        """Answer any typed message as the plugin's server loop does: requests are dispatched,
        malformed requests get the profile's reply (None means close the connection)."""
        if isinstance(message, Request):
            return self.dispatch(message)
        if isinstance(message, Malformed):
            return self.profile.unparseable_request(message)
        return None

    def respond(self, payload: bytes) -> Optional[bytes]:
        """Bytes in, framed bytes out: type the payload, dispatch it and encode the reply.
        A result that cannot be serialised becomes the server loop's -32603 error."""
        message = self.profile.parse(payload, Role.REQUEST)
        reply = self.dispatch_message(message)
        if reply is None:
            return None
        try:
            return self.profile.encode(reply)
        except (TypeError, ValueError) as exc:
            fallback = self.profile.error(message.id, -32603, f"Internal error: {exc}")
        try:
            return self.profile.encode(fallback)
        except (TypeError, ValueError):
            # The id itself cannot be written back (a lone surrogate, say): answer as for a
            # request whose id could not be read.
            return self.profile.encode(
                self.profile.error(None, -32603, fallback["error"]["message"])
            )

    # -- built-ins ---------------------------------------------------------------------------
    def _ping(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"alive": True}

    def _shutdown(self, params: dict[str, Any]) -> dict[str, Any]:
        self.shutdown_requested = True
        if self.on_shutdown is not None:
            self.on_shutdown()
        return {"shutdown": "initiated"}

    def _list_methods(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"methods": self.methods()}


def require(params: dict[str, Any], name: str, kind: Any = ABSENT) -> Any:
    """Return ``params[name]``; raise `InvalidParams` naming the parameter when it is missing
    (or, with ``kind``, not an instance of it; bools never count as numbers)."""
    if name not in params or params[name] is None:
        raise InvalidParams(f"Required parameter '{name}' is missing.", name)
    value = params[name]
    if kind is not ABSENT:
        numeric = kind in (int, float) or kind == (int, float)
        if (numeric and isinstance(value, bool)) or not isinstance(value, kind):
            raise InvalidParams(f"Parameter '{name}' has the wrong type.", name)
    return value

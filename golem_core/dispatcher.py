"""The dispatcher: method name → handler, with built-ins and a pluggable error policy.

An object you construct (no module-level registry, no registration by import side effect).
`dispatch()` turns a typed request into a response envelope and never raises. What a failure
looks like on the wire (an unknown method, a handler that raised, a reply that cannot be
encoded) is not decided here but by the `ErrorPolicy` the dispatcher is built with: the
default, `DomainErrors`, answers with the profile's envelopes and the codes the golem_core
exception tree names; a plugin that mirrors another server passes its own policy.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, Optional, Protocol

from .errors import GolemError, NotImplementedMethod, UiTimeout
from .messages import Malformed, Message, Request, Role
from .profiles import GOLEM, Profile
from .profiles.golem import INTERNAL_ERROR_CODE

__all__ = [
    "Dispatcher",
    "DomainErrors",
    "ErrorPolicy",
    "Handler",
    "UiRunner",
    "UiTimeout",
]

Handler = Callable[[dict[str, Any]], Any]
UiRunner = Callable[[Callable[[], Any], float], Any]
"""``runner(call, timeout)`` runs ``call`` on the UI thread and returns its result; it raises
`UiTimeout` when the UI thread did not run it within ``timeout`` seconds."""

BUILTINS = ("ping", "shutdown", "list_methods")
DEFAULT_UI_TIMEOUT = 30.0


class ErrorPolicy(Protocol):
    """How a dispatcher answers what is not a plain success. Every method returns a whole
    response envelope (a dict) for ``profile.encode``."""

    def success(self, request: Request, result: Any, builtin: bool) -> dict[str, Any]:
        """The envelope of a handler's ``result`` (``builtin``: one of the dispatcher's own)."""

    def method_not_found(self, request: Request) -> dict[str, Any]:
        """The answer to a method nobody registered."""

    def handler_failed(self, request: Request, exc: Exception) -> dict[str, Any]:
        """The answer when the handler (or the UI runner around it) raised ``exc``."""

    def unparseable(self, message: Malformed) -> Optional[dict[str, Any]]:
        """The answer to a request that could not be read (None: close the connection)."""

    def unencodable(self, request_id: Any, exc: Exception) -> Optional[dict[str, Any]]:
        """The answer when the reply could not be encoded (None: close the connection)."""


class DomainErrors:
    """The default policy: the profile's envelopes, and for handler failures the domain code
    the golem_core exception tree names (`GolemError.code`; a bare NotImplementedError counts
    as `NotImplementedMethod`, any other exception as a plain `GolemError`). A reply that
    cannot be encoded becomes ``internal_code`` with ``"Internal error: …"``."""

    def __init__(
        self,
        profile: Profile,
        *,
        internal_code: Any = INTERNAL_ERROR_CODE,
        include_traceback: bool = True,
    ) -> None:
        self.profile = profile
        self.internal_code = internal_code
        self.include_traceback = include_traceback

    def success(self, request: Request, result: Any, builtin: bool) -> dict[str, Any]:
        # The spec: `result` is never absent on success, at minimum {}. Only None becomes {}.
        return self.profile.success(request.id, {} if result is None else result)

    def method_not_found(self, request: Request) -> dict[str, Any]:
        return self.profile.method_not_found(request.id, request.method)

    def handler_failed(self, request: Request, exc: Exception) -> dict[str, Any]:
        error = self._as_golem_error(request.method, exc)
        return self.profile.error(request.id, error.code, error.message, error.details)

    def _as_golem_error(self, method: str, exc: Exception) -> GolemError:
        if isinstance(exc, GolemError):
            return exc
        if isinstance(exc, NotImplementedError):
            message = str(exc) or f"{method} is not implemented"
            return NotImplementedMethod(message, {"method": method})
        # A handler bug is an answer, not a crash.
        details: dict[str, Any] = {"method": method, "type": type(exc).__name__}
        if self.include_traceback:
            details["traceback"] = traceback.format_exc()
        return GolemError(f"{type(exc).__name__}: {exc}", details)

    def unparseable(self, message: Malformed) -> Optional[dict[str, Any]]:
        return self.profile.unparseable_request(message)

    def unencodable(self, request_id: Any, exc: Exception) -> Optional[dict[str, Any]]:
        return self.profile.error(request_id, self.internal_code, f"Internal error: {exc}")


class Dispatcher:
    """Routes requests to handlers. Thread-safe for dispatching once registration is done.

    ``errors`` decides every answer that is not a plain success (default: `DomainErrors` over
    ``profile``). ``builtins=False`` registers none of the built-ins (a channel with its own);
    ``builtins_on_ui_thread`` runs ``ping``/``shutdown``/``list_methods`` through
    the UI runner too (the real plugin does); ``list_builtins_only`` makes ``list_methods``
    answer the built-ins alone (the real plugin's server lists only its own registry)."""

    def __init__(
        self,
        *,
        profile: Profile = GOLEM,
        errors: Optional[ErrorPolicy] = None,
        ui_runner: Optional[UiRunner] = None,
        ui_timeout: float = DEFAULT_UI_TIMEOUT,
        include_traceback: bool = True,
        on_shutdown: Optional[Callable[[], None]] = None,
        builtins: bool = True,
        builtins_on_ui_thread: bool = False,
        list_builtins_only: bool = False,
    ) -> None:
        self.profile = profile
        self.errors: ErrorPolicy = (
            errors
            if errors is not None
            else DomainErrors(profile, include_traceback=include_traceback)
        )
        self.ui_runner = ui_runner
        self.ui_timeout = ui_timeout
        self.on_shutdown = on_shutdown
        self.shutdown_requested = False
        self.list_builtins_only = list_builtins_only
        self._has_builtins = builtins
        self._handlers: dict[str, Handler] = {}
        self._on_ui_thread: dict[str, bool] = {}
        if builtins:
            self._handlers["ping"] = self._ping
            self._handlers["shutdown"] = self._shutdown
            self._handlers["list_methods"] = self._list_methods
            for name in BUILTINS:
                self._on_ui_thread[name] = builtins_on_ui_thread

    def register(self, name: str, handler: Handler, *, ui_thread: bool = True) -> None:
        """Register ``handler`` for ``name``. Raises ValueError when the name is taken."""
        if not name or not isinstance(name, str):
            raise ValueError("method name must be a non-empty string")
        if name in self._handlers:
            raise ValueError(f"method {name!r} is already registered")
        self._handlers[name] = handler
        self._on_ui_thread[name] = ui_thread

    def methods(self) -> list[str]:
        """Every registered method name, built-ins included, sorted."""
        return sorted(self._handlers)

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def dispatch(self, request: Request) -> dict[str, Any]:
        """Run the handler for ``request`` and return the response envelope. Never raises."""
        method = request.method
        handler = self._handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            return self.errors.method_not_found(request)
        params = request.params if isinstance(request.params, dict) else {}
        try:
            if self.ui_runner is not None and self._on_ui_thread[method]:
                result = self.ui_runner(lambda: handler(params), self.ui_timeout)
            else:
                result = handler(params)
        except Exception as exc:
            return self.errors.handler_failed(request, exc)
        return self.errors.success(request, result, method in BUILTINS and self._has_builtins)

    def dispatch_message(self, message: Message) -> Optional[dict[str, Any]]:
        """Answer any typed message as the plugin's server loop does: requests are dispatched,
        malformed requests get the policy's reply (None means close the connection)."""
        if isinstance(message, Request):
            return self.dispatch(message)
        if isinstance(message, Malformed):
            return self.errors.unparseable(message)
        return None

    def respond(self, payload: bytes) -> Optional[bytes]:
        """Bytes in, framed bytes out: type the payload, dispatch it and encode the reply.
        A reply that cannot be encoded gets the policy's answer (None: close)."""
        message = self.profile.parse(payload, Role.REQUEST)
        reply = self.dispatch_message(message)
        if reply is None:
            return None
        return self.encode_reply(message.id, reply)

    def encode_reply(self, request_id: Any, reply: dict[str, Any]) -> Optional[bytes]:
        """``reply`` framed by the profile; when it cannot be encoded, the policy's answer
        instead (and when even that fails, the same answer with a null id)."""
        try:
            return self.profile.encode(reply)
        except (TypeError, ValueError) as exc:
            fallback = self.errors.unencodable(request_id, exc)
            failure: Exception = exc
        if fallback is None:
            return None
        try:
            return self.profile.encode(fallback)
        except (TypeError, ValueError):
            # The id itself cannot be written back (a lone surrogate, say): answer as for a
            # request whose id could not be read.
            last = self.errors.unencodable(None, failure)
            return None if last is None else self.profile.encode(last)

    def _ping(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"alive": True}

    def _shutdown(self, params: dict[str, Any]) -> dict[str, Any]:
        self.shutdown_requested = True
        if self.on_shutdown is not None:
            self.on_shutdown()
        return {"shutdown": "initiated"}

    def _list_methods(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.list_builtins_only:
            return {"methods": sorted(BUILTINS)}
        return {"methods": self.methods()}

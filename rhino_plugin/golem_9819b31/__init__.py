"""The ``golem-3dmcp@9819b31`` behaviour: the public GOLEM-3DMCP plugin at commit 9819b31, on
the wire.

Its registry holds exactly the real plugin's 135 handler names (plus ``debug.sleep`` with
``--debug-methods``); the main channel adds the real server's built-ins ``ping``, ``shutdown``
and ``list_methods`` (which lists the built-ins alone, as the real one does), the Grasshopper
channel ``gh.ping`` and ``gh.shutdown``, and both send every other name to the same
dispatcher. Envelopes are those of `envelope`.
"""

from __future__ import annotations

from typing import Callable, Optional

from golem_core.dispatcher import Dispatcher, Handler, UiRunner

from ..document import Document
from .envelope import GhServerErrors, MainServerErrors, Responder
from .methods import handler_table

__all__ = ["NAME", "Channel", "build_channels", "handler_table"]

NAME = "golem-3dmcp@9819b31"
Channel = tuple[Dispatcher, Callable[[bytes], Optional[bytes]]]


def build_channels(
    document: Document,
    *,
    allow_scripts: bool,
    debug_methods: bool,
    ui_runner: Optional[UiRunner],
    ui_timeout: float,
    on_shutdown: Optional[Callable[[], None]],
) -> tuple[Channel, Channel]:
    """The main and Grasshopper channels: ``(dispatcher, respond)`` each."""
    table = handler_table(document, allow_scripts=allow_scripts, debug_methods=debug_methods)
    main = Dispatcher(
        errors=MainServerErrors(),
        ui_runner=ui_runner,
        ui_timeout=ui_timeout,
        on_shutdown=on_shutdown,
        builtins_on_ui_thread=True,
        list_builtins_only=True,
    )
    grasshopper = Dispatcher(
        errors=GhServerErrors(), ui_runner=ui_runner, ui_timeout=ui_timeout, builtins=False
    )
    for name in sorted(table):
        main.register(name, table[name])
        grasshopper.register(name, table[name])
    # The Grasshopper server answers these two itself, off the UI thread.
    grasshopper.register("gh.ping", lambda params: {"alive": True, "server": "gh"}, ui_thread=False)
    grasshopper.register("gh.shutdown", _gh_shutdown(on_shutdown), ui_thread=False)
    return (main, Responder(main)), (grasshopper, Responder(grasshopper))


def _gh_shutdown(on_shutdown: Optional[Callable[[], None]]) -> Handler:
    def shutdown(params: dict[str, object]) -> dict[str, str]:
        if on_shutdown is not None:
            on_shutdown()
        return {"shutdown": "initiated"}

    return shutdown

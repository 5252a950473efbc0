"""`HeadlessPlugin`: the two channels, the UI thread and the document, started and stopped as one.

    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=1))
    main_addr, gh_addr = plugin.start()      # port 0 → the ports the OS picked
    ...
    plugin.stop()

Both channels share one document and one UI thread; ``options.behaviour`` says which plugin
they play (see `rhino_plugin.behaviours`). A ``shutdown`` request on either channel
is answered first, then both channels stop (`wait` returns).
"""

from __future__ import annotations

import threading
from typing import Optional, TextIO

from .behaviours import PluginOptions, build_channels
from .document import Document
from .server import ChannelServer
from .ui_thread import UiThread

__all__ = ["Address", "HeadlessPlugin", "PluginOptions"]

Address = tuple[str, int]


class HeadlessPlugin:
    """The headless plugin. Not restartable: build a new one after `stop`."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9876,
        gh_port: int = 9877,
        options: Optional[PluginOptions] = None,
        *,
        log: Optional[TextIO] = None,
    ) -> None:
        self.host = host
        self.port = port
        self.gh_port = gh_port
        self.options = options or PluginOptions()
        self.document = Document(self.options.seed)
        self._log = log
        self._ui = UiThread()
        self._shutdown_requested = threading.Event()
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._channels: list[ChannelServer] = []

    @property
    def main_address(self) -> Address:
        """The bound main-channel address. Raises RuntimeError before `start`."""
        return self._channel(0).address

    @property
    def gh_address(self) -> Address:
        """The bound Grasshopper-channel address. Raises RuntimeError before `start`."""
        return self._channel(1).address

    def _channel(self, index: int) -> ChannelServer:
        if not self._channels:
            raise RuntimeError("the plugin is not started")
        return self._channels[index]

    def start(self) -> tuple[Address, Address]:
        """Bind both channels and start serving. Returns ``(main_address, gh_address)``.

        Raises OSError when a port cannot be bound (nothing is left listening then) and
        ValueError for an unknown behaviour."""
        channels = build_channels(
            self.document,
            self.options,
            ui_runner=self._ui.run,
            on_shutdown=self._shutdown_requested.set,
        )
        servers: list[ChannelServer] = []
        try:
            for name, port, (dispatcher, respond) in zip(
                ("main", "gh"), (self.port, self.gh_port), channels
            ):
                servers.append(
                    ChannelServer(
                        name,
                        self.host,
                        port,
                        dispatcher,
                        respond,
                        after_reply=self._after_reply,
                        log=self._log,
                    )
                )
        except OSError:
            for server in servers:
                server.stop()
            raise
        self._channels = servers
        self._ui.start()
        for channel in self._channels:
            channel.start()
        return self.main_address, self.gh_address

    def _after_reply(self) -> None:
        # Called on a channel thread once a reply is sent: `shutdown` has been answered, so
        # stop everything, from another thread because stop() joins the channel threads.
        if self._shutdown_requested.is_set() and not self._stopped.is_set():
            threading.Thread(target=self.stop, name="rhino-shutdown", daemon=True).start()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the plugin has stopped (after `shutdown` or `stop`). Returns False when
        ``timeout`` elapsed first."""
        return self._stopped.wait(timeout)

    def stop(self) -> None:
        """Close both channels (the current clients too) and stop the UI thread. Idempotent."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            for channel in self._channels:
                channel.stop()
            self._ui.stop()
            self._stopped.set()

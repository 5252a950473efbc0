"""The notice of a request sent again (`r`) gives the latency of the row it came back as: the
one the proxy measured on the wire, as for every row. The TUI of an observing process sends
the request as a client of the proxy, so the sender waits two hops more than the row says;
here those hops are made slow on purpose, by a relay that holds what the sender writes."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Optional

from golem_core.profiles import GOLEM
from golem_proxy.net.addresses import Address
from golem_proxy.terminal import format_latency
from golem_proxy.testing.client import GolemClient
from golem_proxy.tui.app import GolemProxyApp

from .helpers import intercepting_source, run, select_method, wait_for

HELD = 0.3
"""How long the relay holds each chunk the sender writes before passing it on."""


class SlowRelay:
    """A loopback listener that passes each connection on to ``target`` (set once known),
    holding every chunk from its client `HELD` seconds first; answers go back at once."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.address = Address(*self.server.getsockname()[:2])
        self.target: Optional[Address] = None
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                continue
            assert self.target is not None
            upstream = socket.create_connection((self.target.host, self.target.port), timeout=5)
            for source, sink, hold in ((client, upstream, HELD), (upstream, client, 0.0)):
                pump = threading.Thread(target=self._pump, args=(source, sink, hold))
                pump.start()
                self.threads.append(pump)

    def _pump(self, source: socket.socket, sink: socket.socket, hold: float) -> None:
        source.settimeout(0.1)
        with source:
            while not self.stop.is_set():
                try:
                    chunk = source.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                time.sleep(hold)
                sink.sendall(chunk)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


@contextmanager
def slow_relay() -> Iterator[SlowRelay]:
    relay = SlowRelay()
    serving = threading.Thread(target=relay.serve)
    serving.start()
    try:
        yield relay
    finally:
        relay.stop.set()
        serving.join(5)
        for pump in relay.threads:
            pump.join(5)
        relay.server.close()


def notices(app: GolemProxyApp) -> list[str]:
    return [str(note.message) for note in app._notifications]


def test_the_notice_gives_the_new_rows_latency(plugin: Address) -> None:
    # As the TUI of an observing process has it: no control of the session, each route's
    # requests sent again as a client of the proxy (here through the slow relay).
    source, _, _ = intercepting_source(plugin)

    async def body() -> None:
        with slow_relay() as relay:
            app = GolemProxyApp(source, GOLEM, "live", route_targets={"main": relay.address})
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_for(pilot, lambda: "live on 127.0.0.1:" in app.status_bar.text)
                listen = int(app.status_bar.text.split("live on 127.0.0.1:")[1].split()[0])
                relay.target = Address("127.0.0.1", listen)
                with GolemClient("127.0.0.1", listen) as golem:
                    golem.send_command("scene.list_layers")
                await wait_for(pilot, lambda: len(app.model.flows) == 2)  # ping, list_layers
                await select_method(pilot, "scene.list_layers")
                await pilot.press("r")
                said = "flow 2 sent again as #3: ok in "
                await wait_for(
                    pilot, lambda: any(said in note for note in notices(app)), limit=4000
                )
                row = app.model.flow_numbered(3)
                assert row.latency is not None and row.latency < HELD  # the wire's, unheld
                [notice] = [note for note in notices(app) if said in note]
                assert notice == f"{said}{format_latency(row.latency)} (D: the difference)"
                # What the sender measured is not said: it waited the relay's hold too.
                assert app.last_resend is not None and app.last_resend.resent.latency > HELD
            for _ in range(1000):  # the app stopped its source on leaving: let it drain
                if source.done.is_set():
                    break
                await asyncio.sleep(0.01)

    run(body(), timeout=60)
    assert source.error is None

"""Upstream peers for relay tests: a byte-recording echo server and a GOLEM server built on the
golem_core dispatcher. Both listen on 127.0.0.1 with a free port and run in the test's nursery."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.dispatcher import Dispatcher
from golem_core.framing import Frame
from golem_core.profiles import GOLEM, Profile
from golem_proxy.net.addresses import Address


@dataclass
class EchoUpstream:
    """Echoes every byte back and keeps what each connection sent, in arrival order."""

    address: Address = field(default_factory=Address)
    received: list[bytearray] = field(default_factory=list)
    eof_seen: list[trio.Event] = field(default_factory=list)
    connections: int = 0
    echo: bool = True
    close_after: Optional[int] = None
    """Close a connection (fully) once it sent this many bytes, as a restarting plugin does."""

    async def serve(
        self, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.address = Address("127.0.0.1", listeners[0].socket.getsockname()[1])
        task_status.started(self.address)
        await trio.serve_listeners(self._handle, listeners)

    async def wait_eof(self, index: int = 0) -> bytes:
        """Wait until connection ``index`` ended; return everything it sent."""
        with trio.fail_after(10):
            while len(self.eof_seen) <= index:
                await trio.sleep(0.01)
            await self.eof_seen[index].wait()
        return bytes(self.received[index])

    async def wait_received(self, size: int, index: int = 0) -> None:
        with trio.fail_after(10):
            while len(self.received) <= index or len(self.received[index]) < size:
                await trio.sleep(0.01)

    async def _handle(self, stream: trio.SocketStream) -> None:
        buffer = bytearray()
        done = trio.Event()
        self.received.append(buffer)
        self.eof_seen.append(done)
        self.connections += 1
        try:
            async for chunk in stream:
                buffer += chunk
                if self.echo:
                    await stream.send_all(chunk)
                if self.close_after is not None and len(buffer) >= self.close_after:
                    break
        except trio.BrokenResourceError:
            pass
        finally:
            done.set()
            await stream.aclose()


@dataclass
class GolemUpstream:
    """A GOLEM server on the golem_core dispatcher: ``echo`` returns its params, ``fail``
    raises, ``slow`` sleeps ``params.seconds``. Closes a connection on an oversized header."""

    profile: Profile = GOLEM
    address: Address = field(default_factory=Address)
    dispatcher: Dispatcher = field(default_factory=Dispatcher)
    delay: Optional[float] = None

    def __post_init__(self) -> None:
        self.dispatcher.register("echo", lambda params: params)
        self.dispatcher.register("fail", _fail)

    async def serve(
        self, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.address = Address("127.0.0.1", listeners[0].socket.getsockname()[1])
        task_status.started(self.address)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        decoder = self.profile.new_decoder(skip_oversized=False)
        try:
            async for chunk in stream:
                decoder.receive_data(chunk)
                for event in decoder.events():
                    if not isinstance(event, Frame):
                        await stream.aclose()
                        return
                    reply = self.dispatcher.respond(event.payload)
                    if self.delay:
                        await trio.sleep(self.delay)
                    if reply is not None:
                        await stream.send_all(reply)
        except trio.BrokenResourceError:
            pass
        finally:
            await stream.aclose()


def _fail(params: dict[str, Any]) -> Any:
    raise RuntimeError("handler exploded")

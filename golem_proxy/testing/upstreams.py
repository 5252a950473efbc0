"""Upstreams for the tests and the robustness benchmarks, on 127.0.0.1 with a free port, run in
the caller's nursery: ``GolemUpstream`` answers GOLEM requests from the golem_core dispatcher;
``TracingUpstream`` also keeps, per connection, every byte it received and sent, so a test can
compare both sides' real streams with what the recording says they got."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.dispatcher import Dispatcher
from golem_core.framing import Frame
from golem_core.profiles import GOLEM, Profile
from golem_proxy.net.addresses import Address


@dataclass
class ListeningUpstream:
    """A server on a free port of 127.0.0.1; subclasses say what a connection gets."""

    address: Address = field(default_factory=Address)

    async def serve(
        self, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen, report the address through ``task_status``, serve until cancelled."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.address = Address("127.0.0.1", listeners[0].socket.getsockname()[1])
        task_status.started(self.address)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        raise NotImplementedError


@dataclass
class TracingUpstream(ListeningUpstream):
    """``echo`` returns its params, ``scene.delete_objects`` answers ``{"deleted": 1}``;
    everything else is method-not-found."""

    profile: Profile = GOLEM
    received: list[bytearray] = field(default_factory=list)
    sent: list[bytearray] = field(default_factory=list)
    ended: list[trio.Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.dispatcher = Dispatcher()
        self.dispatcher.register("echo", lambda params: params)
        self.dispatcher.register("scene.delete_objects", lambda params: {"deleted": 1})

    async def wait_ended(self, index: int) -> None:
        """Wait until connection ``index`` ended; TooSlowError after 10 seconds."""
        with trio.fail_after(10):
            while len(self.ended) <= index:
                await trio.sleep(0.01)
            await self.ended[index].wait()

    async def _handle(self, stream: trio.SocketStream) -> None:
        received, sent, ended = bytearray(), bytearray(), trio.Event()
        self.received.append(received)
        self.sent.append(sent)
        self.ended.append(ended)
        decoder = self.profile.new_decoder()
        try:
            async for chunk in stream:
                received += chunk
                decoder.receive_data(bytes(chunk))  # trio types chunks bytes | bytearray
                for event in decoder.events():
                    if not isinstance(event, Frame):
                        continue  # keep reading: the test wants every byte that arrives
                    reply = self.dispatcher.respond(event.payload)
                    if reply is not None:
                        sent += reply
                        await stream.send_all(reply)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            ended.set()
            await stream.aclose()


@dataclass
class GolemUpstream(ListeningUpstream):
    """``echo`` returns its params, ``fail`` raises, everything else is method-not-found; each
    answer waits ``delay`` seconds first. Closes a connection on an oversized header."""

    profile: Profile = GOLEM
    dispatcher: Dispatcher = field(default_factory=Dispatcher)
    delay: Optional[float] = None

    def __post_init__(self) -> None:
        self.dispatcher.register("echo", lambda params: params)
        self.dispatcher.register("fail", _fail)

    async def _handle(self, stream: trio.SocketStream) -> None:
        decoder = self.profile.new_decoder(skip_oversized=False)
        try:
            async for chunk in stream:
                decoder.receive_data(bytes(chunk))  # trio types chunks bytes | bytearray
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

"""A GOLEM upstream that keeps, per connection, every byte it received and sent, so tests can
compare both sides' real streams with what the recording says they got."""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from golem_core.dispatcher import Dispatcher
from golem_core.framing import Frame
from golem_core.profiles import GOLEM, Profile
from golem_proxy.net.addresses import Address


@dataclass
class TracingUpstream:
    """``echo`` returns its params, ``fail`` raises; everything else is method-not-found."""

    profile: Profile = GOLEM
    address: Address = field(default_factory=Address)
    received: list[bytearray] = field(default_factory=list)
    sent: list[bytearray] = field(default_factory=list)
    ended: list[trio.Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.dispatcher = Dispatcher()
        self.dispatcher.register("echo", lambda params: params)
        self.dispatcher.register("scene.delete_objects", lambda params: {"deleted": 1})

    async def serve(
        self, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.address = Address("127.0.0.1", listeners[0].socket.getsockname()[1])
        task_status.started(self.address)
        await trio.serve_listeners(self._handle, listeners)

    async def wait_ended(self, index: int) -> None:
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
                decoder.receive_data(chunk)
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

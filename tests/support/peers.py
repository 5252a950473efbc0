"""A byte-recording echo server for relay tests, on 127.0.0.1 with a free port, run in the
test's nursery (the GOLEM upstreams are in ``golem_proxy.testing.upstreams``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import trio

from golem_proxy.testing.upstreams import ListeningUpstream


@dataclass
class EchoUpstream(ListeningUpstream):
    """Echoes every byte back and keeps what each connection sent, in arrival order."""

    received: list[bytearray] = field(default_factory=list)
    eof_seen: list[trio.Event] = field(default_factory=list)
    connections: int = 0
    echo: bool = True
    close_after: Optional[int] = None
    """Close a connection (fully) once it sent this many bytes, as a restarting plugin does."""

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

"""Servers for relay and client tests, on 127.0.0.1 with a free port, run in the test's nursery:
a byte-recording echo server, and one that answers requests but misbehaves as told (the GOLEM
upstreams are in ``golem_proxy.testing.upstreams``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.framing import Frame
from golem_core.profiles import GOLEM, Profile
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


@dataclass
class MisbehavingUpstream(ListeningUpstream):
    """Answers each request with ``{"echo": METHOD}``, misbehaving as ``mode`` says:
    ``notify`` sends a notification of its own before each answer (legal JSON-RPC, MCP does
    it), ``twice`` answers each request twice, ``wrong-id`` answers with an id it was never
    sent, ``stray`` sends such a reply before the answer, ``flood`` sends ``flood``
    notifications before each answer; ``honest`` just answers. ``again_for`` names a
    method whose requests are answered a second time, ``again_after`` seconds after the
    first answer (with ``again_bytes`` instead, when given); ``closes_at_end`` False keeps a
    connection open once the client has said it sends no more (a half-close), as a plugin
    that waits for the full close does."""

    profile: Profile = GOLEM
    mode: str = "honest"
    flood: int = 0
    again_for: Optional[str] = None
    again_after: float = 0.0
    again_bytes: Optional[bytes] = None
    closes_at_end: bool = True

    def _reply(self, ident: Any, method: Any) -> bytes:
        return self.profile.encode(self.profile.success(ident, {"echo": method}))

    async def _handle(self, stream: trio.SocketStream) -> None:
        decoder = self.profile.new_decoder(skip_oversized=False)
        notification = self.profile.encode({"jsonrpc": "2.0", "method": "tick", "params": {}})
        try:
            async for chunk in stream:
                decoder.receive_data(bytes(chunk))
                for event in decoder.events():
                    if not isinstance(event, Frame):
                        return
                    request = json.loads(event.payload)
                    ident, method = request.get("id"), request.get("method")
                    out = self._reply(ident, method)
                    if self.mode == "notify":
                        out = notification + out
                    elif self.mode == "flood":
                        out = notification * self.flood + out
                    elif self.mode == "twice":
                        out += out
                    elif self.mode == "wrong-id":
                        out = self._reply(f"nope-{ident}", method)
                    elif self.mode == "stray":
                        out = self._reply(f"nope-{ident}", method) + out
                    await stream.send_all(out)
                    if method is not None and method == self.again_for:
                        await trio.sleep(self.again_after)
                        again = self.again_bytes
                        await stream.send_all(again or self._reply(ident, method))
            if not self.closes_at_end:
                await trio.sleep_forever()
        except trio.BrokenResourceError:
            pass
        finally:
            await stream.aclose()

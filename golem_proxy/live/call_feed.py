"""``golem-proxy mcp --call-feed unix:PATH``: tell a stand-in plugin which tool call is in
flight, so that it answers each call's GOLEM requests from the exchanges recorded under that
same call (the ``golem_mcp_session`` fixture's stand-in: `replay.call_follow`).

The stand-in sees only GOLEM bytes; the test's own MCP client drives the server, so only this
relay sees each ``tools/call`` pass. Before a client line that is a ``tools/call`` request
reaches the server, the feed sends ``{"begin": ID, "tool": NAME, "arguments": {...}}`` and
waits for the stand-in's ``ok``: the server can send the call's first GOLEM request only once
it has read the line, so the stand-in knows the call before any of its requests (two sockets
keep no order between them; the acknowledgement does). When the server's answer to it
passes, ``{"end": ID}`` follows, before the client gets the answer, on the same socket, so it
comes before the next call's ``begin``. A call the client cancels (``notifications/cancelled``
naming its id) gets no answer from the server, by MCP's rules: its ``end`` follows the
client's notice instead, so the next call is not taken as overlapping it. The arguments go
out as the recording would hold them (``--redact``'s rules applied): the stand-in may quote
them.

A line is read only up to the hop's frame cap (``--max-frame``, else MCP's line cap): a
longer one is skipped to its end, never held whole, and tells nothing. The server's lines are
not held at all while no call is in flight: none of them can answer one.

A feed that fails (the stand-in gone, no acknowledgement within `ACK_WITHIN`) says so once on
stderr and falls silent: forwarding never waits on it for longer.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import trio

from golem_core.profiles.mcp import CANCELLED, MCP_CAP

from ..fast_json import NOT_DECODED, decode_exactly
from ..net.addresses import Address
from .redact import Redactor
from .redact_names import spared_by_rules

__all__ = ["ACK_WITHIN", "CallFeed"]

ACK_WITHIN = 10.0
"""How long a ``begin`` waits for the stand-in's acknowledgement before the feed gives up."""
_CALL = b"tools/call"
_CANCELLED = CANCELLED.encode()


class CallFeed:
    """The ``tools/call`` requests the client sends and the answers the server gives, told to
    the stand-in listening at ``unix:PATH`` (`connect`)."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        redactor: Optional[Redactor] = None,
        limit: int = MCP_CAP,
    ) -> None:
        """``limit``: the longest line read, in bytes (see the module docstring)."""
        self._stream: Optional[trio.abc.Stream] = stream
        self._redactor = redactor
        self._client = _Lines(limit)
        self._server = _Lines(limit)
        self._acks = bytearray()
        self._in_flight: set[str] = set()
        """The calls begun and not answered, by their id as JSON text."""

    @classmethod
    async def connect(
        cls, address: Address, redactor: Optional[Redactor] = None, limit: int = MCP_CAP
    ) -> CallFeed:
        """A feed to the stand-in at ``address`` (``unix:PATH``). Raises OSError."""
        if address.path is None:
            raise OSError(f"--call-feed {address}: not unix:PATH")
        return cls(await trio.open_unix_socket(address.path), redactor, limit)

    async def client_chunk(self, chunk: bytes) -> None:
        """Before ``chunk`` of the client's goes to the server: ``begin`` each ``tools/call``
        whose line it completes, acknowledged; ``end`` each call in flight it cancels."""
        for line in self._client.feed(chunk):
            if self._stream is None or (_CALL not in line and _CANCELLED not in line):
                continue
            obj = _decoded(line)
            if not isinstance(obj, dict):
                continue
            if obj.get("method") == CANCELLED and "id" not in obj:
                await self._cancelled(obj.get("params"))
                continue
            if obj.get("method") != "tools/call" or "id" not in obj:
                continue
            if self._redactor:
                spared = spared_by_rules(obj, "tools/call", tool_layer=True)
                obj, _ = self._redactor.apply(obj, "tools/call", None, spared)
            params = obj.get("params")
            params = params if isinstance(params, dict) else {}
            ident = json.dumps(obj["id"])
            self._in_flight.add(ident)
            told = {
                "begin": obj["id"],
                "tool": params.get("name"),
                "arguments": params.get("arguments"),
            }
            await self._send(told, acknowledged=True)

    async def server_chunk(self, chunk: bytes) -> None:
        """Before ``chunk`` of the server's goes to the client: ``end`` each call whose
        answer it completes."""
        if not self._in_flight or self._stream is None:
            # No call can be answered in it: the server reads a call only once it began.
            self._server.skip(chunk)
            return
        for line in self._server.feed(chunk):
            if not self._in_flight or self._stream is None:
                continue
            obj = _decoded(line)
            if not isinstance(obj, dict) or "method" in obj or "id" not in obj:
                continue  # a notification or a request of the server's: it answers no call
            ident = json.dumps(obj["id"])
            if ident in self._in_flight:
                self._in_flight.discard(ident)
                await self._send({"end": obj["id"]}, acknowledged=False)

    async def _cancelled(self, params: Any) -> None:
        """The client cancelled the call ``params`` names: the server will not answer it."""
        ident = params.get("requestId") if isinstance(params, dict) else None
        if ident is None or isinstance(ident, bool) or not isinstance(ident, (str, int)):
            return
        key = json.dumps(ident)
        if key in self._in_flight:
            self._in_flight.discard(key)
            await self._send({"end": ident}, acknowledged=False)

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _send(self, told: dict[str, Any], *, acknowledged: bool) -> None:
        stream = self._stream
        assert stream is not None
        line = json.dumps(told, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n"
        try:
            with trio.fail_after(ACK_WITHIN):
                await stream.send_all(line)
                if acknowledged:
                    await self._ack(stream)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
            print(
                "golem-proxy: the call feed's stand-in went away; calls are no longer told to it",
                file=sys.stderr,
            )
            await self.aclose()

    async def _ack(self, stream: trio.abc.Stream) -> None:
        while b"\n" not in self._acks:
            data = await stream.receive_some(1024)
            if not data:
                raise trio.BrokenResourceError("the stand-in closed the call feed")
            self._acks += data
        del self._acks[: self._acks.index(b"\n") + 1]


class _Lines:
    """One side's lines, each at most ``limit`` bytes long; a longer one is skipped to its
    end, never held whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False
        """Within a line too long, or one `skip` passed: its rest is dropped too."""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes (those within the limit); keeps the part of a line
        it does not complete, unless that is already too long."""
        lines: list[bytes] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if not self._skipping and self._size + end - start <= self.limit:
                piece = chunk[start:end]
                lines.append(b"".join((*self._parts, piece)) if self._parts else piece)
            self._parts.clear()
            self._size = 0
            self._skipping = False
            start = end + 1
        rest = len(chunk) - start
        if rest and not self._skipping:
            if self._size + rest > self.limit:
                self._parts.clear()
                self._size = 0
                self._skipping = True
            else:
                self._parts.append(chunk[start:])
                self._size += rest
        return lines

    def skip(self, chunk: bytes) -> None:
        """Drop ``chunk`` unread, and the rest of the line it ends within."""
        self._parts.clear()
        self._size = 0
        if chunk:
            self._skipping = not chunk.endswith(b"\n")


def _decoded(line: bytes) -> Any:
    obj = decode_exactly(line)
    if obj is NOT_DECODED:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return None
    return obj

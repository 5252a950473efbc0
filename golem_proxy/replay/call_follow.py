"""The ``golem_mcp_session`` fixture's stand-in follows the tool calls its test's client makes,
as `mcp-verify`'s follows the calls it plays: the wrapper it gives the test (``golem-proxy
mcp --call-feed unix:PATH``, `live.call_feed`) tells it each ``tools/call`` before the
server reads it, and each answer, so the engine serves every call from the GOLEM exchanges
recorded under that same call, then those of no call, never another call's
(`ReplayEngine.scope`, `call_scope`), and a request the recorded call never sent is a miss
that names the call.

Which recorded call a call made now stands for is decided as it begins: the first recorded
call not yet taken with the same tool and the same arguments (as the recording holds them,
its ``--redact`` rules applied to both), else the first not yet taken of the same tool (a
call whose arguments changed is still that call), else none: a call the recording does not
have is served only the exchanges of no call. While several calls are in flight at once,
no GOLEM request can be told to be one call's (nor could the recording tell it): the engine
then serves any call's answers, first come first served, as ``replay`` does.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any, Optional

import trio

from ..net.addresses import Address
from ..net.listeners import Listener, open_listener
from .call_scope import CallRef, CallScope, CallScopes
from .engine import ReplayEngine

__all__ = ["CallFollower"]

_LINE_LIMIT = 64 * 1024 * 1024
"""A feed line longer than this (arguments of 64 MiB) ends the feed: no call is that big."""
NAMED = 10
"""How many overlapping calls `CallFollower.overlap_text` names; it counts the rest."""


class CallFollower:
    """Sets ``engine.scope`` to the scope of the tool call in flight, as the wrapper's call
    feed tells it (`serve`)."""

    def __init__(self, engine: ReplayEngine, scopes: CallScopes) -> None:
        self.engine = engine
        self.scopes = scopes
        self._left = sorted(scopes.calls.values(), key=lambda call: call.index)
        self._in_flight: dict[tuple[int, str], CallScope] = {}
        self._directory = tempfile.mkdtemp(prefix="golem-calls-")  # private: 0700
        self.address = Address(path=os.path.join(self._directory, "calls.sock"))
        """Where the wrapper's ``--call-feed`` connects."""
        self.overlapped = 0
        """Calls begun while another was in flight: their GOLEM requests were not scoped."""
        self.overlapping: list[str] = []
        """The first `NAMED` of them, as `overlap_text` names them (``#3 list_layers``)."""
        engine.scope = scopes.outside  # before any call, as between them: no call's exchanges

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen at `address` and follow every feed that connects, until cancelled."""
        listener: Listener = await open_listener(self.address)
        try:
            task_status.started(self.address)
            async with trio.open_nursery() as nursery:
                number = 0
                while True:
                    stream = await listener.listener.accept()
                    number += 1
                    nursery.start_soon(self._follow, number, stream)
        finally:
            with trio.CancelScope(shield=True):
                await listener.aclose()

    def close(self) -> None:
        """Remove the socket's private directory (after `serve` ended)."""
        shutil.rmtree(self._directory, ignore_errors=True)

    async def _follow(self, feed: int, stream: trio.SocketStream) -> None:
        buffer = bytearray()
        try:
            async with stream:
                while True:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                    while b"\n" in buffer:
                        at = buffer.index(b"\n")
                        line = bytes(buffer[:at])
                        del buffer[: at + 1]
                        if self._told(feed, line):
                            await stream.send_all(b"ok\n")
                    if len(buffer) > _LINE_LIMIT:
                        return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return
        finally:
            for key in [key for key in self._in_flight if key[0] == feed]:
                del self._in_flight[key]
            self._rescope()

    def _told(self, feed: int, line: bytes) -> bool:
        """Follow one line of a feed; True when it asks for an acknowledgement (a call
        begins)."""
        try:
            told = json.loads(line)
        except ValueError:
            return False
        if not isinstance(told, dict):
            return False
        if "begin" in told:
            tool = told.get("tool")
            call = self._recorded_call(
                tool if isinstance(tool, str) else "?", told.get("arguments")
            )
            scope = (
                self.scopes.for_index(call.index) if call.recorded else self.scopes.unrecorded(call)
            )
            if self._in_flight:
                self.overlapped += 1
                if len(self.overlapping) < NAMED:
                    self.overlapping.append(call.label)
            self._in_flight[(feed, json.dumps(told["begin"]))] = scope
            self._rescope()
            return True
        if "end" in told:
            self._in_flight.pop((feed, json.dumps(told["end"])), None)
            self._rescope()
        return False

    def overlap_text(self) -> str:
        """What a failure says of the calls begun while another was in flight (their GOLEM
        requests were served any call's answers); empty when none was."""
        if not self.overlapped:
            return ""
        names = ", ".join(self.overlapping)
        if self.overlapped > len(self.overlapping):
            names += f", … and {self.overlapped - len(self.overlapping)} more"
        calls = "1 tool call" if self.overlapped == 1 else f"{self.overlapped} tool calls"
        return (
            f"{calls} began while another was in flight ({names}): their GOLEM requests "
            "were served any call's recorded answers, first come first served"
        )

    def _recorded_call(self, tool: str, arguments: Any) -> CallRef:
        """The recorded call a call made now stands for, taken (see the module docstring);
        one marked not recorded when there is none."""
        wanted = _canonical(arguments)
        found: Optional[CallRef] = next(
            (c for c in self._left if c.tool == tool and _canonical(c.arguments) == wanted), None
        )
        if found is None:
            found = next((c for c in self._left if c.tool == tool), None)
        if found is None:
            return CallRef(0, tool, arguments, -1, recorded=False)
        self._left.remove(found)
        return found

    def _rescope(self) -> None:
        scopes = list(self._in_flight.values())
        if not scopes:
            self.engine.scope = self.scopes.outside
        elif len(scopes) == 1:
            self.engine.scope = scopes[0]
        else:
            self.engine.scope = None  # several at once: any call's answers, first come first


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)

"""`mcp-verify`'s stand-in plays a GOLEM answer the recording marks late as it came: after
its tool call had returned (`FrameSeen.late`, decided by the session's tracker as the frames
were decoded; read here, never derived again from the times).

A stand-in that answered it at once would hand the build, in time, the answer the recorded
server had given up waiting for: the recorded call's timeout error would read as a
difference, and a server that keeps its connection and reads answers in order would no
longer hand the next call that answer. So the stand-in holds it, and with it what comes
after it on its connection (the plugin answers a connection's requests in order), until its
call has returned, which the replay knows for certain (the next step is about to be sent),
or until as long as the plugin took to answer it then (its recorded latency) has passed,
whichever comes first: a build that now waits longer than the plugin took is handed the
answer then, as Rhino would hand it, and its call then differs with the reason said
(`LateHold.explain`).

A late answer of several overlapping calls, or of none, is served as any other: which call's
return it waited for cannot be told.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Optional

import trio

from ..analysis.two_layers import TwoLayers
from .call_scope import CallRef
from .engine import Reply
from .index import ExchangeTrace

__all__ = ["RELEASED_BY_CALL", "RELEASED_BY_LATENCY", "HeldAnswer", "LateAnswer", "LateHold"]

RELEASED_BY_CALL = "call"
"""Sent once its call had returned, as recorded."""
RELEASED_BY_LATENCY = "latency"
"""Sent once its recorded latency had passed, its call still waiting: the build waited
longer than the recorded server did."""
WRITE_WAIT = 1.0
"""How long the next step waits for the answers it released to be written (a server that
stopped reading holds a write up; the step is not held up for ever by it)."""


@dataclass(frozen=True)
class LateAnswer:
    """A recorded GOLEM exchange whose answer came after its one tool call had returned."""

    number: int
    """Its `RecordedExchange.number`."""
    row: int
    """Its row, as `show` numbers it."""
    method: str
    call: CallRef
    latency: float
    """Seconds from its request to its answer, as recorded: as long as the plugin took."""
    call_latency: Optional[float] = None
    """Seconds from the call's request to its answer on the MCP hop, as recorded."""

    def words(self) -> str:
        """``the recorded answer to scene.create_layer (#4) came late: after its call
        returned (in 0.31 s), 1.5 s after its request``."""
        waited = "" if self.call_latency is None else f" (in {self.call_latency:.2f} s)"
        return (
            f"the recorded answer to {self.method} (#{self.row}) came late: after its call "
            f"returned{waited}, {self.latency:.2f} s after its request"
        )


@dataclass
class HeldAnswer:
    """A late answer the stand-in served this run, and what released it."""

    late: LateAnswer
    released_by: str = ""
    """`RELEASED_BY_CALL`, `RELEASED_BY_LATENCY`, or empty: still held when the run ended."""


@dataclass
class _Pending:
    held: HeldAnswer
    release: trio.Event = field(default_factory=trio.Event)
    written: trio.Event = field(default_factory=trio.Event)


class LateHold:
    """Holds the answers of ``late`` (by exchange number) as `ReplayServer` writes them."""

    def __init__(
        self,
        late: Mapping[int, LateAnswer],
        read_late: Optional[Mapping[int, tuple[int, str]]] = None,
    ) -> None:
        self.late = dict(late)
        self.read_late = dict(read_late or {})
        """Calls (by number) whose recorded result is another GOLEM exchange's answer, read
        out of order after a late one (`FrameSeen.answer_of`): that exchange's row and the
        tool of its call."""
        self.held: list[HeldAnswer] = []
        self._pending: list[_Pending] = []

    @classmethod
    def of(cls, layers: TwoLayers, trace: ExchangeTrace) -> LateHold:
        """The late answers of the recording read as ``layers`` and loaded as ``trace``, each
        under the one tool call it belongs to (a flow's number is the row its exchange has)."""
        by_row: dict[int, tuple[CallRef, Optional[float]]] = {}
        rows: dict[tuple[str, int, int], int] = {}
        for call in layers.tool_calls:
            request = call.flow.request
            if request is None:
                continue
            ref = CallRef(call.number, call.tool, call.arguments, request.index)
            for flow in call.golem:
                if flow.request is not None:
                    rows[(flow.route, flow.conn, flow.request.index)] = flow.number
                if flow.response is not None and flow.response.late:
                    by_row[flow.number] = (ref, call.latency)
        read_late: dict[int, tuple[int, str]] = {}
        for call in layers.tool_calls:
            answer = call.flow.response
            read = answer.answer_of if answer is not None else None
            row = rows.get((read.route, read.conn, read.index)) if read else None
            if read is not None and row is not None:
                read_late[call.number] = (row, read.tool or read.method or "?")
        late: dict[int, LateAnswer] = {}
        if by_row and trace.numbering is not None:
            trace.numbering.rows()
        for exchange in trace.exchanges if by_row else ():
            row = exchange.row
            found = by_row.get(row) if row is not None else None
            if row is not None and found is not None:
                ref, waited = found
                method = exchange.method or "?"
                late[exchange.number] = LateAnswer(
                    exchange.number, row, method, ref, exchange.latency, waited
                )
        return cls(late, read_late)

    def __bool__(self) -> bool:
        return bool(self.late)

    @asynccontextmanager
    async def hold(self, reply: Reply) -> AsyncIterator[None]:
        """Around the writing of ``reply``: for a late answer's, wait until its call has
        returned (`release`) or its recorded latency has passed; at once for any other."""
        exchange = reply.exchange
        late = self.late.get(exchange.number) if exchange is not None else None
        if late is None:
            yield
            return
        pending = _Pending(HeldAnswer(late))
        self.held.append(pending.held)
        self._pending.append(pending)
        try:
            with trio.move_on_after(late.latency):
                await pending.release.wait()
            called = pending.release.is_set()
            pending.held.released_by = RELEASED_BY_CALL if called else RELEASED_BY_LATENCY
            yield
        finally:
            pending.written.set()
            self._pending.remove(pending)

    async def release(self) -> None:
        """The next step is about to be sent: every call played so far has returned, so the
        answers held for them go, and the step waits until they are written (at most
        `WRITE_WAIT`), so that they reach the server's connection before it, as they did."""
        pending = list(self._pending)
        for item in pending:
            item.release.set()
        with trio.move_on_after(WRITE_WAIT):
            for item in pending:
                await item.written.wait()

    def of_call(self, number: Optional[int]) -> list[HeldAnswer]:
        """The late answers of the recorded call ``number`` served this run."""
        return [held for held in self.held if held.late.call.number == number]

    def recorded_for(self, number: Optional[int]) -> list[LateAnswer]:
        """The late answers recorded under the call ``number``."""
        return [late for late in self.late.values() if late.call.number == number]

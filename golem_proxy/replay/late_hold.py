"""`mcp-verify`'s stand-in plays a GOLEM answer the recording marks late as it came: after
its tool call had returned (`FrameSeen.late`, decided by the session's tracker as the frames
were decoded; read here, never derived again from the times).

A stand-in that answered it at once would hand the build, in time, the answer the recorded
server had given up waiting for: the recorded call's timeout error would read as a
difference, and a server that keeps its connection and reads answers in order would no
longer hand the next call that answer. So the stand-in holds it, and with it what comes
after it on its connection (the plugin answers a connection's requests in order), until
mcp-verify has read its call's answer from the server (`returned`): then the call has
returned for certain. A build whose call does not return holds it until the call has taken
as long as the recorded call did and then as long again as the plugin took to answer it
(its recorded latency): the recorded call had returned by then with a margin of the
plugin's whole time, so a call that returns as recorded is never outrun by it on a slow
machine, and a build that now waits longer is handed the answer and its call differs, with
the reason said (`standin_notes`).

An answer marked late only because its call read the late answer queued before it (its
call's recorded result is that answer, `answer_of`: the plugin had answered at once, but
the call had returned with the one before it before its own came, a race the recording
settles either way) is no late answer of its own: it is served as the plugin served it,
behind the late one on its connection (`RELEASED_BEHIND`), never held for its call.

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

__all__ = [
    "RELEASED_BEHIND",
    "RELEASED_BY_CALL",
    "RELEASED_BY_LATENCY",
    "HeldAnswer",
    "LateAnswer",
    "LateHold",
]

RELEASED_BY_CALL = "call"
"""Sent once its call had returned, as recorded."""
RELEASED_BY_LATENCY = "latency"
"""Sent with its call still waiting once the call had taken as long as the recorded one
and the plugin's recorded time on top: the build waited longer than the recorded server."""
RELEASED_BEHIND = "behind"
"""Never held: late only as its call read the late answer queued before it, and served as
the plugin served it, behind that one on its connection."""
WRITE_WAIT = 1.0
"""How long mcp-verify waits, once a call returned, for the answers that released to be
written before it sends the next step (a server that stopped reading holds a write up; the
next step is not held up for ever by it)."""


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
    behind: Optional[int] = None
    """The row of the answer its call read instead, queued before it on its connection
    (the call's `answer_of`): late only behind that one (`RELEASED_BEHIND`)."""

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
    """`RELEASED_BY_CALL`, `RELEASED_BY_LATENCY`, `RELEASED_BEHIND`, or empty: still held
    when the run ended."""
    waited: Optional[float] = None
    """Seconds from this build's call being sent to the answer's release by latency."""


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
        self._sent: dict[int, float] = {}
        """When each call (by its request frame index) was sent this run (trio's clock)."""
        self._returned: set[int] = set()
        """The calls (by index) whose answer mcp-verify has read."""

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
                queued = read_late.get(ref.number)
                behind = queued[0] if queued is not None else None
                late[exchange.number] = LateAnswer(
                    exchange.number, row, method, ref, exchange.latency, waited, behind
                )
        return cls(late, read_late)

    def __bool__(self) -> bool:
        return bool(self.late)

    @asynccontextmanager
    async def hold(self, reply: Reply) -> AsyncIterator[None]:
        """Around the writing of ``reply``: for a late answer's, wait until its call has
        returned (`returned`), or has waited too long (`_deadline`); at once for any other,
        and for one late only behind another (`LateAnswer.behind`)."""
        exchange = reply.exchange
        late = self.late.get(exchange.number) if exchange is not None else None
        if late is None:
            yield
            return
        pending = _Pending(HeldAnswer(late))
        self.held.append(pending.held)
        if late.behind is not None:
            pending.held.released_by = RELEASED_BEHIND
            yield
            return
        self._pending.append(pending)
        try:
            index = late.call.index
            if index not in self._returned:
                with trio.move_on_at(self._deadline(late)):
                    await pending.release.wait()
            if index in self._returned:
                pending.held.released_by = RELEASED_BY_CALL
            else:
                pending.held.released_by = RELEASED_BY_LATENCY
                pending.held.waited = trio.current_time() - self._sent.get(index, 0.0)
            yield
        finally:
            pending.written.set()
            self._pending.remove(pending)

    def _deadline(self, late: LateAnswer) -> float:
        """When a call still waiting is handed its late answer: once it has taken as long as
        the recorded call did, as long again as the plugin took (see the module's words)."""
        sent = self._sent.get(late.call.index, trio.current_time())
        return sent + (late.call_latency or 0.0) + late.latency

    def sending(self, index: int) -> None:
        """The call whose request frame index is ``index`` is about to be sent."""
        self._sent[index] = trio.current_time()

    async def returned(self, index: int) -> None:
        """mcp-verify has read the answer of the call whose request frame index is
        ``index``: the answers held for it go, and this waits until they are written (at most
        `WRITE_WAIT`), so that they reach the server's connection before the next step, as
        they did. One whose request the stand-in reads only later goes as it is read."""
        self._returned.add(index)
        pending = [item for item in self._pending if item.held.late.call.index == index]
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

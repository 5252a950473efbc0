"""A GOLEM frame's ``tool_calls`` (a ``close`` line's too) checked against the lines before it
(docs/recording-format.md, "Tool calls"): each call it names must be a ``tools/call`` request
of the MCP hop that the file holds before it, with that request's id and tool, as an
``answer_of`` naming a GOLEM request the file lacks is refused (`answer_of_check`). The views
believe ``tool_calls`` (a row is drawn under the call it names): a reader refuses a file that
lies, every reader alike.

The tap names a call it decoded before the GOLEM frame, from the MCP hop's frames, which are
written in the order both layers were decoded: the request frame was written before, unless a
``gap`` line says events were not written, or the file is a view saved with flows left out
(its header's ``filtered_by`` or ``left_out``). After either, nothing is refused. What is kept
is, per MCP connection, its highest request frame, and the id and tool of the last
`MAX_CALLS` ``tools/call`` requests; a call older than those is not refused."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Collection
from typing import Any, Optional, Union

from golem_core.messages import Message, Request
from golem_core.profiles.mcp import TOOLS_CALL, tool_name

from ..events import FrameSeen, ToolCallRef
from ..terminal import safe_text
from .answer_of_check import MAX_CONNECTIONS, VIEW_MEMBERS
from .members import shown
from .schema import Header, RecordingError

__all__ = ["MAX_CALLS", "ToolCallCheck", "calls_in_line"]

MAX_CALLS = 65536
"""The ``tools/call`` requests whose id and tool are kept at most (the oldest let go: a call
named among them then is not refused)."""

_Told = Optional[tuple[Union[int, str, None], str]]
"""A call's id and tool as its request frame holds them; None where the frame may not show
them as the tap read them (redacted, or read from a skeleton)."""


class ToolCallCheck:
    """Told the MCP hop's request frames read and the lines that say events are missing, in
    file order; `check` refuses a ``tool_calls`` naming a call no line before it holds. Does
    nothing in a file without an MCP layer (no frame names a call there)."""

    def __init__(self, layer_routes: Collection[str], header: Optional[Header] = None) -> None:
        self.layer_routes = frozenset(layer_routes)
        self.active = bool(self.layer_routes)
        """Whether the file has an MCP layer: then the readers tell it its request frames."""
        self._last: dict[int, int] = {}
        """Per MCP connection, the highest request frame (``c2s``) read."""
        self._calls: OrderedDict[tuple[int, int], _Told] = OrderedDict()
        """The ``tools/call`` requests read, by connection and frame, oldest first."""
        self._floor: dict[int, int] = {}
        """Per MCP connection, the highest frame of a call let go past `MAX_CALLS`."""
        self._unsure = header is not None and any(k in header.extra for k in VIEW_MEMBERS)
        """The file may lack what the tap named (a ``gap``, a view, the bound passed)."""
        self.deferred: Optional[list[tuple[ToolCallRef, ...]]] = None
        """For a part of a file read apart (the fast scanner's second process): what `check`
        does not take is put here, for the lines before the part to decide, not refused."""

    def sent(self, frame: FrameSeen) -> None:
        """A frame was read: of the MCP hop's requests, kept in mind (others are no call)."""
        if frame.route in self.layer_routes and frame.direction.value == "c2s":
            # A redacted frame, or one read from a skeleton, may not show the id and tool
            # the tap read: its call is known by its number only.
            shows = not (frame.redacted or frame.elided)
            self.asked(frame.conn, frame.index, frame.message, shows)

    def asked(self, conn: int, index: int, message: Message, shows: bool = True) -> None:
        """Request frame ``index`` of MCP connection ``conn``, ``message``, was read (``shows``:
        its id and tool as the tap read them)."""
        last = self._last.get(conn)
        if last is None or last < index:
            self._last[conn] = index
            if len(self._last) > MAX_CONNECTIONS:
                self._unsure = True  # a hostile file's; no session has that many
        if not isinstance(message, Request) or message.method != TOOLS_CALL:
            return
        self._calls[(conn, index)] = (message.id, tool_name(message)) if shows else None
        if len(self._calls) > MAX_CALLS:
            (gone, at), _ = self._calls.popitem(last=False)
            self._floor[gone] = max(self._floor.get(gone, at), at)

    def missed(self) -> None:
        """A ``gap`` line: events the proxy saw were not written."""
        self._unsure = True

    def holds(self, calls: Optional[tuple[ToolCallRef, ...]]) -> bool:
        """Whether `check` takes ``calls``."""
        try:
            self.check(calls)
        except RecordingError:
            return False
        return True

    def check(self, calls: Optional[tuple[ToolCallRef, ...]]) -> None:
        """Raises RecordingError when ``calls`` names a call no line before it holds as a
        ``tools/call`` of that id and tool (and the file says it lacks none)."""
        if not calls or self._unsure:
            return
        unheld: list[ToolCallRef] = []
        for call in calls:
            held = (call.conn, call.index) in self._calls
            if self.deferred is not None and not (
                held or call.index <= self._floor.get(call.conn, -1)
            ):
                # A call asked before the part (one in flight since): the lines before it
                # decide that one only; those the part holds are checked here.
                unheld.append(call)
                continue
            self._check(call)
        if unheld and self.deferred is not None:
            self.deferred.append(tuple(unheld))

    def _check(self, call: ToolCallRef) -> None:
        conn, index = call.conn, call.index
        last = self._last.get(conn)
        if last is None:
            raise RecordingError(
                f"tool_calls names connection {conn}, of which no MCP request is in the lines "
                "before it"
            )
        if index <= self._floor.get(conn, -1):
            return  # let go past the bound: not known
        where = f"request frame {index} of connection {conn}"
        if index > last:
            raise RecordingError(
                f"tool_calls names {where}, which the lines before it do not hold (its last "
                f"is frame {last})"
            )
        if (conn, index) not in self._calls:
            raise RecordingError(
                f"tool_calls names {where}, which is no tools/call in the lines before it"
            )
        told = self._calls[(conn, index)]
        if told is None:
            return
        ident, tool = told
        if type(ident) is not type(call.id) or ident != call.id or tool != call.tool:
            raise RecordingError(
                f"tool_calls names {where} as id {shown(call.id)}, tool "
                f"{safe_text(call.tool, 60)!r}; that tools/call has id {shown(ident)}, tool "
                f"{safe_text(tool, 60)!r}"
            )


_CALL_TEXT = re.compile(
    rb',"tool_calls":\[\{"conn":(\d+),"n":(\d+),"id":(?:"([^"\\]*)"|(-?\d+))'
    rb',"tool":"([^"\\]*)"\}\]'
)
"""One call in a frame line's ``tool_calls``, as the fast scanner's pattern takes it
(`scan_pattern`: one at most, its names and ids printable ASCII without escapes)."""


def calls_in_line(buffer: Any, start: int, end: int) -> Optional[tuple[ToolCallRef, ...]]:
    """The ``tool_calls`` of a frame line the fast scanner took, found in its members between
    ``start`` and ``end`` (before its payload); None when it names none."""
    found = _CALL_TEXT.search(buffer, start, end)
    if found is None:
        return None
    conn, index, text, number, tool = found.groups()
    ident: Union[int, str] = text.decode("ascii") if text is not None else int(number)
    return (ToolCallRef(conn=int(conn), index=int(index), id=ident, tool=tool.decode("ascii")),)

"""A tool call's ``answer_of`` checked against the lines before it (docs/recording-format.md):
the GOLEM exchange it names must be one the file holds, as the other two-layer members that
cannot be true are refused (`frame_reading._check_layer_members`), by every reader alike.

The proxy names an exchange it decoded before the tool call's answer: its request frame was
written before that answer's line, unless the disk fell behind and a ``gap`` line says events
were not written; a view saved with flows left out (its header's ``filtered_by`` or
``left_out``) may lack it too. After either, nothing is refused. What is kept is one number
per GOLEM connection (its highest request frame), for at most `MAX_CONNECTIONS`; past that, a
connection let go could be the one named, and nothing more is refused. A connection's frames
are numbered without a hole (the tap numbers each frame it decodes, and one that takes over
after a restart numbers on from the recording), so a number skipped between two read is a
line missing: up to `MAX_HOLES` such runs are kept per connection, and one named is refused."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Collection
from typing import Optional

from ..events import AnswerOf
from ..terminal import safe_text
from .schema import Header, RecordingError

__all__ = ["MAX_CONNECTIONS", "VIEW_MEMBERS", "AnswerOfCheck"]

MAX_CONNECTIONS = 65536
"""GOLEM connections whose requests are kept in mind at most (the oldest let go)."""

MAX_HOLES = 16
"""Runs of frame numbers skipped on one connection kept in mind at most (the oldest let go:
one named then is not refused)."""

_REQUEST_KEY = re.compile(rb'"conn":(\d+),"route":"(?:[^"\\]|\\.)*","dir":"c2s","n":(\d+)')
"""A request frame's pairing key, as the fast scanner keys frames: its connection and number."""

VIEW_MEMBERS = ("filtered_by", "left_out")
"""Header members of a view saved without some of the session's flows (the TUI's `w`)."""


class AnswerOfCheck:
    """Told the request frames read and the lines that say events are missing, in file order;
    `check` refuses an ``answer_of`` naming a GOLEM request frame not read before it. Does
    nothing in a file without a route of another layer (no ``answer_of`` there names one)."""

    def __init__(self, layer_routes: Collection[str], header: Optional[Header] = None) -> None:
        self.layer_routes = frozenset(layer_routes)
        self.active = bool(self.layer_routes)
        """Whether the file has an MCP layer: then the readers tell it every request frame."""
        self._asked: OrderedDict[tuple[str, int], int] = OrderedDict()
        self._holes: dict[tuple[str, int], list[tuple[int, int]]] = {}
        """Per connection, the runs of request frame numbers ``[start, end)`` skipped between
        two read (a line missing), oldest first; only for connections that have one."""
        self._unsure = header is not None and any(k in header.extra for k in VIEW_MEMBERS)
        """The file may lack what the proxy named (a ``gap``, a view, the bound passed)."""

    def asked(self, route: str, conn: int, index: int) -> None:
        """A request frame (``c2s``) numbered ``index`` of ``conn`` on ``route`` was read."""
        if not self.active or route in self.layer_routes:
            return
        key = (route, conn)
        highest = self._asked.get(key)
        if highest is None or highest < index:
            self._asked[key] = index
            if highest is not None and index > highest + 1:
                self._skipped(key, highest + 1, index)
            if len(self._asked) > MAX_CONNECTIONS:
                gone, _ = self._asked.popitem(last=False)
                self._holes.pop(gone, None)
                self._unsure = True
        elif key in self._holes:
            self._filled(key, index)

    def _skipped(self, key: tuple[str, int], start: int, end: int) -> None:
        holes = self._holes.setdefault(key, [])
        holes.append((start, end))
        if len(holes) > MAX_HOLES:
            del holes[0]

    def _filled(self, key: tuple[str, int], index: int) -> None:
        """A frame numbered below the connection's highest was read (told out of order):
        it is no hole."""
        holes = self._holes[key]
        for at, (start, end) in enumerate(holes):
            if start <= index < end:
                holes[at : at + 1] = [
                    run for run in ((start, index), (index + 1, end)) if run[0] < run[1]
                ]
                break
        if not holes:
            del self._holes[key]

    def _skips(self, key: tuple[str, int], index: int) -> Optional[tuple[int, int]]:
        """The run of skipped numbers of ``key`` that holds ``index``, if one does."""
        for start, end in self._holes.get(key, ()):
            if start <= index < end:
                return start, end
        return None

    def asked_key(self, key: bytes, route: str) -> None:
        """`asked`, for a frame known by its pairing key (``"conn":…,"route":…,"dir":…,"n":…``):
        told only when it is a request's."""
        found = _REQUEST_KEY.match(key)
        if found is not None:
            self.asked(route, int(found[1]), int(found[2]))

    def holds(self, found: AnswerOf) -> bool:
        """Whether `check` takes ``found``."""
        try:
            self.check(found)
        except RecordingError:
            return False
        return True

    def missed(self) -> None:
        """A ``gap`` line: events the proxy saw were not written."""
        self._unsure = True

    def check(self, found: AnswerOf) -> None:
        """Raises RecordingError when ``found`` names a GOLEM request frame no line before it
        holds (and the file says it lacks none)."""
        if self._unsure:
            return
        highest = self._asked.get((found.route, found.conn))
        where = f"connection {found.conn} of route {safe_text(found.route, 60)!r}"
        if highest is None:
            raise RecordingError(
                f"answer_of names {where}, of which no request is in the lines before it"
            )
        if found.index > highest:
            raise RecordingError(
                f"answer_of names request frame {found.index} of {where}, which the lines "
                f"before it do not hold (its last is frame {highest})"
            )
        skipped = self._skips((found.route, found.conn), found.index)
        if skipped is not None:
            start, end = skipped
            run = f"frame {start}" if end == start + 1 else f"frames {start} to {end - 1}"
            raise RecordingError(
                f"answer_of names request frame {found.index} of {where}, which the lines "
                f"before it do not hold (they skip {run}, then go on to frame {end})"
            )

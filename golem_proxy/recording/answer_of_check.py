"""A tool call's ``answer_of`` checked against the lines before it (docs/recording-format.md):
the GOLEM exchange it names must be one the file holds, as the other two-layer members that
cannot be true are refused (`frame_reading._check_layer_members`), by every reader alike.

The proxy names an exchange it decoded before the tool call's answer: its request frame was
written before that answer's line, unless the disk fell behind and a ``gap`` line says events
were not written; a view saved with flows left out (its header's ``filtered_by`` or
``left_out``) may lack it too. After either, nothing is refused. What is kept is one number
per GOLEM connection (its highest request frame), for at most `MAX_CONNECTIONS`; past that, a
connection let go could be the one named, and nothing more is refused."""

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
        self._unsure = header is not None and any(k in header.extra for k in VIEW_MEMBERS)
        """The file may lack what the proxy named (a ``gap``, a view, the bound passed)."""

    def asked(self, route: str, conn: int, index: int) -> None:
        """A request frame (``c2s``) numbered ``index`` of ``conn`` on ``route`` was read."""
        if not self.active or route in self.layer_routes:
            return
        key = (route, conn)
        if self._asked.get(key, -1) < index:
            self._asked[key] = index
            if len(self._asked) > MAX_CONNECTIONS:
                self._asked.popitem(last=False)
                self._unsure = True

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

"""Which flows a body filter or find may have decided wrongly because it read them without
their bulk: a frame whose payload the TUI does not hold (released over the budget, or left in
the recording, `golem_proxy.tui.payloads`) is searched as the message its row kept, and where
that message had a long array of numbers or a blob elided (`golem_proxy.tui.skeleton`), what
lay there is not found. The status line says how many flows the filter could not decide so
(`filter_tree.undecided`), and find's "No flow contains" how many it could not search whole,
so that "0 of 300 flows" is not taken for "the text is in none of them". A blob (64 KiB and
more of base64-like characters: a capture's PNG, but also an answer's long run of text)
counts only for a text that may lie in one (`bulk.may_lie_in_blob`): ``xxxxxxxxxx`` or
``iVBOR`` may, ``"width": 640`` may not."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Optional

from golem_core.profiles import Profile

from ..analysis.filter_tree import Filter, reads_bodies, undecided
from ..analysis.flows import Flow
from ..bulk import ANY, BLOB, elided_kinds, may_lie_in_blob
from ..terminal import counted
from .payloads import released

__all__ = ["SkimmedBodies", "skims"]

NOTE = "elided parts of {} not searched"
"""What the status line and find say of the flows counted here (`skimmed_note`)."""


def skimmed_note(count: int) -> str:
    """`NOTE` for ``count`` flows, e.g. ``elided parts of 2 flows not searched``."""
    return NOTE.format(counted(count, "flow", grouped=True))


class SkimmedBodies:
    """The numbers of the flows kept whose passing the filter turned on the bulk elided from
    a message it searched (`filter_tree.undecided`), as the filter last read each. A flow
    whose payload the budget releases after the filter read it whole is not counted until
    the filter reads it again (`note`, `recount`)."""

    def __init__(self) -> None:
        self.numbers: set[int] = set()
        self._reading: Optional[tuple[Filter, Callable[[str], Profile]]] = None
        """The filter, when it reads bodies, and each route's profile."""

    def recount(
        self, node: Optional[Filter], profile_for: Callable[[str], Profile], flows: Iterable[Flow]
    ) -> None:
        """A filter set anew (None: none), which reads every one of ``flows``."""
        self._reading = (node, profile_for) if node is not None and reads_bodies(node) else None
        self.numbers = set()
        for flow in flows:
            self.note(flow)

    def note(self, flow: Flow) -> None:
        """Count or stop counting ``flow`` as the filter is about to read it (it arrived or
        changed)."""
        reading = self._reading
        if reading is not None:
            unread, blobs = _skimmed_sides(flow)
            node, profile_for = reading
            if (unread or blobs) and undecided(node, flow, profile_for(flow.route), unread, blobs):
                self.numbers.add(flow.number)
                return
        self.numbers.discard(flow.number)

    def forget(self, flows: Iterable[Flow]) -> None:
        """The flows let go from memory: no filter reads them any more."""
        self.numbers -= {flow.number for flow in flows}


def _skimmed_sides(flow: Flow) -> tuple[frozenset[str], frozenset[str]]:
    """The sides of ``flow`` whose search skips what any search may look for (numbers or long
    arrays elided from their message, values a recording's skeleton did not keep, or a
    message not parsed: nothing searched), and those whose search skips only blobs."""
    unread: set[str] = set()
    blobs: set[str] = set()
    for side, frame in (("request", flow.request), ("response", flow.response)):
        if frame is None or released(frame) is None:
            continue  # its payload is searched
        obj = getattr(frame.message, "obj", None)
        kinds = elided_kinds(obj) if frame.elided else frozenset()
        if obj is None or ANY in kinds:
            unread.add(side)
        elif BLOB in kinds:
            blobs.add(side)
    return frozenset(unread), frozenset(blobs)


def skims(flow: Flow, text: str) -> bool:
    """Whether a search of ``flow``'s bodies for ``text`` now skips what may hold it: numbers
    elided from its message, a message not parsed, or a blob ``text`` may lie in."""
    unread, blobs = _skimmed_sides(flow)
    return bool(unread) or (bool(blobs) and may_lie_in_blob(text))

"""Which flows a body filter read without their numbers: a frame whose payload the TUI does
not hold (released over the budget, or left in the recording, `golem_proxy.tui.payloads`) is
searched as the message its row kept, and where that message had a long array of numbers
elided (`golem_proxy.tui.skeleton`), a number in it is not found. The status line says how
many such flows a body filter read, so that "0 of 300 flows" is not taken for "the number is
in none of them". Blobs are not counted: their base64 is nothing anyone searches."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from ..analysis.flows import Flow
from ..events import FrameSeen
from .payloads import released
from .skeleton import holds_elided_numbers

__all__ = ["SkimmedBodies", "skims"]


class SkimmedBodies:
    """The numbers of the flows kept that the filter last searched without numbers elided
    from their message, by side (a request's, a response's). A flow whose payload the budget
    releases after the filter read it whole is not counted until the filter reads it again
    (`recount`)."""

    def __init__(self) -> None:
        self.sides: dict[str, set[int]] = {"request": set(), "response": set()}

    @property
    def numbers(self) -> set[int]:
        """The flows counted on either side."""
        return self.sides["request"] | self.sides["response"]

    def count(self, sides: Iterable[str]) -> int:
        """How many flows are counted on any of ``sides`` (the sides a filter reads)."""
        return len(set().union(*(self.sides[side] for side in sides)))

    def note(self, flow: Flow) -> None:
        """Count or stop counting ``flow`` as the filter is about to read it (it arrived or
        changed)."""
        for side, frame in (("request", flow.request), ("response", flow.response)):
            if _skimmed(frame):
                self.sides[side].add(flow.number)
            else:
                self.sides[side].discard(flow.number)

    def recount(self, flows: Iterable[Flow]) -> None:
        """Count ``flows`` as they are now: a filter set anew reads every one."""
        self.sides = {"request": set(), "response": set()}
        for flow in flows:
            self.note(flow)

    def forget(self, flows: Iterable[Flow]) -> None:
        """The flows let go from memory: no filter reads them any more."""
        gone = {flow.number for flow in flows}
        for numbers in self.sides.values():
            numbers -= gone


def skims(flow: Flow) -> bool:
    """Whether a search of ``flow``'s bodies now skips numbers elided from its message."""
    return _skimmed(flow.request) or _skimmed(flow.response)


def _skimmed(frame: Optional[FrameSeen]) -> bool:
    return (
        frame is not None
        and bool(frame.elided)
        and released(frame) is not None
        and holds_elided_numbers(getattr(frame.message, "obj", None))
    )

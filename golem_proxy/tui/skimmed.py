"""Which flows a body filter reads without their numbers: a frame whose payload the TUI does
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

__all__ = ["SkimmedBodies"]


class SkimmedBodies:
    """The numbers of the flows kept whose search would skip elided numbers."""

    def __init__(self) -> None:
        self.numbers: set[int] = set()

    def __len__(self) -> int:
        return len(self.numbers)

    def note(self, flow: Flow) -> None:
        """Count or stop counting ``flow`` as it is now (a frame released or arrived)."""
        if _skimmed(flow.request) or _skimmed(flow.response):
            self.numbers.add(flow.number)
        else:
            self.numbers.discard(flow.number)

    def forget(self, flows: Iterable[Flow]) -> None:
        """The flows let go from memory: no filter reads them any more."""
        self.numbers.difference_update(flow.number for flow in flows)


def _skimmed(frame: Optional[FrameSeen]) -> bool:
    return (
        frame is not None
        and bool(frame.elided)
        and released(frame) is not None
        and holds_elided_numbers(getattr(frame.message, "obj", None))
    )

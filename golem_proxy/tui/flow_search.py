"""The TUI's find (``ctrl+f``, ``n``, ``N``): the next flow in view whose method or bytes hold a
text.

Apart from model.py because searching only reads the flows: the model hands over its flows, its
view and the profile each route's frames were typed with (`SessionModel.find`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, Optional

from golem_core.profiles import Profile

from ..analysis.filter_predicates import frame_text
from ..analysis.flows import Flow
from .payloads import released

__all__ = ["find_in_view"]


def find_in_view(
    flows: Sequence[Flow],
    view: Sequence[int],
    text: str,
    start: int,
    forward: bool,
    profile_for: Callable[[str], Profile],
) -> Optional[int]:
    """The position in ``view`` (indexes into ``flows``) of the next flow after ``start``
    (wrapping around; backwards unless ``forward``) whose method or request/response bytes
    contain ``text``, case-insensitively; None when none does. A frame whose payload was
    released is searched in what its row kept (`frame_text`, typed by ``profile_for`` its
    route)."""
    if not view or not text:
        return None
    needle = text.lower()
    raw_needle = needle.encode("utf-8")
    count = len(view)
    step = 1 if forward else -1
    for offset in range(1, count + 1):
        position = (start + step * offset) % count
        flow = flows[view[position]]
        if needle in (flow.method or "").lower():
            return position
        for part in (flow.request, flow.response):
            if part is None:
                continue
            if released(part) is not None:
                # The bytes are gone: search what the row kept of them (`frame_text`).
                if needle in frame_text(part, profile_for(part.route)).lower():
                    return position
            elif raw_needle in part.payload.lower():
                return position
    return None

"""Where a GOLEM row stands in a two-layer table, against the row of the tool call it belongs to.

Rows are listed by flow number, and a flow is numbered when its request is decoded: a GOLEM
request held on its way (``--fault delay``, ``--intercept``) is decoded when it goes on, after
the rows of the calls made meanwhile, so its ``↳`` row may stand under another call's row. Its
frames still name its own call (`attribution_refs`, decided as the request arrived): a row
shown away from its call's row names that call, ``(of #3 create_layer_within)``, in `show` and
in the TUI, so the tree never says it belongs to the call above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, Optional

from .flows import Flow
from .tool_calls import CallKey, attribution_refs, call_key, is_tool_call, owner_key

__all__ = ["LOOK_BACK", "CallRows", "call_number", "head_above", "indented", "of_call"]

LOOK_BACK = 512
"""How many rows above a GOLEM row the TUI looks for the row it stands under, and how many
flows back for its call's number: a bounded look per row drawn. Past it, the row names its
call (true, if not needed)."""


def indented(flow: Flow) -> bool:
    """A GOLEM row of one or more tool calls (``↳`` or ``?``), shown under the row above it."""
    return bool(attribution_refs(flow)) and not is_tool_call(flow)


def of_call(flow: Flow, number: Optional[int]) -> str:
    """`` (of #N tool)``: the tool call a GOLEM row of one call belongs to (its number when
    known); "" for any other row."""
    refs = attribution_refs(flow)
    if not refs or len(refs) != 1 or is_tool_call(flow):
        return ""
    where = f"#{number} " if number is not None else ""
    return f" (of {where}{refs[0].tool})"


class CallRows:
    """For a table printed row by row in order (`show`): the tool call row each GOLEM row
    stands under, and whether that is its own."""

    def __init__(self) -> None:
        self._head: Optional[CallKey] = None
        """The call of the last row shown that is not indented (None: not a tool call)."""

    def suffix(self, flow: Flow, number: Optional[int]) -> str:
        """`of_call` for a GOLEM row of one call shown away from its call's row (``number``:
        its call's flow number, when known); "" otherwise. Call once per row shown, in
        order."""
        if not indented(flow):
            self._head = call_key(flow)
            return ""
        owner = owner_key(flow)
        return "" if owner is None or owner == self._head else of_call(flow, number)


def head_above(row_at: Callable[[int], Flow], position: int) -> Optional[CallKey]:
    """The call of the nearest row above ``position`` that is not indented, looking at most
    `LOOK_BACK` rows up (None: not a tool call, or none found)."""
    for above in range(position - 1, max(-1, position - 1 - LOOK_BACK), -1):
        row = row_at(above)
        if not indented(row):
            return call_key(row)
    return None


def call_number(flows: Sequence[Flow], index: int, owner: CallKey) -> Optional[int]:
    """The number of the tool call ``owner`` among the `LOOK_BACK` flows before
    ``flows[index]`` (None when it is further back)."""
    for before in range(index - 1, max(-1, index - 1 - LOOK_BACK), -1):
        if call_key(flows[before]) == owner:
            return flows[before].number
    return None

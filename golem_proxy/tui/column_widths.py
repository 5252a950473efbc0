"""The widest value each column of the flows table has held so far, in terminal cells, kept as
flows arrive so that the table sizes its columns (`flows_table.natural_widths`) without
scanning every flow on each redraw.

Apart from model.py because measuring is no part of folding events into flows: the model
tells `ColumnWidths` of each flow it changed and each connection it saw, and reads nothing
back.
"""

from __future__ import annotations

from typing import Callable

from rich.cells import cell_len

from golem_core.profiles.mcp import TOOLS_CALL

from ..analysis.flows import Flow
from ..terminal import safe_text
from .render import flow_label

__all__ = ["ColumnWidths"]


class ColumnWidths:
    """The routes seen, the largest connection number, and the widest method and status."""

    def __init__(self) -> None:
        self.routes: set[str] = set()
        self.largest_conn = 0
        self.method = 0
        self.status = 0
        # What `widen` has measured already: a plain row's label by method, and the
        # interned outcomes whose text is a row's status.
        self._label_widths: dict[str, int] = {}
        self._measured_outcomes: set[int] = set()

    def connection(self, route: str, conn: int) -> None:
        """A connection of ``route`` numbered ``conn`` was seen (the route made safe)."""
        self.routes.add(safe_text(route))
        self.largest_conn = max(self.largest_conn, conn)

    def label(self, text: str) -> None:
        """A method column's ``text`` was drawn: the column is that wide next time."""
        self.method = max(self.method, cell_len(text))

    def widen(self, flow: Flow, status: Callable[[Flow], str], interned: bool) -> None:
        """Widen the method and status columns to ``flow``'s label and ``status`` (the text
        a row shows). Most rows of a trace are a plain answered call: their label is their
        method and their status their outcome's text, so each width is measured once per
        method and, for an ``interned`` outcome (one object shared by the flows with that
        outcome), once per outcome."""
        request, method, outcome = flow.request, flow.method, flow.outcome
        if request is not None and request.tool_calls is None and method and method != TOOLS_CALL:
            width = self._label_widths.get(method)
            if width is None:
                width = self._label_widths[method] = cell_len(flow_label(flow))
        else:
            width = cell_len(flow_label(flow))
        self.method = max(self.method, width)
        if (
            outcome is not None
            and flow.gap is None
            and flow.frame_error is None
            and interned
            and not flow.out_of_turn  # its status says more than its outcome
        ):
            if id(outcome) in self._measured_outcomes:
                return
            self._measured_outcomes.add(id(outcome))
        self.status = max(self.status, cell_len(status(flow)))

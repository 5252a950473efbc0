"""Folding a whole exchange into the TUI's flows at once.

A recording read the fast way (`golem_proxy.recording.fast_reader`) hands most exchanges
over as three events in a row: the request frame, its answer, and the exchange naming both.
`FlowTracker.apply` takes them one at a time, holding the request until its answer comes and
the answer until its exchange; when the three come together, none of that holding can matter,
and `ExchangeTracker.settle` makes the settled row in one step, with the same result.
"""

from __future__ import annotations

from typing import Optional

from ..analysis.flows import Flow, FlowTracker
from ..events import ExchangeCompleted

__all__ = ["ExchangeTracker", "whole_exchange"]


def whole_exchange(events: list, at: int) -> Optional[ExchangeCompleted]:  # type: ignore[type-arg]
    """The exchange at ``at + 2`` when the events at ``at`` and ``at + 1`` are its request
    and its answer, else None."""
    if at + 2 >= len(events):
        return None
    exchange = events[at + 2]
    if (
        type(exchange) is ExchangeCompleted
        and exchange.request is events[at]
        and exchange.response is events[at + 1]
    ):
        return exchange
    return None


class ExchangeTracker(FlowTracker):
    """A `FlowTracker` that can also take a request, its answer and their exchange at once."""

    def settle(self, exchange: ExchangeCompleted) -> Optional[Flow]:
        """Fold in ``exchange`` and its two frames, which came right before it, as `apply`
        folds the three in turn; returns the new, settled flow. None, with nothing done, when
        the frames are not a request waiting for this answer alone (a server's request, an
        orphan, a frame number already in flight): `apply` them one at a time."""
        request, response = exchange.request, exchange.response
        conn = exchange.conn
        asked = (conn, request.direction, request.index)
        answered = (conn, response.direction, response.index)
        if (
            request.conn != conn
            or response.conn != conn
            or not request.expects_answer
            or request.answers is not None
            or response.answers != request.index
            or response.direction is request.direction
            or not request.is_request
            or asked in self._by_request
            or answered in self._answers
        ):
            return None
        self._counts.count_frame(request, self.observer)
        self._counts.count_frame(response, self.observer)
        flow = self._new_flow(conn, request.route)
        flow.request = request
        flow.response = response
        flow.outcome = exchange.outcome
        return self._settled(flow)

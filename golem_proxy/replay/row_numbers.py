"""The row numbers `show` gives a loaded trace's exchanges, so that the ``#N`` that replay,
``verify`` and ``diff`` print is the row ``show``, ``check`` and ``resend N`` mean, not the
exchange's place among the exchanges (a malformed frame, a gap, a request never answered or
an answer to no request is a row too, and shifts every number after it).

The numbers are `FlowTracker`'s (`analysis.request_rows`): the file is read as the views read
it, once: the first time a number is asked for (the scanner that loads a trace for replay is
several times faster than that reading, and most replays never print a number), unless the
command read it already (``diff`` reads every trace to its end for its notes), or in a worker
thread once the ``replay`` command's server listens (`number_all`): a miss while that reading
goes on says ``#?`` rather than hold every connection until a large trace is read."""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Optional

from ..analysis.request_rows import RequestRows, read_request_rows
from ..analysis.trace import TraceError

if TYPE_CHECKING:
    from .index import RecordedExchange

__all__ = ["RowNumbers", "number_all", "row_label"]

_Key = tuple[str, float, float]


def row_label(row: Optional[int], file: Optional[str] = None) -> str:
    """How a message names a row: ``#12``, ``b.jsonl#12`` where several recordings are served
    as one, ``#?`` where the row cannot be told."""
    shown = "#?" if row is None else f"#{row}"
    return f"{file}{shown}" if file else shown


class RowNumbers:
    """The row numbers of one recording's exchanges (``exchanges``, as the scanner loaded them
    from ``path``), and its requests never answered and its gaps (`RequestRows`)."""

    def __init__(self, path: Optional[str], exchanges: list[RecordedExchange]) -> None:
        self.path = path
        self.exchanges = exchanges
        self.name: Optional[str] = None
        """The file named with each number where several recordings are served as one."""
        self._found: Optional[RequestRows] = None
        self.notes: list[str] = []
        """What reading the recording to its end noted (`reading_notes`), once read."""
        self._reading = threading.Lock()
        """Held while the recording is read (a worker thread may be reading it)."""

    def rows(self, found: Optional[RequestRows] = None) -> RequestRows:
        """What the recording holds (`RequestRows`): ``found`` when it was read already, else
        read now, once. A recording that can no longer be read (changed or removed since it
        was loaded) numbers nothing: its exchanges' rows are None."""
        with self._reading:
            return self._read(found)

    def answered_by_proxy(self, row: Optional[int]) -> Optional[str]:
        """The proxy's step that answered the exchange at ``row`` in the plugin's place
        (`RequestRows.by_proxy`), or None."""
        return None if row is None else self.rows().by_proxy.get(row)

    def rows_if_free(self) -> Optional[RequestRows]:
        """`rows`, unless a worker thread is reading them now: then None at once (a replay
        server's event loop never waits for a large trace's reading: its message says ``#?``
        meanwhile)."""
        if self._found is not None:
            return self._found
        if not self._reading.acquire(blocking=False):
            return None
        try:
            return self._read(None)
        finally:
            self._reading.release()

    def _read(self, found: Optional[RequestRows]) -> RequestRows:
        """`rows`, the lock held."""
        if self._found is None:
            if found is None:
                found = RequestRows()
                if self.path is not None:
                    with contextlib.suppress(TraceError, OSError):
                        found, self.notes = read_request_rows(self.path)
            _number(self.exchanges, found)
            self._found = found
        return self._found


def number_all(exchanges: Iterable[RecordedExchange]) -> list[str]:
    """Read the rows of every recording ``exchanges`` come from (several served as one),
    each once: for a worker thread. Returns what reading them noted (`RowNumbers.notes`),
    each recording's in turn."""
    seen: dict[int, RowNumbers] = {}
    for exchange in exchanges:
        numbering: Optional[RowNumbers] = getattr(exchange, "_rows", None)
        if numbering is not None and id(numbering) not in seen:
            seen[id(numbering)] = numbering
    notes: list[str] = []
    for numbering in seen.values():
        numbering.rows()
        notes += numbering.notes
    return notes


def _number(exchanges: list[RecordedExchange], found: RequestRows) -> None:
    """Give each exchange its row (None where none is known). Both readers take the exchange
    lines in file order, so the numbers follow the exchanges one for one, each checked by its
    route and times; past the first that differs (a damaged file the two readers pair
    otherwise, or one that grew after it was read), each is looked up by its route and times,
    and a request the reading left waiting may be one answered since."""
    numbers, routes = found.numbers, found.routes
    request_times, response_times = found.request_times, found.response_times
    at = 0
    common = min(len(exchanges), len(numbers))
    while at < common:
        exchange = exchanges[at]
        t0, t1 = exchange.times()
        if exchange.route != routes[at] or t0 != request_times[at] or t1 != response_times[at]:
            break
        exchange._row = numbers[at]
        at += 1
    if at == len(exchanges):
        return
    by_key: dict[_Key, deque[int]] = {}
    for n in range(at, len(numbers)):
        key = (routes[n], request_times[n], response_times[n])
        by_key.setdefault(key, deque()).append(numbers[n])
    waiting = {
        (request.route, request.t): request for request in found.unanswered if request.pending
    }
    for exchange in exchanges[at:]:
        t0, t1 = exchange.times()
        queued = by_key.get((exchange.route, t0, t1))
        if queued:
            exchange._row = queued.popleft()
            continue
        request = waiting.pop((exchange.route, t0), None)
        if request is not None:
            found.answered_after_all(request)
        exchange._row = None if request is None else request.number

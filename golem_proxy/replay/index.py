"""A trace turned into what replay needs: its exchanges in order (recorded_exchanges.py, where
the payloads stay in the file's memory map until needed) and an O(1) lookup from a request's
key to the queue of recorded responses for it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional, Union

from .matching import GuidMap, Keyer, MatchMode, canonical_params
from .recorded_exchanges import ExchangeTrace, RecordedExchange, encode_recorded, load_exchanges
from .row_numbers import row_label

Key = tuple[str, ...]

__all__ = [
    "ExchangeTrace",
    "Key",
    "RecordedExchange",
    "ReplayIndex",
    "encode_recorded",
    "load_exchanges",
    "row_label",
]


class ReplayIndex:
    """Queues of recorded exchanges by key: FIFO per key, O(1) amortised per lookup.

    Keys are computed lazily: the exchanges of one (route, method) wait in trace order and are
    keyed only as far as a lookup needs, so loading stays one pass over the file and a session
    that follows the trace keys each exchange once, just before it is served. Only well-formed
    recorded requests are indexed; malformed ones are answered the way the plugin answers them,
    whatever the recording says."""

    def __init__(self, trace: ExchangeTrace, keyer: Keyer, *, reuse: bool = False) -> None:
        self.trace = trace
        self.keyer = keyer
        self.reuse = reuse
        self.mode = keyer.mode
        # A key's recorded exchanges: most keys have one, kept bare (a deque costs ~600 bytes,
        # which is most of the index for a large trace); a deque once there are more.
        self.queues: dict[Key, Union[RecordedExchange, deque[RecordedExchange]]] = {}
        self.last: dict[tuple[str, ...], RecordedExchange] = {}
        self.by_method: dict[tuple[str, str], list[RecordedExchange]] = {}
        self._unkeyed: dict[tuple[str, str], deque[RecordedExchange]] = {}
        self.used: set[int] = set()
        by_method = self.by_method
        for exchange in trace.exchanges:
            method = exchange.method
            if exchange.request_type != "request" or method is None:
                continue
            bucket = by_method.get((exchange.route, method))
            if bucket is None:
                bucket = by_method[(exchange.route, method)] = []
            bucket.append(exchange)
        if self.mode is MatchMode.SEQUENCE:
            routes: dict[str, deque[RecordedExchange]] = {}
            for exchange in trace.exchanges:
                if exchange.request_type == "request" and exchange.method is not None:
                    routes.setdefault(exchange.route, deque()).append(exchange)
            for route, queue in routes.items():
                self.queues[(route,)] = queue
        elif self.mode is MatchMode.METHOD:
            for (route, method), bucket in by_method.items():
                self.queues[(route, method)] = deque(bucket)
        else:
            for pair, bucket in by_method.items():
                self._unkeyed[pair] = deque(bucket)

    def key(self, route: str, method: str, params: Any, guids: Optional[GuidMap] = None) -> Key:
        """The key a live request looks up (params with numbers normalised)."""
        return self.keyer.key(route, method, params, guids)

    def _key_until(self, route: str, method: str, key: Key) -> None:
        """Key the waiting exchanges of (route, method) until one with ``key`` turns up."""
        waiting = self._unkeyed.get((route, method))
        while waiting:
            exchange = waiting.popleft()
            if exchange.too_large(response=False):
                # Params too large to parse (a reader's budget): matched by method only
                # (`--match method`), never by params.
                continue
            found_method, params = canonical_params(exchange.request)
            if found_method != method:
                continue  # a hand-edited line whose payload does not say what its type does
            own = self.keyer.key(route, method, params)
            queued = self.queues.get(own)
            if queued is None:
                self.queues[own] = exchange
            elif isinstance(queued, deque):
                queued.append(exchange)
            else:
                self.queues[own] = deque((queued, exchange))
            if own == key:
                return

    def take(self, route: str, method: str, key: Key) -> Optional[RecordedExchange]:
        """The next recorded exchange for ``key`` (consumed), the last one again with
        ``reuse``, or None. In sequence mode the next exchange of the route is taken only
        when its method is ``method``."""
        queued = self.queues.get(key)
        if queued is None and self.mode is MatchMode.METHOD_PARAMS:
            self._key_until(route, method, key)
            queued = self.queues.get(key)
        if queued is not None:
            head = queued[0] if isinstance(queued, deque) else queued
            if self.mode is MatchMode.SEQUENCE and head.method != method:
                return None
            if isinstance(queued, deque):
                queued.popleft()
                if not queued:
                    del self.queues[key]
            else:
                del self.queues[key]
            self.last[key] = head
            self.used.add(head.number)
            return head
        if self.reuse:
            last = self.last.get(key)
            if last is not None and last.method == method:
                return last
        return None

    def take_chosen(
        self,
        route: str,
        method: str,
        key: Key,
        choose: Callable[[Sequence[RecordedExchange]], Optional[RecordedExchange]],
    ) -> Optional[RecordedExchange]:
        """The recorded exchange for ``key`` that ``choose`` picks among those left (trace
        order), consumed; None when it picks none. Not for sequence mode. Every waiting
        exchange of (route, method) is keyed first: the one picked may come after others."""
        if self.mode is MatchMode.METHOD_PARAMS:
            self._key_until(route, method, ())  # no key is empty: keys them all
        queued = self.queues.get(key)
        if queued is None:
            return None
        left = list(queued) if isinstance(queued, deque) else [queued]
        chosen = choose(left)
        if chosen is None:
            return None
        rest = [exchange for exchange in left if exchange is not chosen]
        if rest:
            self.queues[key] = deque(rest) if len(rest) > 1 else rest[0]
        else:
            del self.queues[key]
        self.last[key] = chosen
        self.used.add(chosen.number)
        return chosen

    def unused_of(self, route: str, method: str) -> list[RecordedExchange]:
        """The indexed exchanges of (route, method) never handed out, in trace order."""
        return [e for e in self.by_method.get((route, method), []) if e.number not in self.used]

    def take_exchange(self, exchange: RecordedExchange) -> bool:
        """Hand out ``exchange`` itself, found otherwise than by its key (method-params
        mode: a redacted trace's wildcard, `ReplayEngine`), out of its key's queue; False
        when it is in none (used, or never keyed: params too large to parse)."""
        route, method = exchange.route, exchange.method
        if method is None:
            return False
        self._key_until(route, method, ())  # no key is empty: every waiting one is keyed
        found_method, params = canonical_params(exchange.request)
        if found_method != method:
            return False
        own = self.keyer.key(route, method, params)
        queued = self.queues.get(own)
        if isinstance(queued, deque) and exchange in queued:
            queued.remove(exchange)
            if not queued:
                del self.queues[own]
        elif queued is exchange:
            del self.queues[own]
        else:
            return False
        self.last[own] = exchange
        self.used.add(exchange.number)
        return True

    def peek_sequence(self, route: str) -> Optional[RecordedExchange]:
        """In sequence mode, the exchange the route expects next."""
        queued = self.queues.get((route,))
        if isinstance(queued, deque):
            return queued[0]
        return queued

    def last_for(self, key: Key) -> Optional[RecordedExchange]:
        """The exchange most recently handed out for ``key`` (None when none was)."""
        return self.last.get(key)

    def same_method(self, route: str, method: str) -> list[RecordedExchange]:
        """Every indexed exchange of (route, method), in trace order, used or not."""
        return self.by_method.get((route, method), [])

    def methods(self, route: str) -> list[str]:
        return sorted(method for (name, method) in self.by_method if name == route)

    def unused(self, exclude: Iterable[str] = ()) -> list[RecordedExchange]:
        """Indexed exchanges never handed out, in trace order (methods in ``exclude`` left
        out)."""
        skip = set(exclude)
        return [
            e
            for e in self.trace.exchanges
            if e.request_type == "request"
            and e.method is not None
            and e.number not in self.used
            and e.method not in skip
        ]

"""A request sent again as a connection of the running session (`Proxy.resend`): a side
connection to the route's upstream, opened, decoded by a tap of its own and closed as any other
connection is, so that the new exchange is logged and recorded next to the original. The
exchange itself is resend.py's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import trio

from golem_core.profiles import Profile

from ..events import ConnectionClosed, ConnectionOpened, Direction, Event
from ..net.addresses import Route
from .resend import ResendError, Resent, resend
from .tap import ConnectionTap

__all__ = ["RESEND_CLIENT", "ResendConnection"]

RESEND_CLIENT = "golem-proxy resend"
"""The client name of the side connection a request is sent again on (`Proxy.resend`)."""


class ResendConnection:
    """`resend`, mixed into `Proxy` (relay.py), whose routes, connection numbers, taps, clock
    and events it uses."""

    routes: list[Route]
    profile: Profile
    start_time: float
    _ids: Iterator[int]
    _request_ids: Iterator[Any]
    _tap: Callable[[int, str], ConnectionTap]
    publish: Callable[[Event], None]
    now: Callable[[], float]

    async def resend(self, route: str, payload: bytes, timeout: float = 30.0) -> Resent:
        """Send the request ``payload`` again to ``route``'s upstream with a fresh id, on a
        side connection of this session: its frames and exchange are published like any
        other connection's (the client is named ``golem-proxy resend``), so the new flow is
        logged and recorded next to the original. Raises ResendError (an unknown route, an
        upstream that cannot be reached or does not answer)."""
        chosen = next((r for r in self.routes if r.name == route), None)
        if chosen is None:
            raise ResendError(f"no route named {route!r}")
        conn = next(self._ids)
        tap = self._tap(conn, route)
        self.publish(
            ConnectionOpened(
                conn=conn,
                route=route,
                client=RESEND_CLIENT,
                upstream=str(chosen.upstream),
                t=self.now(),
            )
        )
        sent = {Direction.C2S: 0, Direction.S2C: 0}
        ended: set[Direction] = set()

        def observe(direction: Direction, data: bytes, t: float) -> None:
            sent[direction] += len(data)
            if not data:
                ended.add(direction)
            if tap.failed is None:
                try:
                    tap.process(direction, data, t - self.start_time)
                except Exception as exc:  # a decoding bug costs the inspection only
                    tap.fail(exc, t - self.start_time)

        reason, abnormal = "resend answered", False
        try:
            return await resend(
                payload,
                chosen.upstream,
                self.profile,
                ids=self._request_ids,
                timeout=timeout,
                observe=observe,
            )
        except ResendError as exc:
            reason, abnormal = f"resend failed: {exc}", True
            raise
        finally:
            t = self.now()
            for direction in Direction:
                if direction not in ended:
                    observe(direction, b"", trio.current_time())
            self.publish(
                ConnectionClosed(
                    conn=conn,
                    route=route,
                    reason=reason,
                    t=t,
                    bytes_c2s=sent[Direction.C2S],
                    bytes_s2c=sent[Direction.S2C],
                    abnormal=abnormal,
                )
            )

"""How the MCP stdio hop of `golem-proxy mcp` (stdio_relay.py) hands what it relays to
inspection: to the session's observer, decoded on the forwarding path with
``--enforce-limits``, or through the link to an observing process of its own; as a TCP
route's `HandsToInspection` does (hand_on.py), so that the bytes and what was decided about
them (undelivered, cut) arrive in the order they happened."""

from __future__ import annotations

import functools
from typing import Optional

from ..events import Direction
from .relay import Proxy
from .tap import ConnectionTap

__all__ = ["hand_on", "mark"]


def hand_on(
    proxy: Proxy, conn: int, tap: Optional[ConnectionTap], direction: Direction, data: bytes
) -> None:
    """Hand bytes the hop relayed (``b""``: the end of ``direction``'s stream) to inspection
    (``tap``: the hop's, None when an observing process decodes it). Never blocks."""
    t = proxy.now()
    link = proxy.link
    if tap is None:
        if link is not None:
            link.data(conn, direction, data, t)
        return
    if not proxy.options.enforce_limits:
        proxy.observer.submit(tap, direction, data, t)
        return
    # --enforce-limits decodes the GOLEM routes on the forwarding path, ahead of the
    # observer's queue: this hop must be decoded there too, or a GOLEM frame could be
    # decoded before the tools/call that preceded it on the wire. (Its verdicts close
    # nothing: the hop is the client's own pipe.)
    if tap.failed is None:
        try:
            tap.process(direction, data, t)
        except Exception as exc:  # a decoding bug costs the inspection, never the relay
            tap.fail(exc, t)


def mark(
    proxy: Proxy,
    conn: int,
    tap: Optional[ConnectionTap],
    direction: Direction,
    why: str,
    cut: bool = False,
) -> None:
    """The bytes of ``direction`` handed on from now on never reached their receiver
    (``why``), as `Connection.observe_undelivered` says it on the TCP routes; with ``cut``,
    the end of its stream handed on next is the proxy's, not its sender's (``why``: how), as
    `Connection.mark_cut` says it."""
    link = proxy.link
    if link is not None:
        (link.cut if cut else link.undelivered)(conn, direction, why, proxy.now())
        return
    if tap is None:
        return
    marks = functools.partial(tap.cut if cut else tap.mark_undelivered, direction, why)
    if not proxy.options.enforce_limits:
        proxy.observer.after_queued(marks)
    elif tap.failed is None:  # as `hand_on` guards the inline decoding
        try:
            marks()
        except Exception as exc:
            tap.fail(exc, proxy.now())

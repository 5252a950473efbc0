"""When an answer the proxy makes in the plugin's place (``--fault error``, an ``--intercept``
answer typed by hand) may go to the client.

A client that pipelines its requests and reads the answers in order, as GOLEM's does, pairs
the n-th answer it reads with its n-th request, whatever the answer holds. An error the proxy
answers at once, while the plugin still works on a request sent before it, would reach the
client first and be paired with that earlier request. So each such answer waits its turn, as
the client counts: until the plugin's answers passed to the client (any frame of the plugin's
that is no request of its own: matched to a request or not, parsed or skipped as too large, or
decided on otherwise, withheld by a fault or dropped by an intercept) number at least the
requests forwarded before it. Counts, not the requests themselves, because the client counts:
an answer with a wrong id still takes a turn, and a held answer costs one number. Once the
plugin's side of the connection has ended, no answer will come to wait for: each goes at once.

A protocol whose clients pair replies by id (`Profile.replies_by_id`: MCP) needs no turn: its
answers go at once, since one held behind a request the server never answers (a call the
client cancelled) would be held for good.

`fault_relay` counts, asks, and hands `release` how to send; `takes_turn` says which frames
count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Optional

from golem_core.messages import ErrorResponse, Message, Notification, Request, Response

from ..events import Direction

__all__ = ["AnswerTurns", "takes_turn"]


def takes_turn(direction: Direction, message: Optional[Message]) -> bool:
    """Whether a frame of ``direction`` typed ``message`` takes a turn: a request its server
    answers, or a server's answer (any frame of the server's but a request or notification of
    its own). None: not typed (too costly to parse, or not read at all), and taken for what
    most frames of its direction are: GOLEM's client sends only requests, its plugin only
    answers."""
    if message is None:
        return True
    if direction is Direction.C2S:  # a client's answer to a server's request takes none
        return not isinstance(message, (Notification, Response, ErrorResponse))
    return not isinstance(message, (Request, Notification))


class AnswerTurns:
    """The answers of one connection the proxy made and has not sent yet, in order, and the
    counts their turns are told by."""

    def __init__(self, by_position: bool) -> None:
        self.by_position = by_position
        """The client pairs answers by their order (`Profile.replies_by_id` False)."""
        self._held: deque[tuple[int, bytes, str]] = deque()
        """Each answer held, with the number of requests forwarded before it and what made it
        (``--fault error``, ``--intercept``)."""
        self.asked = 0
        """Requests forwarded to the plugin so far, each of which it answers."""
        self.answered = 0
        """The plugin's answers passed to the client so far (or decided on otherwise)."""
        self.ended = False
        """The plugin's side of the connection ended: no answer of its will come."""

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, reply: bytes, made_by: str) -> Optional[int]:
        """Hold ``reply``, made for the request read now, if it must wait: then the number of
        answers the client reads before it (the plugin's still to come for the requests
        forwarded before it, and the proxy's held before it), and it goes when `due` says so.
        None: send it now (nothing goes before it)."""
        if not self.by_position:
            return None
        waits = 0 if self.ended else max(0, self.asked - self.answered)
        if not (waits or self._held):
            return None
        waits += len(self._held)
        self._held.append((self.asked, reply, made_by))
        return waits

    def took(self, direction: Direction) -> None:
        """A frame of ``direction`` took its turn: a request was forwarded, or an answer of
        the plugin's went to the client (or was decided on otherwise)."""
        if direction is Direction.C2S:
            self.asked += 1
        else:
            self.answered += 1

    def due(self) -> Optional[bytes]:
        """The first answer held, if its turn came. It stays held until `went` (one being sent
        still goes before any held after it)."""
        if not self._held:
            return None
        before, reply, _ = self._held[0]
        return reply if self.ended or before <= self.answered else None

    def went(self) -> None:
        """The answer `due` returned was sent."""
        self._held.popleft()

    async def release(self, send: Callable[[bytes], Awaitable[bool]]) -> bool:
        """``send`` each answer due, in order (one sender only: the plugin's pump, once its
        answer let them go). False when the connection ends: one not sent stays held."""
        while (reply := self.due()) is not None:
            if not await send(reply):
                return False
            self.went()
        return True

    def end(self) -> None:
        """The plugin's side ended: every answer held is due."""
        self.ended = True

    def not_sent(self) -> Optional[str]:
        """What the close of a connection that ended with answers held says of them."""
        if not self._held:
            return None
        counts: dict[str, int] = {}
        for _, _, made_by in self._held:  # in order: the first made names the first count
            counts[made_by] = counts.get(made_by, 0) + 1
        parts = [f"{count:,} of {made_by}" for made_by, count in counts.items()]
        first = next(iter(counts.values()))
        parts[0] = parts[0].replace(" of ", " answer of " if first == 1 else " answers of ", 1)
        return f"{' and '.join(parts)} not sent: the connection ended first"

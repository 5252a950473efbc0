"""When an answer the proxy makes in the plugin's place (``--fault error``) may go to the client.

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

`fault_relay` counts, asks, and hands `release` how to send.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Optional

from ..events import Direction

__all__ = ["AnswerTurns"]


class AnswerTurns:
    """The answers of one connection the proxy made and has not sent yet, in order, and the
    counts their turns are told by."""

    def __init__(self, by_position: bool) -> None:
        self.by_position = by_position
        """The client pairs answers by their order (`Profile.replies_by_id` False)."""
        self._held: deque[tuple[int, bytes]] = deque()
        """Each answer held, with the number of requests forwarded before it."""
        self.asked = 0
        """Requests forwarded to the plugin so far, each of which it answers."""
        self.answered = 0
        """The plugin's answers passed to the client so far (or decided on otherwise)."""
        self.ended = False
        """The plugin's side of the connection ended: no answer of its will come."""

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, reply: bytes) -> Optional[int]:
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
        self._held.append((self.asked, reply))
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
        before, reply = self._held[0]
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
        held = len(self._held)
        if not held:
            return None
        what = "answer" if held == 1 else "answers"
        return f"{held:,} {what} of --fault error not sent: the connection ended first"

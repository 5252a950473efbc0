"""When an answer the proxy makes in the plugin's place (``--fault error``) may go to the client.

A client that pipelines its requests and reads the answers in order, as GOLEM's does, pairs
the n-th answer it reads with its n-th request. An error the proxy answers at once, while the
plugin still works on a request sent before it, would reach the client first and be paired
with that earlier request. So each such answer waits its turn: until the plugin's answers to
every request forwarded before it went to the client (or were decided on otherwise: withheld
by a fault, too costly to pair), as the plugin's own answer would have. Once the plugin's side
of the connection has ended, no answer will come to wait for: each goes at once.

Sans-IO: `fault_relay` asks and sends; `ConnectionFaults.waiting` names the requests waiting.
"""

from __future__ import annotations

from collections import deque

__all__ = ["AnswerTurns"]


class AnswerTurns:
    """The answers of one connection the proxy made and has not sent yet, in order."""

    def __init__(self) -> None:
        self._held: deque[tuple[frozenset[int], bytes]] = deque()
        self.answering = 0
        """Answers of the plugin decided on and not sent yet (a ``delay`` holds one): those
        requests no longer wait (`ConnectionFaults.waiting`), but their answers go first."""
        self.ended = False
        """The plugin's side of the connection ended: no answer of its will come."""

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, waiting: frozenset[int], reply: bytes) -> bool:
        """Whether ``reply``, made for a request read after those in ``waiting`` (the
        requests forwarded that wait for their answer now), must wait: then it is held, to go
        when `due` returns it. False: send it now."""
        if self.ended or not (waiting or self._held or self.answering):
            return False
        self._held.append((waiting, reply))
        return True

    def due(self, waiting: frozenset[int]) -> list[bytes]:
        """The answers held whose turn came, in order, now that only ``waiting`` wait (called
        once an answer of the plugin's went, or was withheld). They are no longer held."""
        ready: list[bytes] = []
        while self._held and not self.answering:
            before, reply = self._held[0]
            if not self.ended and before & waiting:
                break
            self._held.popleft()
            ready.append(reply)
        return ready

    def end(self) -> list[bytes]:
        """The plugin's side ended: every answer held, in order, to send now."""
        self.ended = True
        return self.due(frozenset())

"""What the observer's queue holds (observer.py): chunks to decode with what each should cost,
the gaps to note on a connection's tap, and actions to run in order with them; and what one
connection's decoding has shown of its rate, which prices the chunks it queues."""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Union

from golem_core.decoders import Chunk
from golem_core.framing import Frame

from ..events import Direction
from .tap import ConnectionTap

__all__ = ["FIRST_RATE", "Item", "Lost", "Rate", "Work", "last_queued"]

FIRST_RATE = 8.0 * 1024 * 1024
"""Bytes a second a connection is assumed to decode at until it has shown its own rate."""


@dataclass
class Work:
    """A forwarded chunk queued for its connection's tap."""

    tap: ConnectionTap
    direction: Direction
    data: Chunk
    t: float
    submitted: float
    cost: float
    """Seconds of decoding it should take, at its connection's rate when it was queued."""
    frame: Optional[Frame] = None
    """The frame ``data`` is, when the forwarding path decoded it (`ConnectionTap.feed`)."""
    fed: bool = False


@dataclass
class Rate:
    """What one connection's decoding has shown: bytes a second, and the current window."""

    rate: float = FIRST_RATE
    fed: int = 0
    spent: float = 0.0


@dataclass
class Lost:
    """Forwarded bytes of one direction that were never queued: a gap to note on the tap, in
    order with what was queued before it."""

    tap: ConnectionTap
    direction: Direction
    size: int
    t: float
    unsent: int = 0
    """Of ``size``, the bytes never sent on either (`Observer.lose`), and why."""
    why: str = ""

    def tell(self, tap: ConnectionTap) -> None:
        """Count the loss on ``tap``: the bytes forwarded, then those never sent on."""
        if self.size > self.unsent:
            tap.lose(self.direction, self.size - self.unsent, self.t)
        if self.unsent:
            tap.lose(self.direction, self.unsent, self.t, unsent=self.why)


Item = Union[Work, Lost, Callable[[], None]]
"""Chunks to decode, gaps to note, and actions to run once everything before them is done."""


def last_queued(
    queue: collections.deque[Item], tap: ConnectionTap, direction: Direction, size: int
) -> tuple[int, int]:
    """Where in ``queue`` the last ``size`` bytes of ``tap``'s ``direction`` begin, as far as
    they are queued and not fed to the tap yet (a chunk split there when they begin inside
    it): (that index, how many of them were not queued: fed already, or a gap). With none of
    them queued, the index is where the direction's next item would go (the queue's end)."""
    at = len(queue)
    for index in range(len(queue) - 1, -1, -1):
        item = queue[index]
        if not isinstance(item, (Work, Lost)) or item.tap is not tap:
            continue
        if item.direction is not direction:
            continue
        if isinstance(item, Lost) or item.fed or not item.data:
            break
        if len(item.data) >= size:
            keep = len(item.data) - size
            if keep:  # the chunk's first bytes did reach the receiver
                share = keep / len(item.data)
                first = Work(tap, direction, item.data[:keep], item.t, item.submitted,
                             item.cost * share)  # fmt: skip
                rest = Work(tap, direction, item.data[keep:], item.t, item.submitted,
                            item.cost - first.cost)  # fmt: skip
                queue[index] = rest
                queue.insert(index, first)
                return index + 1, 0
            return index, 0
        size -= len(item.data)
        at = index
    return at, size

"""Acknowledgements of the handoff, from the observing process to the forwarding one: the
offset up to which everything is decoded and written, with the rate this process gets through
bytes (observer_link.py and link_ledger.py hold the relay by them); and on the same socket, the
values this process's redaction learned (`Acknowledger.learned`: control_reader.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable

from .link_ledger import TRAIL_LIMIT
from .observer_launch import ACK, learned_message

__all__ = [
    "ACK_AT_ONCE",
    "ACK_AT_ONCE_MAX",
    "RATE_SLOWED",
    "RATE_WINDOW",
    "Acknowledger",
    "ack_at_once",
]

ACK_AT_ONCE = 256 * 1024
"""Marks whose lines are all written already (the bytes only filled a partial frame) are
acknowledged together once decoding yields, unless this many bytes wait for it (at least: see
`ack_at_once`): one message instead of 256 for a 16 MiB answer, each a system call here and a
wake-up of the relay."""
ACK_AT_ONCE_MAX = 2 * 1024 * 1024
"""`ack_at_once` at the rate of 16 MiB answers: 8 messages an answer instead of 64. Each is a
system call that gives up the interpreter to the recorder's thread, and handling it is time
of the relay's core; at 256 KiB they took a tenth of this process's main thread and 16 MiB
answers went at 0.62x the relay, against 0.75x at 2 MiB (interleaved, 4 rounds)."""


def ack_at_once(rate: int) -> int:
    """Bytes decoded and written that are acknowledged at once rather than when decoding
    yields, at ``rate`` (the bytes a second of CPU time this process last said it gets
    through): an eighth of what the forwarding side lets wait at that rate (its byte limit,
    the rate times `TRAIL_LIMIT`, link_ledger.py), within `ACK_AT_ONCE` and `ACK_AT_ONCE_MAX`.
    Tiny frames keep the smallest step; blobs take the largest."""
    return max(ACK_AT_ONCE, min(ACK_AT_ONCE_MAX, int(rate * TRAIL_LIMIT) // 8))


RATE_WINDOW = 0.05
"""Seconds of this process's time (all its threads: decoding and writing) over which the rate
an acknowledgement carries is measured."""
RATE_SLOWED = 0.01
"""Seconds of this process's time after which a window slower than the last rate lowers the
rate an acknowledgement carries at once (the window goes on): tiny frames right after 16 MiB
answers must not keep the answers' byte limit for a whole window, while the relay hands on
MiBs of them that the tap's pending limits then let go."""


class Acknowledger:
    """Sends acknowledgements (`ACK`) on the control socket, from any thread; after an error
    (the forwarding process is gone) it sends nothing more. Each carries the rate: bytes
    acknowledged per second of this process's time (``cpu``) over the last `RATE_WINDOW`, or
    over the window under way when that is slower (after `RATE_SLOWED`)."""

    def __init__(
        self, control: socket.socket, cpu: Callable[[], float] = time.process_time
    ) -> None:
        self.control = control
        self.sent = 0
        self.rate = 0
        """The rate of the last whole window."""
        self.rate_sent = 0
        """The rate the last acknowledgement carried (lower than `rate` once a window under
        way is slower): what the forwarding side's byte limit follows."""
        self._cpu = cpu
        self._window = (cpu(), 0)
        self._lock = threading.Lock()
        self._failed = False

    def __call__(self, offset: int) -> None:
        with self._lock:
            if self._failed or offset <= self.sent:
                return
            (began, since), spent = self._window, self._cpu()
            rate = self.rate
            if spent - began >= RATE_WINDOW:
                rate = self.rate = int((offset - since) / (spent - began))
                self._window = (spent, offset)
            elif spent - began >= RATE_SLOWED and rate:
                rate = min(rate, int((offset - since) / (spent - began)))
            try:
                self.control.sendall(ACK.pack(offset, rate))
            except OSError:
                self._failed = True
                return
            self.sent = offset
            self.rate_sent = rate

    def learned(self, values: Iterable[str]) -> None:
        """Tell the forwarding process of ``values``, which this process's redaction learned
        now (`Echoes.on_new`): it keeps them for the process that replaces this one. Sent
        before the acknowledgement of the frame that taught them, in order with it."""
        messages = b"".join(learned_message(value) for value in values)
        if not messages:
            return
        with self._lock:
            if self._failed:
                return
            try:
                self.control.sendall(messages)
            except OSError:
                self._failed = True

    def at_once(self) -> int:
        """`ack_at_once` at the rate last sent."""
        return ack_at_once(self.rate_sent)

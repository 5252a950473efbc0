"""A fake observing process for the tests of ``proxy --observer child-process``: started in
place of ``python -m golem_proxy.live.observing`` (observer_launch.py's `TEST_MODULE`, set to
``tests.live.fake_observing``), with the same arguments (PIPE CONTROL RECORD). It does the real
handshake (reads the setup, writes the recording's header, answers ``ready``), then reads the
handoff pipe and acknowledges every byte it read, as a healthy observing process would, until
it has read `MISBEHAVE_AFTER` bytes; from then on it misbehaves as `MODE` (an environment
variable) says, one way of `MODES`. It decodes nothing: the recording holds the header and
whatever the forwarding process adds."""

from __future__ import annotations

import itertools
import os
import random
import socket
import sys
import threading
import time
from collections.abc import Sequence
from typing import Callable, Optional

from golem_proxy.live.observer_launch import ACK, learned_message
from golem_proxy.live.observing import receive_setup
from golem_proxy.recording.schema import encode_header

__all__ = ["EARLY_EXIT", "MISBEHAVE_AFTER", "MODE", "MODES", "main"]

MODE = "GOLEM_PROXY_FAKE_OBSERVING"
"""The environment variable naming the misbehaviour (one of `MODES`)."""
MISBEHAVE_AFTER = 256 * 1024
"""Handoff bytes read (and acknowledged) before the misbehaviour starts: mid-session."""
READ_SIZE = 1024 * 1024
OLD_ACKS_EVERY = 0.01
"""Seconds between the acknowledgements of an old offset in ``stop-reading``."""
HUGE_RATE = 2**64 - 1
VALUES_ACKED = 0.05
"""Seconds between the acknowledgements a flood of learned values carries."""
STEP = 16
"""Bytes between the offsets of ``flood-steps`` (less than a record's header)."""


class Fake:
    """The state one misbehaviour works on: the descriptors and how far the pipe is read."""

    def __init__(self, pipe_fd: int, control: socket.socket) -> None:
        self.pipe_fd = pipe_fd
        self.control = control
        self.offset = 0
        """Handoff bytes read so far (each acknowledged once read, unless a mode says not)."""

    def read_some(self) -> bool:
        """One read of the pipe (blocking); False at its end."""
        data = os.read(self.pipe_fd, READ_SIZE)
        self.offset += len(data)
        return bool(data)

    def ack(self, offset: int, rate: int = 0) -> None:
        self.control.sendall(ACK.pack(offset, rate))

    def read_and_ack(self, until: float = float("inf")) -> bool:
        """Read and acknowledge what was read until ``until`` bytes are read; False at the
        pipe's end."""
        while self.offset < until:
            if not self.read_some():
                return False
            self.ack(self.offset)
        return True

    def read_to_end(self, after_each: Callable[[], None] = lambda: None) -> None:
        """Read (and call ``after_each`` after every read) until the pipe ends."""
        while self.read_some():
            after_each()

    def wait_forever(self) -> None:
        """Keep running (with the control socket open) until the forwarding process closes
        it or kills this one."""
        while self.control.recv(4096):
            pass


def close_pipe(fake: Fake) -> None:
    """Close the handoff pipe's read end, keep the control socket, keep running."""
    os.close(fake.pipe_fd)
    fake.wait_forever()


def close_control(fake: Fake) -> None:
    """Close the control socket, keep reading the pipe (acknowledging nothing more)."""
    fake.control.close()
    fake.read_to_end()


def _flood(fake: Fake, acks: Callable[[], bytes]) -> None:
    """Read the pipe, and from a thread of its own send ``acks()`` as fast as the socket
    takes it (until it fails: the forwarding process is gone)."""

    def send() -> None:
        try:
            while True:
                fake.control.sendall(acks())
        except OSError:
            return

    threading.Thread(target=send, daemon=True).start()
    fake.read_to_end()


def flood_same(fake: Fake) -> None:
    """The offset read so far, acknowledged thousands of times in each write."""
    _flood(fake, lambda: ACK.pack(fake.offset, 0) * 4096)


def flood_steps(fake: Fake) -> None:
    """Every `STEP`th offset from the last one sent up to what was read (then the last
    again), thousands in each write."""
    sent = [fake.offset]

    def steps() -> bytes:
        last, read = sent[0], fake.offset
        top = min(read, last + 4096 * STEP)
        sent[0] = top
        if top == last:
            return ACK.pack(read, 0) * 4096
        return b"".join(ACK.pack(offset, 0) for offset in range(last + STEP, top, STEP)) + (
            ACK.pack(top, 0)
        )

    _flood(fake, steps)


def _flood_values(fake: Fake, values: Callable[[], bytes]) -> None:
    """Read the pipe, and from a thread of its own send ``values()`` as fast as the socket
    takes them, with an acknowledgement of what was read every `VALUES_ACKED` seconds (so
    that the relay is not held and the flood goes on)."""

    def send() -> None:
        acked = 0.0
        try:
            while True:
                data = values()
                if time.monotonic() - acked >= VALUES_ACKED:
                    data += ACK.pack(fake.offset, 0)
                    acked = time.monotonic()
                fake.control.sendall(data)
        except OSError:
            return

    threading.Thread(target=send, daemon=True).start()
    fake.read_to_end()


def flood_learned_same(fake: Fake) -> None:
    """One learned value told thousands of times in each write."""
    _flood_values(fake, lambda: learned_message("the same value") * 4096)


def flood_learned_new(fake: Fake) -> None:
    """Learned values told as fast as the socket takes them, each new to the forwarding
    process (more than it keeps, in rotation)."""
    counter = itertools.count()
    _flood_values(
        fake, lambda: b"".join(learned_message(f"v{next(counter) % 300}") for _ in range(256))
    )


def beyond(fake: Fake) -> None:
    """Acknowledge a TiB more than was read (more than was handed on), then go on reading
    and acknowledging."""
    fake.ack(fake.offset + 2**40)
    fake.read_to_end(lambda: fake.ack(fake.offset))


def backwards_and_huge_rate(fake: Fake) -> None:
    """After each true acknowledgement, one of an earlier offset; every rate 2**64 - 1."""

    def acks() -> None:
        fake.ack(fake.offset, HUGE_RATE)
        fake.ack(fake.offset // 2, HUGE_RATE)

    fake.read_to_end(acks)


def half_message(fake: Fake) -> None:
    """Half an acknowledgement, then nothing more on the control socket; the pipe is read on."""
    fake.control.sendall(ACK.pack(fake.offset, 0)[: ACK.size // 2])
    fake.read_to_end()


def random_bytes(fake: Fake) -> None:
    """Random bytes (not a whole number of acknowledgements) on the control socket, then the
    pipe read on and acknowledged."""
    fake.control.sendall(random.Random(25).randbytes(ACK.size * 40 + 5))
    fake.read_to_end(lambda: fake.ack(fake.offset))


def stop_reading(fake: Fake) -> None:
    """Stop reading the pipe; acknowledge the last offset read again and again."""
    while True:
        fake.ack(fake.offset)
        time.sleep(OLD_ACKS_EVERY)


MODES: dict[str, Callable[[Fake], None]] = {
    "close-pipe": close_pipe,
    "close-control": close_control,
    "flood-same": flood_same,
    "flood-steps": flood_steps,
    "flood-learned-same": flood_learned_same,
    "flood-learned-new": flood_learned_new,
    "beyond": beyond,
    "backwards-huge-rate": backwards_and_huge_rate,
    "half-message": half_message,
    "random-bytes": random_bytes,
    "stop-reading": stop_reading,
}
"""The misbehaviours, by name; two more are not here, since they come before ``ready``:
``never-ready`` reads the setup and never answers, ``exit-before-ready`` exits with
`EARLY_EXIT` instead of answering (a start that failed, such as an import error)."""
EARLY_EXIT = 3


def main(argv: Optional[Sequence[str]] = None) -> int:
    pipe_fd, control_fd, record_fd, _ = (int(arg) for arg in (argv or sys.argv[1:])[:4])
    mode = os.environ.get(MODE, "")
    control = socket.socket(fileno=control_fd)
    setup = receive_setup(control)
    if record_fd >= 0 and setup.header is not None and not setup.continues_recording:
        os.write(record_fd, encode_header(setup.header))
    if mode == "never-ready":
        Fake(pipe_fd, control).wait_forever()
        return 0
    if mode == "exit-before-ready":
        return EARLY_EXIT
    misbehave = MODES[mode]
    control.sendall(b"ready\n")
    fake = Fake(pipe_fd, control)
    try:
        if fake.read_and_ack(MISBEHAVE_AFTER):
            misbehave(fake)
    except OSError:  # the forwarding process is gone
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

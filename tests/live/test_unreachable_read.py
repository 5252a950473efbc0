"""Reading what clients sent to an upstream that could not be reached (`UnsentRead`) is
bounded: the connections read at once share one budget, a connection reads no more than a
frame limit, and a client whose bytes never stop coming is read no longer than the grace.
Real loopback sockets, their data written before the reading starts (a client that keeps its
socket full)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
import trio

from golem_proxy.live.unreachable import UnsentBudget, UnsentRead

Pairs = list[tuple[socket.socket, socket.socket]]


@pytest.fixture
def pairs() -> Iterator[Pairs]:
    """Connected loopback TCP pairs (client, proxy side), made on demand, closed after."""
    made: Pairs = []
    yield made
    for client, proxy_side in made:
        client.close()
        proxy_side.close()


def _pair(made: Pairs) -> tuple[socket.socket, socket.socket]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.create_connection(listener.getsockname())
        proxy_side, _ = listener.accept()
    proxy_side.setblocking(False)
    made.append((client, proxy_side))
    return client, proxy_side


def _sent(client: socket.socket, size: int, end: bool = False) -> bytes:
    """Write ``size`` bytes the client sends (all of them there before the proxy reads);
    ``end``: then end its stream."""
    data = bytes(i % 251 for i in range(size))
    client.sendall(data)
    if end:
        client.shutdown(socket.SHUT_WR)
    return data


class _Chunks:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def __call__(self, chunk: bytes, read_at: float) -> None:
        self.chunks.append(chunk)

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


def test_connections_read_at_once_share_one_budget(pairs: Pairs) -> None:
    budget = UnsentBudget(300_000)
    (a_client, a), (b_client, b) = _pair(pairs), _pair(pairs)
    a_sent, b_sent = _sent(a_client, 256 * 1024, end=True), _sent(b_client, 256 * 1024, end=True)
    a_chunks, b_chunks = _Chunks(), _Chunks()
    # A grace the reading never reaches: the budget (or the client's end) stops it.
    a_read = UnsentRead(budget, 32 << 20, a_chunks, grace=30.0)
    b_read = UnsentRead(budget, 32 << 20, b_chunks, grace=30.0)

    async def both() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(a_read, a.fileno())
            nursery.start_soon(b_read, b.fileno())

    trio.run(both)
    # Both held what they read (not yet handed on): together, the budget and no more.
    assert a_read.read + b_read.read == 300_000 and budget.left == 0
    assert (a_chunks.data, b_chunks.data) == (a_sent[: a_read.read], b_sent[: b_read.read])
    stopped = [r for r in (a_read, b_read) if r.past]
    assert stopped and all(r.read < 256 * 1024 for r in stopped)
    assert stopped[0].said() == (
        f"{stopped[0].read:,} bytes read from the client not sent; what it sent after them "
        "was not read (past the 300,000 bytes read at once from clients of unreachable "
        "upstreams)"
    )
    a_read.release()
    b_read.release()
    assert budget.left == 300_000
    # Given back, the budget is there for the next: what the first did not read is read now.
    rest = _Chunks()
    again = UnsentRead(budget, 32 << 20, rest, grace=30.0)
    left_in_b = len(b_sent) - b_read.read
    trio.run(again, b.fileno())
    assert again.read == left_in_b and not again.stopped and rest.data == b_sent[b_read.read :]


def test_a_connection_reads_no_more_than_the_frame_limit(pairs: Pairs) -> None:
    budget = UnsentBudget(1 << 20)
    client, proxy_side = _pair(pairs)
    sent = _sent(client, 300_000)
    chunks = _Chunks()
    reading = UnsentRead(budget, 100_000, chunks, grace=30.0)
    trio.run(reading, proxy_side.fileno())
    assert reading.read == 100_000 and chunks.data == sent[:100_000]
    assert reading.said() == (
        "100,000 bytes read from the client not sent; what it sent after them was not read "
        "(past the 100,000-byte frame limit)"
    )


def test_a_client_that_keeps_its_socket_full_is_read_no_longer_than_the_grace(
    pairs: Pairs,
) -> None:
    """Its bytes are always there to read (4 MB waiting), and handing each chunk on takes
    20 ms (a busy proxy): the reading still stops once the grace is over, at its next chunk,
    never waiting for the socket to be empty."""
    budget = UnsentBudget(8 << 20)
    client, proxy_side = _pair(pairs)
    client.setblocking(False)
    waiting = 0
    try:
        while waiting < 4_000_000:  # bounded: what the loopback's buffers take
            waiting += client.send(b"x" * 65536)
    except BlockingIOError:
        pass
    assert waiting >= 1_000_000  # more than the grace lets a busy reader take

    def slow(chunk: bytes, read_at: float) -> None:
        time.sleep(0.02)

    reading = UnsentRead(budget, 8 << 20, slow, grace=0.05)
    trio.run(reading, proxy_side.fileno())
    # Three chunks take at least 60 ms: the fourth is never read.
    assert 0 < reading.read <= 3 * 65536 < waiting
    assert reading.stopped == "its stream still open after 50 ms" and not reading.past
    # The common case, a client waiting for its answer, is said by the count alone.
    assert reading.said() == f"{reading.read:,} bytes read from the client not sent"

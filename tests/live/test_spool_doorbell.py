"""The spool's doorbell (spool.py, `ObserverLink.keep_flushing`): records written to the spool
in a burst gather under one ring, so the observing process is woken once for them, not once
a record; records written later ring again. A real spool file and pipe; trio's clock is
the test's."""

from __future__ import annotations

import os
from pathlib import Path

import trio
import trio.testing

from golem_proxy.events import Direction
from golem_proxy.live.handoff import Kind
from golem_proxy.live.handoff_reader import RecordReader
from golem_proxy.live.observer_link import ObserverLink
from golem_proxy.live.spool import RING_EVERY, SpoolWriter


def _rings(doorbell: int) -> int:
    try:
        return len(os.read(doorbell, 4096))
    except BlockingIOError:
        return 0


def test_a_burst_of_records_rings_the_doorbell_once_and_later_records_again(
    tmp_path: Path,
) -> None:
    spool = os.open(tmp_path / "r.jsonl.spool", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    bell_read, bell_write = os.pipe()
    os.set_blocking(bell_read, False)
    clock = trio.testing.MockClock(autojump_threshold=0)

    async def main() -> None:
        link = ObserverLink(
            bell_write,
            trio.current_time,
            make_writer=lambda pipe: SpoolWriter(spool, pipe),
            budget=1 << 30,
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(link.keep_flushing)
            for n in range(50):  # one call after another, each a checkpoint apart
                link.data(1, Direction.C2S, b"request %d" % n, trio.current_time())
                await trio.lowlevel.checkpoint()
                link.data(1, Direction.S2C, b"answer %d" % n, trio.current_time())
                await trio.sleep(RING_EVERY / 100)
            assert _rings(bell_read) <= 2  # not one a record: 100 were written
            await trio.sleep(RING_EVERY * 2)
            first = _rings(bell_read)
            link.data(1, Direction.C2S, b"later", trio.current_time())
            assert _rings(bell_read) == 0  # gathers for a moment first
            await trio.sleep(RING_EVERY * 2)
            assert first >= 0 and _rings(bell_read) == 1
            nursery.cancel_scope.cancel()
        # Every record is in the spool, whole and in order, whatever the rings.
        os.lseek(spool, 0, os.SEEK_SET)
        reader = RecordReader()
        reader.receive_data(os.read(spool, 1 << 20))
        found, settled = [], []
        while (record := reader.next_record()) is not None:
            if record.kind is Kind.SETTLED:  # a ring after a batch that ended with DATA
                settled.append(len(found))
            else:
                found.append(bytes(record.data))
        assert found[-1] == b"later" and found[0] == b"request 0" and len(found) == 101
        assert settled and settled[-1] == 101, settled  # the last chunk settled by its ring

    try:
        trio.run(main, clock=clock)
    finally:
        for fd in (spool, bell_read, bell_write):
            os.close(fd)

"""The forwarding process, which keeps freed heap mapped while it hands large answers on
(`KEEP_FREED`), gives it back once `TRIM_AFTER` bytes were handed on and nothing was for
`TRIM_IDLE`: after a burst, never while bytes keep coming, and not between bursts that come
back after short pauses (`TrimPacing`)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from typing import cast

import pytest
import trio

from golem_proxy.live import heap
from golem_proxy.live import observer_process as observer_process_module
from golem_proxy.live.handoff import HandoffWriter
from golem_proxy.live.observer_link import ObserverLink
from golem_proxy.live.observer_process import TRIM_AFTER, TRIM_IDLE, ObservingProcess


def test_glibc_keeps_freed_memory_when_asked() -> None:
    assert heap.keep_freed_memory(observer_process_module.HEAP_ALLOCATIONS_BELOW) is (
        heap._GLIBC is not None
    )


@pytest.fixture
def trims(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When the forwarding process gave its freed heap back (trio's clock)."""
    found: list[float] = []
    monkeypatch.setattr(
        observer_process_module,
        "return_memory_to_the_system",
        lambda: found.append(trio.current_time()),
    )
    return found


@contextlib.asynccontextmanager
async def _handing_on() -> AsyncIterator[HandoffWriter]:
    """A link's writer, whose ``handed`` count the giving back follows while the block runs."""
    read_end, write_end = socket.socketpair()
    with read_end, write_end:
        link = ObserverLink(write_end.fileno(), trio.current_time)
        observing = ObservingProcess(
            cast(trio.Process, None), link, read_end, None, trio.current_time
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(observing._give_memory_back)
            yield link.writer
            nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_freed_heap_goes_back_after_a_burst_only(
    trims: list[float], autojump_clock: trio.testing.MockClock
) -> None:
    async with _handing_on() as writer:

        async def hand_on(total: int, every: float) -> None:
            """``total`` bytes in steps closer together than the idle spell."""
            for _ in range(8):
                writer.handed += total // 8
                await trio.sleep(every)

        await hand_on(TRIM_AFTER // 2, TRIM_IDLE / 4)
        await trio.sleep(TRIM_IDLE * 4)
        assert trims == [], "less than TRIM_AFTER was handed on: nothing to give back"
        await hand_on(TRIM_AFTER, TRIM_IDLE / 4)
        assert trims == [], "bytes kept coming: no trim between them"
        busy_until = trio.current_time()
        await trio.sleep(TRIM_IDLE * 3)
        assert len(trims) == 1
        assert busy_until < trims[0] <= busy_until + 2 * TRIM_IDLE
        await trio.sleep(TRIM_IDLE * 4)
        assert len(trims) == 1, "once per burst"


@pytest.mark.trio
async def test_bursts_in_a_rhythm_keep_their_heap_after_the_first_pause(
    trims: list[float], autojump_clock: trio.testing.MockClock
) -> None:
    async with _handing_on() as writer:
        for _ in range(6):  # a burst, then three seconds of thought
            writer.handed += TRIM_AFTER
            await trio.sleep(3.0)
        assert len(trims) == 1
        last = trio.current_time() - 3.0
        await trio.sleep(heap.TRIM_IDLE_LONGEST + 1)
        assert len(trims) == 2 and trims[1] > last + 3.0


@pytest.mark.trio
async def test_a_heartbeat_does_not_keep_a_later_burst_s_heap(
    trims: list[float], autojump_clock: trio.testing.MockClock
) -> None:
    async with _handing_on() as writer:
        for _ in range(2):  # a rhythm
            writer.handed += TRIM_AFTER
            await trio.sleep(3.0)
        assert len(trims) == 1
        writer.handed += TRIM_AFTER  # a burst, then a poll every two seconds
        burst = trio.current_time()
        for _ in range(15):
            await trio.sleep(2.0)
            writer.handed += 100
        after = [t for t in trims if t > burst]
        assert len(after) == 1 and after[0] <= burst + heap.TRIM_IDLE_LONGEST + 2.0

"""The observer gives freed pages back to the system once it has been idle for `TRIM_IDLE`
after decoding at least `TRIM_AFTER`: after a burst, never between two answers of a steady
run (each 16 MiB answer would fault its pages in again), and once bursts come back after short
pauses, no longer between them (`TrimPacing`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live import observer as observer_module
from golem_proxy.live.heap import TRIM_IDLE, TRIM_IDLE_LONGEST
from golem_proxy.live.observer import Observer
from golem_proxy.live.tap import ConnectionTap

ANSWER = GOLEM.encode({"id": 1, "result": {"image": "QUJD" * 4096}, "error": None})


SMALL = GOLEM.encode({"id": 2, "result": {}, "error": None})


@pytest.fixture
def trims(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When the observer gave freed pages back (trio's clock); one answer is enough decoded."""
    found: list[float] = []
    monkeypatch.setattr(observer_module, "TRIM_AFTER", len(ANSWER))
    monkeypatch.setattr(
        observer_module, "return_memory_to_the_system", lambda: found.append(trio.current_time())
    )
    return found


@contextlib.asynccontextmanager
async def _observing(events: list[Event]) -> AsyncIterator[Callable[[bytes], Awaitable[None]]]:
    """An observer running while the block runs, and a way to have it decode an answer."""
    observer = Observer(quiet=0.0, max_delay=0.0)
    tap = ConnectionTap(1, "main", GOLEM, events.append)

    async def decode(data: bytes) -> None:
        observer.submit(tap, Direction.S2C, data, 0.0)
        while not observer.idle:
            await trio.sleep(0.001)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(observer.run)
        yield decode
        nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_pages_go_back_only_after_an_idle_spell(
    trims: list[float], autojump_clock: trio.testing.MockClock
) -> None:
    events: list[Event] = []
    async with _observing(events) as decode:
        drained = 0.0
        for _ in range(5):  # a steady run: each answer comes before the observer is idle long
            await decode(ANSWER)
            drained = trio.current_time()
            await trio.sleep(TRIM_IDLE / 2)
        assert trims == []
        await trio.sleep(TRIM_IDLE * 2)  # then the run stops
        assert len(trims) == 1 and trims[0] >= drained + TRIM_IDLE - 0.002
    assert sum(isinstance(e, FrameSeen) for e in events) == 5  # every answer was decoded


@pytest.mark.trio
async def test_bursts_in_a_rhythm_keep_their_pages_after_the_first_pause(
    trims: list[float], autojump_clock: trio.testing.MockClock
) -> None:
    """A model that captures, thinks for two seconds and captures again: one trim after the
    first capture, none between the next ones, and one after the session's last."""
    async with _observing([]) as decode:
        for _ in range(6):
            await decode(ANSWER)
            last = trio.current_time()
            await trio.sleep(2.0)
        assert len(trims) == 1, "the first pause was taken for the end of the work"
        await trio.sleep(TRIM_IDLE_LONGEST + 1)
        assert len(trims) == 2 and trims[1] > last + 2.0


@pytest.mark.trio
async def test_a_heartbeat_does_not_keep_a_later_burst_s_pages(
    trims: list[float], autojump_clock: trio.testing.MockClock
) -> None:
    """A poll every two seconds after a rhythm was learnt: a burst among the polls still goes
    back within the longest wait, and the polls alone teach nothing."""
    async with _observing([]) as decode:
        for _ in range(2):  # a rhythm: the second burst teaches a longer wait
            await decode(ANSWER)
            await trio.sleep(2.0)
        assert len(trims) == 1
        for _ in range(5):
            await decode(SMALL)
            await trio.sleep(2.0)
        await decode(ANSWER)
        burst = trio.current_time()
        for _ in range(15):
            await trio.sleep(2.0)
            await decode(SMALL)
        after = [t for t in trims if t > burst]
        assert len(after) == 1 and after[0] <= burst + TRIM_IDLE_LONGEST + 2.0

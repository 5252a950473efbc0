"""The observer gives freed pages back to the system once it has been idle for `TRIM_IDLE`
after decoding at least `TRIM_AFTER`: after a burst, never between two answers of a steady
run (each 16 MiB answer would fault its pages in again), and once bursts come back after short
pauses, no longer between them (`TrimPacing`)."""

from __future__ import annotations

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, Event, FrameSeen
from golem_proxy.live import observer as observer_module
from golem_proxy.live.heap import TRIM_IDLE, TRIM_IDLE_LONGEST
from golem_proxy.live.observer import Observer
from golem_proxy.live.tap import ConnectionTap

ANSWER = GOLEM.encode({"id": 1, "result": {"image": "QUJD" * 4096}, "error": None})


@pytest.mark.trio
async def test_pages_go_back_only_after_an_idle_spell(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    trims: list[float] = []
    monkeypatch.setattr(observer_module, "TRIM_AFTER", len(ANSWER))
    monkeypatch.setattr(
        observer_module, "return_memory_to_the_system", lambda: trims.append(trio.current_time())
    )
    events: list[Event] = []
    observer = Observer(quiet=0.0, max_delay=0.0)
    tap = ConnectionTap(1, "main", GOLEM, events.append)

    async def decoded() -> None:
        while not observer.idle:
            await trio.sleep(0.001)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(observer.run)
        drained = 0.0
        for _ in range(5):  # a steady run: each answer comes before the observer is idle long
            observer.submit(tap, Direction.S2C, ANSWER, 0.0)
            await decoded()
            drained = trio.current_time()
            await trio.sleep(TRIM_IDLE / 2)
        assert trims == []
        await trio.sleep(TRIM_IDLE * 2)  # then the run stops
        assert len(trims) == 1 and trims[0] >= drained + TRIM_IDLE - 0.002
        nursery.cancel_scope.cancel()
    assert sum(isinstance(e, FrameSeen) for e in events) == 5  # every answer was decoded


@pytest.mark.trio
async def test_bursts_in_a_rhythm_keep_their_pages_after_the_first_pause(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    """A model that captures, thinks for two seconds and captures again: one trim after the
    first capture, none between the next ones, and one after the session's last."""
    trims: list[float] = []
    monkeypatch.setattr(observer_module, "TRIM_AFTER", len(ANSWER))
    monkeypatch.setattr(
        observer_module, "return_memory_to_the_system", lambda: trims.append(trio.current_time())
    )
    observer = Observer(quiet=0.0, max_delay=0.0)
    tap = ConnectionTap(1, "main", GOLEM, lambda _event: None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(observer.run)
        for _ in range(6):
            observer.submit(tap, Direction.S2C, ANSWER, 0.0)
            while not observer.idle:
                await trio.sleep(0.001)
            last = trio.current_time()
            await trio.sleep(2.0)
        assert len(trims) == 1, "the first pause was taken for the end of the work"
        await trio.sleep(TRIM_IDLE_LONGEST + 1)
        assert len(trims) == 2 and trims[1] > last + 2.0
        nursery.cancel_scope.cancel()


SMALL = GOLEM.encode({"id": 2, "result": {}, "error": None})


@pytest.mark.trio
async def test_a_heartbeat_does_not_keep_a_later_burst_s_pages(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    """A poll every two seconds after a rhythm was learnt: a burst among the polls still goes
    back within the longest wait, and the polls alone teach nothing."""
    trims: list[float] = []
    monkeypatch.setattr(observer_module, "TRIM_AFTER", len(ANSWER))
    monkeypatch.setattr(
        observer_module, "return_memory_to_the_system", lambda: trims.append(trio.current_time())
    )
    observer = Observer(quiet=0.0, max_delay=0.0)
    tap = ConnectionTap(1, "main", GOLEM, lambda _event: None)

    async def feed(data: bytes) -> None:
        observer.submit(tap, Direction.S2C, data, 0.0)
        while not observer.idle:
            await trio.sleep(0.001)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(observer.run)
        for _ in range(2):  # a rhythm: the second burst teaches a longer wait
            await feed(ANSWER)
            await trio.sleep(2.0)
        assert len(trims) == 1
        for _ in range(5):
            await feed(SMALL)
            await trio.sleep(2.0)
        await feed(ANSWER)
        burst = trio.current_time()
        for _ in range(15):
            await trio.sleep(2.0)
            await feed(SMALL)
        after = [t for t in trims if t > burst]
        assert len(after) == 1 and after[0] <= burst + TRIM_IDLE_LONGEST + 2.0
        nursery.cancel_scope.cancel()

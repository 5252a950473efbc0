"""Bytes the observer lost inside a frame (``behind``) are in the recording all the same: the
part of a frame being digested that was observed is said as its first bytes (never "whole"),
the rest of the frame counts in the gap, decoding goes on exactly at the frame's end, and a
stream that ends before that end is reported truncated, as one observed whole would be."""

from __future__ import annotations

import struct

import pytest

from golem_core.framing import FrameErrorKind
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_proxy.events import (
    BytesDiscarded,
    Direction,
    Event,
    FrameSeen,
    FramingErrorSeen,
    GapReason,
    ObservationLost,
)
from golem_proxy.live.observer import Observer
from golem_proxy.live.tap import ConnectionTap, ObserveLimits

C2S = Direction.C2S
LIMIT = 1024
"""The observation limit of these taps: frames over it are digested, not held."""


def _tap(events: list[Event], profile: Profile = GOLEM) -> ConnectionTap:
    return ConnectionTap(1, "main", profile, events.append, limits=ObserveLimits(frame=LIMIT))


def _large(size: int) -> bytes:
    """A GOLEM frame of ``size`` bytes on the wire, over the observation limit."""
    body = b'{"id": "big", "method": "m", "params": {"s": "'
    body += b"x" * (size - 4 - len(body) - 4) + b'"}}'
    return struct.pack("!I", len(body) + 1) + body + b"\n"


def _call(n: int) -> bytes:
    return GOLEM.encode({"id": f"r{n}", "method": "echo", "params": {}})


def accounted(events: list[Event]) -> int:
    """The client's bytes the events account for: frames, framing errors, discarded bytes and
    gaps (an eviction's counts requests, not bytes)."""
    total = 0
    for event in events:
        if getattr(event, "direction", None) is not C2S:
            continue
        if isinstance(event, FrameSeen):
            total += event.size
        elif isinstance(event, (FramingErrorSeen, BytesDiscarded)):
            total += len(event.raw)
        elif isinstance(event, ObservationLost) and event.reason is not GapReason.EVICTED:
            total += event.size
    return total


def _gaps(events: list[Event]) -> list[tuple[GapReason, int]]:
    return [(e.reason, e.size) for e in events if isinstance(e, ObservationLost)]


def _truncated(events: list[Event]) -> list[str]:
    return [
        e.detail
        for e in events
        if isinstance(e, FramingErrorSeen) and e.kind is FrameErrorKind.TRUNCATED
    ]


def test_a_loss_inside_a_digested_frame_accounts_for_every_byte_and_the_cut() -> None:
    """The observer queued a frame's start, shed the middle, queued more of it, and the client
    closed before its end: each byte is in one event, and the stream is truncated."""
    events: list[Event] = []
    tap = _tap(events)
    frame = _large(10_000)
    tap.process(C2S, frame[:3000], 1.0)
    tap.lose(C2S, 4000, 1.1)
    tap.process(C2S, frame[7000:9000], 1.2)
    tap.process(C2S, b"", 1.3)
    assert accounted(events) == 9000
    assert _gaps(events) == [(GapReason.FRAME_TOO_LARGE, 3000), (GapReason.BEHIND, 6000)]
    digested = next(e for e in events if isinstance(e, ObservationLost))
    assert digested.detail == (
        "the first 3000 bytes of a 10000-byte frame over the 1024-byte observation limit were "
        "forwarded; the rest of it went unobserved (the gap that follows); kept as their "
        "header, size and digest"
    )
    assert _truncated(events) == [
        "stream ended 1000 bytes before the end of a frame partly unobserved"
    ]


def test_decoding_goes_on_at_the_end_of_the_frame_a_loss_cut_into() -> None:
    """A frame under the limit, held in part when the loss came, and the frame after it in the
    same chunk as its last bytes: that one is decoded, and the gap is the first one's whole."""
    events: list[Event] = []
    tap = _tap(events)
    first, second = _call(1) + b" " * 200, _call(2)
    first = struct.pack("!I", len(first) - 4) + first[4:]
    tap.process(C2S, first[:50], 1.0)
    tap.lose(C2S, 100, 1.1)
    tap.process(C2S, first[150:] + second, 1.2)
    tap.process(C2S, b"", 1.3)
    assert _gaps(events) == [(GapReason.BEHIND, len(first))]
    assert [e.size for e in events if isinstance(e, FrameSeen)] == [len(second)]
    assert accounted(events) == len(first) + len(second)
    assert _truncated(events) == []


def test_a_loss_that_ends_with_its_frame_is_said_before_the_next_frame() -> None:
    events: list[Event] = []
    tap = _tap(events)
    first, second = _call(1), _call(2)
    tap.process(C2S, first[:10], 1.0)
    tap.lose(C2S, len(first) - 10, 1.1)
    tap.process(C2S, second, 1.2)
    kinds = [type(e) for e in events if type(e) in (ObservationLost, FrameSeen)]
    assert kinds == [ObservationLost, FrameSeen]
    assert accounted(events) == len(first) + len(second)


@pytest.mark.trio
async def test_a_loss_from_a_frames_first_byte_keeps_its_header() -> None:
    """The observer sheds a chunk that starts a frame: its first bytes are decoded all the
    same, so the frame's length is known, and so is a stream cut inside it."""
    events: list[Event] = []
    tap = _tap(events)
    observer = Observer(budget=1000)
    observer.submit(tap, C2S, _large(10_000)[:6000], 1.0)  # over the budget: shed
    observer.submit(tap, C2S, b"", 1.1)
    observer.drain_now()
    assert accounted(events) == 6000
    assert _truncated(events) == [
        "stream ended 4000 bytes before the end of a frame partly unobserved"
    ]


def test_a_stream_cut_inside_a_digested_frame_never_says_whole() -> None:
    """Every byte observed (no loss), the client gone before the frame's end."""
    events: list[Event] = []
    tap = _tap(events)
    tap.process(C2S, _large(10_000)[:6000], 1.0)
    tap.process(C2S, b"", 1.1)
    (gap,) = [e for e in events if isinstance(e, ObservationLost)]
    assert gap.size == 6000
    assert "whole" not in gap.detail
    assert gap.detail.startswith("the first 6000 bytes of a 10000-byte frame over the 1024-byte")
    assert "the stream ended inside it" in gap.detail
    assert len(_truncated(events)) == 1


def test_a_connection_cut_inside_a_digested_frame_says_it_at_its_close() -> None:
    """No end of stream came (the proxy stopped while the client was sending it): its close says
    what was digested and that the frame was cut, as an end of stream would have."""
    events: list[Event] = []
    tap = _tap(events)
    tap.process(C2S, _large(10_000)[:6000], 1.0)
    tap.closing(2.0)
    assert _gaps(events) == [(GapReason.FRAME_TOO_LARGE, 6000)]
    assert len(_truncated(events)) == 1


def test_a_digested_frame_read_but_never_delivered_is_not_said_forwarded() -> None:
    events: list[Event] = []
    tap = _tap(events)
    tap.mark_undelivered(C2S, "connection ended")
    tap.process(C2S, _large(10_000)[:6000], 1.0)
    tap.closing(2.0)
    (gap,) = [e for e in events if isinstance(e, ObservationLost)]
    assert gap.detail.startswith(
        "the first 6000 bytes of a 10000-byte frame over the 1024-byte observation limit were "
        "read, never delivered (connection ended); the stream ended inside it"
    )


def test_lines_cut_inside_a_digested_line_or_after_a_loss_are_truncated() -> None:
    """A line has no declared length: one cut while digested, or one whose start was lost and
    whose observed rest has no newline, ended inside a frame all the same."""
    digested: list[Event] = []
    tap = _tap(digested, JSONRPC_NDJSON)
    tap.process(C2S, b'{"jsonrpc": "2.0", "method": "m", "params": "' + b"x" * 3000, 1.0)
    tap.process(C2S, b"", 1.1)
    assert [reason for reason, _ in _gaps(digested)] == [GapReason.FRAME_TOO_LARGE]
    assert _truncated(digested) == ["stream ended inside a frame over the observation limit"]

    searched: list[Event] = []
    tap = _tap(searched, JSONRPC_NDJSON)
    tap.process(C2S, b'{"jsonrpc": "2.0", "method": "m"', 1.0)
    tap.lose(C2S, 500, 1.1)
    tap.process(C2S, b"no newline since the loss", 1.2)
    tap.process(C2S, b"", 1.3)
    assert accounted(searched) == 32 + 500 + 25
    assert _truncated(searched) == ["stream ended in a line partly unobserved"]


def test_a_loss_from_a_frames_first_byte_is_truncated_when_the_forwarding_side_says_so() -> None:
    """The forwarding process shed a frame from its first byte (``--observer-hold``): no header
    here tells its length, and its word that the stream ended inside a frame is what says
    the stream was cut (a ``CUT`` record); without that word, no cut is made up."""
    for said, cut in ((3953, ["stream ended 3953 bytes before the end of a frame partly "
                              "unobserved"]), (None, [])):  # fmt: skip
        events: list[Event] = []
        tap = _tap(events)
        tap.process(C2S, _call(1), 1.0)
        tap.lose(C2S, 1051, 1.1)
        if said is not None:
            tap.ends_inside(C2S, said)
        tap.process(C2S, b"", 1.2)
        assert accounted(events) == len(_call(1)) + 1051
        assert _truncated(events) == cut

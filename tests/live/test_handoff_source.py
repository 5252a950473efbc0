"""The observing process's reading of ``UNRECORDED`` records (handoff_source.py): the values a
frame not recorded as it came teaches its connection's tap are learned in order with the
chunks, and a record that does not read stops that connection's decoding, said as a gap,
never the observing process."""

from __future__ import annotations

import os
import pickle

import pytest
import trio

from golem_core.profiles import GOLEM
from golem_proxy.events import (
    ConnectionClosed,
    ConnectionOpened,
    Event,
    FrameSeen,
    GapReason,
    ObservationLost,
)
from golem_proxy.live.handoff import HandoffWriter, Kind
from golem_proxy.live.handoff_source import HandoffSource
from golem_proxy.live.hub import EventHub
from golem_proxy.live.proxy_options import ProxyOptions
from golem_proxy.live.unrecorded_values import unrecorded_records

pytestmark = pytest.mark.trio

TOKEN = "ISSUED-token-7f3a"


async def observed(*records: tuple[Kind, int, float, bytes]) -> list[Event]:
    """The events an observing process with ``--redact params.token`` publishes of one
    connection opened, ``records`` (kind, direction, time, data), and its close."""
    events: list[Event] = []
    hub = EventHub()
    hub.attach_sink(events.append)
    read_fd, write_fd = os.pipe()
    writer = HandoffWriter(write_fd)
    source = HandoffSource(hub, read_fd, [], GOLEM, ProxyOptions(redact=("params.token",)))
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(source.serve)
            opened = ConnectionOpened(
                conn=1, route="main", t=0.0, client="127.0.0.1:1", upstream="127.0.0.1:2"
            )
            writer.event(Kind.OPENED, 1, 0, 0.0, pickle.dumps(opened))
            for kind, direction, t, data in records:
                if kind is Kind.DATA:
                    writer.data(1, direction, t, data)
                else:
                    writer.event(kind, 1, direction, t, data)
            closed = ConnectionClosed(conn=1, route="main", reason="client closed", t=2.0)
            writer.event(Kind.CLOSED, 1, 0, 2.0, pickle.dumps(closed))
            os.close(write_fd)
            write_fd = -1
    finally:
        if write_fd >= 0:
            os.close(write_fd)
        os.close(read_fd)
    return events


def check_request(ident: str) -> bytes:
    return GOLEM.encode({"id": ident, "method": "auth.check", "params": {"note": TOKEN}})


async def test_values_handed_on_are_hidden_where_a_later_frame_repeats_them() -> None:
    (learned,) = unrecorded_records([TOKEN], 1 << 20)
    events = await observed(
        (Kind.DATA, 0, 0.5, check_request("c1")),
        (Kind.UNRECORDED, 1, 0.6, learned),
        (Kind.DATA, 0, 0.7, check_request("c2")),
    )
    frames = [event for event in events if isinstance(event, FrameSeen)]
    assert [(frame.message.id, frame.redacted) for frame in frames] == [
        ("c1", ()),
        ("c2", ("echo",)),
    ]
    assert TOKEN.encode() not in frames[1].payload


async def test_a_record_that_does_not_read_stops_its_connection_s_decoding_not_the_process() -> (
    None
):
    """A value that is no UTF-8 (the data ``\\x00\\x00\\x00\\x01\\xff``): the connection's
    redaction can no longer know what it must hide, so it records nothing more of it, and
    says so at the record's time; before, the observing process died of it."""
    events = await observed(
        (Kind.DATA, 0, 0.5, check_request("c1")),
        (Kind.UNRECORDED, 1, 0.6, b"\x00\x00\x00\x01\xff{}"),
        (Kind.DATA, 0, 0.7, check_request("c2")),
    )
    frames = [event for event in events if isinstance(event, FrameSeen)]
    assert [frame.message.id for frame in frames] == ["c1"]
    (gap,) = [e for e in events if isinstance(e, ObservationLost) and e.t == 0.6]
    assert gap.reason is GapReason.OBSERVER_FAILED
    assert "no UTF-8" in gap.detail
    assert any(isinstance(event, ConnectionClosed) for event in events)

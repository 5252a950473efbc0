"""Intercept steps are events of their own (`InterceptStep`), recorded as ``intercept`` lines;
a recording written when they were faults named ``intercept:STEP`` reads the same."""

from __future__ import annotations

import io

import pytest

from golem_proxy.events import Direction, FaultInjected, InterceptKind, InterceptStep
from golem_proxy.recording.format import (
    Header,
    RecordingError,
    RecordingReader,
    RecordingWriter,
    RouteInfo,
)

HEADER = Header.new("golem", [RouteInfo("main", "127.0.0.1:19876", "127.0.0.1:9876")])


def read(lines: bytes) -> list[object]:
    out = io.BytesIO()
    RecordingWriter(out, HEADER).flush()
    return list(RecordingReader(io.BytesIO(out.getvalue() + lines)))


def test_every_step_roundtrips_as_an_intercept_line() -> None:
    events = [
        InterceptStep(
            conn=1,
            route="main",
            direction=Direction.C2S,
            t=0.5,
            kind=kind,
            detail=f"{kind.value} #1",
            method="scene.create_layer",
            withheld=kind in (InterceptKind.DROPPED, InterceptKind.ANSWERED),
            original=b'{"id":1}' if kind is InterceptKind.EDITED else b"",
        )
        for kind in InterceptKind
    ]
    out = io.BytesIO()
    writer = RecordingWriter(out, HEADER)
    for event in events:
        writer.write(event)
    writer.flush()
    data = out.getvalue()
    assert data.count(b'"kind":"intercept"') == len(InterceptKind)
    assert list(RecordingReader(io.BytesIO(data))) == events


def test_an_old_fault_line_of_an_intercept_step_reads_as_a_step() -> None:
    old = (
        b'{"seq":1,"t":0.5,"kind":"fault","conn":1,"route":"main","dir":"c2s",'
        b'"fault":"intercept:drop","detail":"withheld request: dropped",'
        b'"method":"viewport.get_view_info","withheld":true}\n'
        b'{"seq":2,"t":0.6,"kind":"fault","conn":1,"route":"main","dir":"s2c",'
        b'"fault":"drop","detail":"withheld response","method":"ping","withheld":true}\n'
    )
    step, fault = read(old)
    assert step == InterceptStep(
        conn=1,
        route="main",
        direction=Direction.C2S,
        t=0.5,
        kind=InterceptKind.DROPPED,
        detail="withheld request: dropped",
        method="viewport.get_view_info",
        withheld=True,
    )
    assert isinstance(fault, FaultInjected) and fault.fault == "drop"


def test_an_unknown_step_is_one_clear_error() -> None:
    line = (
        b'{"seq":1,"t":0.5,"kind":"intercept","conn":1,"route":"main","dir":"c2s",'
        b'"step":"explode","detail":""}\n'
    )
    with pytest.raises(RecordingError, match="line 2: an intercept step must be held or"):
        read(line)

"""The ``server_stderr`` view of `query`: each line a wrapped server wrote, whole however its
chunks split it (a character too), with the time of the chunk that began it; the same from
one process, from several, and from the cache. A trace whose server wrote nothing has no
rows there, and the view is there all the same. (Recorded by the real wrapper:
tests/mcp_layer/test_mcp_server_stderr_views.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from golem_proxy.events import ProcessOutput
from tests.support.sessions import SessionBuilder, write_recording

from .query_helpers import SAMPLES, query_lines, trace_of

CHUNKS = [
    (0.5, b"Traceback (most recent"),
    (0.75, b" call last):\n  caf\xc3"),
    (1.0, b"\xa9 \xe2\x9c\x93\r\nlast words"),
]


def written(tmp_path: Path) -> str:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    s.request(1, "ping", {}, 0.1)
    events = [*s.events]
    events += [ProcessOutput(conn=1, route="mcp", t=t, data=data) for t, data in CHUNKS]
    path = str(tmp_path / "said.jsonl")
    write_recording(path, events)
    return path


def test_each_line_is_a_row_with_the_time_of_the_chunk_that_began_it(tmp_path: Path) -> None:
    trace = written(tmp_path)
    sql = "SELECT * FROM server_stderr"
    rows = [json.loads(line) for line in query_lines(sql, trace, "--jobs", "1")]
    assert rows == [
        {"trace": trace_of(trace), "route": "mcp", "conn": 1, "t": 0.5,
         "text": "Traceback (most recent call last):"},
        {"trace": trace_of(trace), "route": "mcp", "conn": 1, "t": 0.75, "text": "  café ✓"},
        {"trace": trace_of(trace), "route": "mcp", "conn": 1, "t": 1.0, "text": "last words"},
    ]  # fmt: skip
    sample = str(SAMPLES[0])
    for options in (("--jobs", "2"), ("--cache", str(tmp_path / "cache"))) * 2:
        again = query_lines(sql + " ORDER BY trace, t", trace, sample, *options)
        assert [json.loads(line) for line in again] == rows, options
    none = query_lines("SELECT count(*) AS n FROM server_stderr", sample)
    assert [json.loads(line) for line in none] == [{"n": 0}]

"""``golem-proxy verify`` takes as the live answer the frame that answers the request it sent, by
the profile's pairing rule, against a live plugin on 127.0.0.1 that misbehaves: what else the
plugin sends is skipped and reported, never compared as an answer nor written by ``--update``."""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import trio

from golem_core.profiles import get_profile
from golem_proxy.events import Direction
from golem_proxy.recording.format import RouteInfo
from golem_proxy.replay.index import load_exchanges
from tests.support.cli_helpers import run_cli
from tests.support.peers import MisbehavingUpstream
from tests.support.traces import TraceBuilder

METHODS = ("state", "tabs.list", "open")
SCRYBE_ROUTES = (RouteInfo("scrybe", "127.0.0.1:19001", "127.0.0.1:19002"),)


def trace_of(path: Path, profile: str, *, echo: str = "") -> Path:
    """A trace of `METHODS`, each answered ``{"echo": METHOD}`` (or ``{"echo": echo}``): what
    an honest `MisbehavingUpstream` answers."""
    route = "scrybe" if profile != "golem" else "main"
    extra = {"routes": SCRYBE_ROUTES} if profile != "golem" else {}
    with TraceBuilder.create(str(path), profile, **extra) as trace:  # type: ignore[arg-type]
        for method in METHODS:
            trace.call(method, {}, {"echo": echo or method}, route=route)
    return path


def verify(
    trace: Path, profile: str, mode: str, *args: str, **misbehaviour: Any
) -> subprocess.CompletedProcess[str]:
    """``verify TRACE --target`` a `MisbehavingUpstream` in ``mode`` (and ``misbehaviour``,
    its other fields), with ``args``."""

    async def main() -> subprocess.CompletedProcess[str]:
        upstream = MisbehavingUpstream(profile=get_profile(profile), mode=mode, **misbehaviour)
        async with trio.open_nursery() as nursery:
            address = await nursery.start(upstream.serve)
            command = ("verify", str(trace), "--target", str(address), "--timeout", "5", *args)
            done = await trio.to_thread.run_sync(partial(run_cli, *command))
            nursery.cancel_scope.cancel()
        return done

    return trio.run(main)


def test_notifications_before_each_answer_are_skipped_and_reported(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "nd.jsonl", "jsonrpc-ndjson")
    done = verify(trace, "jsonrpc-ndjson", "notify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verify: all 3 exchanges match" in done.stdout
    assert "skipped 3 frames the plugin sent of its own" in done.stdout
    as_json = verify(trace, "jsonrpc-ndjson", "notify", "--json")
    assert json.loads(as_json.stdout)["unasked"] == 3


def test_update_writes_the_answers_not_the_notifications_before_them(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "nd.jsonl", "jsonrpc-ndjson", echo="old")
    done = verify(trace, "jsonrpc-ndjson", "notify", "--update")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "updated 3 responses" in done.stderr
    loaded = load_exchanges(str(trace))
    try:
        answers = [exchange.response_obj() for exchange in loaded.exchanges]
    finally:
        loaded.close()
    assert answers == [
        {"jsonrpc": "2.0", "id": ident, "result": {"echo": method}}
        for ident, method in enumerate(METHODS, 1)
    ]


def test_a_plugin_that_answers_twice_shifts_no_comparison(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "g.jsonl", "golem")
    done = verify(trace, "golem", "twice")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "result.echo" not in done.stdout  # each answer compared with its own request's
    assert done.stdout.count("another answer with its id came after the first") == 3
    assert "#1 main state" in done.stdout and "#2 main tabs.list" in done.stdout
    assert "#3 main open" in done.stdout


def test_a_second_answer_to_the_last_request_is_a_difference(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "g.jsonl", "golem")
    done = verify(trace, "golem", "honest", again_for="open")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "verify: 1 of 3 exchanges differ" in done.stdout
    assert "#3 main open" in done.stdout
    assert (
        "another answer with its id came after the first, once route main's last request "
        "was answered (skipped)"
    ) in done.stdout
    as_json = json.loads(verify(trace, "golem", "honest", "--json", again_for="open").stdout)
    assert [(check["number"], check["method"]) for check in as_json["failed"]] == [(3, "open")]


def test_bytes_that_are_no_frame_after_the_last_answer_are_a_difference(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "g.jsonl", "golem")
    cut_short = b"\x00\x00\x00\x64{"  # a header saying 100 bytes, then the end
    done = verify(trace, "golem", "honest", again_for="open", again_bytes=cut_short)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "#3 main open" in done.stdout
    assert "bytes that are no frame came once route main's last request was answered" in (
        done.stdout
    )


def test_a_frame_with_no_id_after_the_last_answer_is_said_as_what_it_is(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "g.jsonl", "golem")
    for payload in (b'{"result": {"echo": "open"}, "error": null}', b"not json at all"):
        nameless = get_profile("golem").frame_payload(payload)
        done = verify(trace, "golem", "honest", again_for="open", again_bytes=nameless)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "a frame a client takes for its answer (no id, or no JSON) came once route" in (
            done.stdout
        )
        assert "with its id" not in done.stdout


def test_update_writes_the_answers_and_still_fails_on_a_second_one(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "g.jsonl", "golem", echo="old")
    done = verify(trace, "golem", "honest", "--update", again_for="open")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "verify: updated 3 responses" in done.stderr
    assert "verify: 1 of 3 exchanges got more than their answer (#3), which the trace cannot" in (
        done.stderr
    )
    again = verify(trace, "golem", "honest")  # the answers were written
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_late_second_answer_from_a_plugin_that_keeps_the_connection_is_read(
    tmp_path: Path,
) -> None:
    trace = trace_of(tmp_path / "nd.jsonl", "jsonrpc-ndjson")
    late = {"again_for": "open", "again_after": 0.1, "closes_at_end": False}
    done = verify(trace, "jsonrpc-ndjson", "honest", **late)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "#3 scrybe open" in done.stdout
    assert "another answer with its id came after the first" in done.stdout
    honest = verify(trace, "jsonrpc-ndjson", "honest", closes_at_end=False)
    assert honest.returncode == 0, honest.stdout + honest.stderr


def test_an_answer_with_another_id_is_a_difference_and_never_written(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "g.jsonl", "golem", echo="old")
    before = trace.read_bytes()
    done = verify(trace, "golem", "wrong-id")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count('answered with id "nope-') == 3
    assert "result.echo" not in done.stdout  # not compared as if it were the answer
    updated = verify(trace, "golem", "wrong-id", "--update")
    assert updated.returncode == 1, updated.stdout + updated.stderr
    assert "not updated: 3 of 3 exchanges got no answer to their request" in updated.stderr
    assert trace.read_bytes() == before


def test_frames_skipped_for_one_request_are_bounded(tmp_path: Path) -> None:
    trace = trace_of(tmp_path / "nd.jsonl", "jsonrpc-ndjson")
    done = verify(trace, "jsonrpc-ndjson", "flood", flood=1500)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("sent 1000 frames that are not the answer") == 3


def test_update_writes_no_answer_into_a_request_the_server_sent(tmp_path: Path) -> None:
    """A JSON-RPC server's own request (and the client's reply) is no exchange verify sends:
    `--update` writes each live answer into its own exchange's frame, none into the server's
    request, and keeps every other line as it was."""
    path = tmp_path / "asks.jsonl"
    with TraceBuilder.create(str(path), "jsonrpc-ndjson", routes=SCRYBE_ROUTES) as trace:
        conn = trace._conn("scrybe")
        asked = b'{"jsonrpc":"2.0","id":"srv-1","method":"roots/list"}'
        replied = b'{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}'
        for direction, payload in ((Direction.S2C, asked), (Direction.C2S, replied)):
            trace.tap.tick(0.001)
            trace.tap.send(conn, direction, trace.profile.frame_payload(payload))
        trace._write()
        for method in METHODS:
            trace.call(method, {}, {"echo": f"old {method}"}, route="scrybe")
    before = path.read_bytes().splitlines()
    done = verify(path, "jsonrpc-ndjson", "honest", "--update")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verify: updated 3 responses" in done.stderr
    after = path.read_bytes().splitlines()
    assert len(after) == len(before)
    changed = [json.loads(new) for old, new in zip(before, after) if old != new]
    assert [(line["dir"], line["n"], line["msg"]["result"]) for line in changed] == [
        ("s2c", n, {"echo": method}) for n, method in enumerate(METHODS, 1)
    ]
    assert after[2] == before[2] and b'"roots/list"' in after[2]
    assert load_exchanges(str(path)).exchanges[0].response_obj()["result"] == {"echo": "state"}

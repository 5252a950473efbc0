"""Headers that cannot be true, refused by every reader in one line naming the file and what
is wrong: no reader takes one another reader refuses, or reads one otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import run_cli

MAIN = {"name": "main", "listen": "127.0.0.1:19876", "upstream": "127.0.0.1:9876"}
MCP = {"name": "mcp", "listen": "stdio", "upstream": "server", "profile": "mcp"}


def _line(**members: Any) -> str:
    return json.dumps(members, separators=(",", ":"), ensure_ascii=False)


def _recording(tmp_path: Path, routes: list[dict[str, str]], redact: list[str]) -> Path:
    """A GOLEM ping through route ``main`` under the header given."""
    head = _line(
        format="golem-proxy-recording", version=2, profile="golem", routes=routes,
        started_at="2026-12-06T00:00:00Z", clock="t = monotonic seconds since started_at",
        tool="golem-proxy", redact=redact, ends_with_session_end=True,
    )  # fmt: skip
    where = {"conn": 1, "route": "main"}
    ping = {"id": "a", "method": "ping", "params": {}}
    lines = [
        head,
        _line(seq=1, t=0.0, kind="open", **where, client="c", upstream="u"),
        _line(seq=2, t=0.001, kind="frame", **where, dir="c2s", n=0, size=50, type="request",
              id="a", method="ping", expects_answer=True, msg=ping),
        _line(seq=3, t=0.002, kind="frame", **where, dir="s2c", n=0, size=40, type="response",
              id="a", answers=0, msg={"id": "a", "result": {"alive": True}}),
        _line(seq=4, t=0.002, kind="exchange", **where, req=0, resp=0, method="ping",
              status="ok", latency=0.001, outcome="ok"),
        _line(seq=5, t=0.003, kind="session-end", reason="done"),
    ]  # fmt: skip
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


READERS = [
    ("show",),
    ("stats",),
    ("check",),
    ("export", "--format", "jsonl", "--out", "OUT"),
    ("replay", "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0"),
    ("verify", "--target", "127.0.0.1:9", "--timeout", "1"),
    ("mcp-verify", "--timeout", "5", "--", "true"),
]


def _refused_by_every_reader(path: Path, tmp_path: Path, said: str) -> None:
    for command, *rest in READERS:
        args = [command, str(path), *(str(tmp_path / "out") if a == "OUT" else a for a in rest)]
        done = run_cli(*args)
        assert (done.returncode, done.stderr.strip()) == (2, f"golem-proxy: {path}: {said}"), (
            args,
            done.stdout,
        )


def test_a_redaction_rule_without_a_path_is_refused(tmp_path: Path) -> None:
    path = _recording(tmp_path, [MAIN], ["params.code", "scene.create_layer:..."])
    said = 'bad recording header: redaction rule "scene.create_layer:..." has no path'
    _refused_by_every_reader(path, tmp_path, said)


def test_a_route_defined_twice_with_two_protocols_is_refused(tmp_path: Path) -> None:
    other = {**MAIN, "listen": "unix:/x", "profile": "jsonrpc-ndjson"}
    path = _recording(tmp_path, [MAIN, MCP, other], [])
    said = (
        'bad recording header: route "main" is defined twice, with profiles "golem" and '
        '"jsonrpc-ndjson"'
    )
    _refused_by_every_reader(path, tmp_path, said)


def test_a_route_named_twice_with_one_protocol_reads(tmp_path: Path) -> None:
    # What `proxy --route a@… --route a@…` wrote before it refused that: both read alike.
    path = _recording(tmp_path, [MAIN, {**MAIN, "listen": "127.0.0.1:19999"}], [])
    done = run_cli("show", str(path))
    assert done.returncode == 0 and "ping" in done.stdout, done.stderr


# The first route's name unsaid is the profile's first default: main.
@pytest.mark.parametrize("first", ["main@127.0.0.1:0=127.0.0.1:1", "127.0.0.1:0=127.0.0.1:1"])
def test_the_proxy_refuses_two_routes_of_one_name(tmp_path: Path, first: str) -> None:
    record = tmp_path / "session.jsonl"
    done = run_cli(
        "proxy", "--route", first, "--route", "main@127.0.0.1:0=127.0.0.1:2",
        "--record", str(record), timeout=20,
    )  # fmt: skip
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "golem-proxy: proxy --route: two routes are named main: name each its own",
    )
    assert not record.exists()

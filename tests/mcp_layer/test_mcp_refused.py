"""End to end: the plugin is not running. The `mcp` package's stdio client calls a tool of the
test FastMCP server through ``golem-proxy mcp --record``; the server's GOLEM connection is
accepted by the proxy and reset, since nothing listens upstream. The ``ping`` the server sent
on it is recorded undelivered under the call that opened it, and `show` and `stats` put it
there, with observation in the wrapper's process and in a process of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.processes import observing_process
from golem_proxy.analysis.call_outage import routes_down, went_down
from golem_proxy.analysis.two_layers import read_two_layers
from golem_proxy.events import ConnectionClosed, Direction, FrameSeen, RouteDown, UpstreamStatus
from golem_proxy.recording.format import read_recording
from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap, run_cli

from .mcp_helpers import INITIALIZE, SERVER_COMMAND, call_tools, environment, rpc_line, start_piped
from .test_mcp_child_observer import answer_recorded

_HELD: list[socket.socket] = []
"""The sockets holding the ports below, for as long as the tests run."""


def _port_nobody_listens_on() -> int:
    """A loopback port bound and never listened on, kept so while the tests run: connecting
    is refused, and no other test or program can take it meanwhile."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD.append(sock)
    return int(sock.getsockname()[1])


@pytest.fixture(scope="module", params=["in-process", "child-process"])
def refused(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, int, list[tuple[bool, list[dict[str, object]]]]]]:
    """Two calls of a GOLEM tool with no plugin: the first opens the server's connection,
    which the proxy accepts and resets (the upstream refused it), the ping the server sent on
    it read and never sent on; the second finds it broken and sends nothing."""
    record = tmp_path_factory.mktemp("refused") / "session.jsonl"
    port = _port_nobody_listens_on()
    command = [
        sys.executable,
        "-m",
        "golem_proxy",
        "mcp",
        "--upstream",
        f"127.0.0.1:{port}",
        "--gh-upstream",
        f"127.0.0.1:{_port_nobody_listens_on()}",
        "--record",
        str(record),
        "--observer",
        request.param,
        "--",
        *SERVER_COMMAND,
    ]
    calls = [("list_layers", {}), ("create_layer", {"name": "A"})]
    outcomes = call_tools(command, environment(), calls)
    yield record, port, outcomes


UNREACHABLE = "upstream unreachable: connection refused"


def test_the_ping_the_server_sent_names_the_call_that_opened_it(
    refused: tuple[Path, int, list],
) -> None:
    """The server sent its ``ping`` on connecting, before the proxy found the plugin down: the
    proxy read it and never sent it on. It is recorded, undelivered, and names the call; the
    close, which a byte crossed, names none."""
    record, port, outcomes = refused
    assert [failed for failed, _ in outcomes] == [True, True]
    events = read_recording(str(record)).events
    (ping,) = [e for e in events if isinstance(e, FrameSeen) and e.route == "main"]
    assert ping.direction is Direction.C2S and ping.method == "ping"
    assert ping.undelivered == UNREACHABLE
    assert ping.tool_calls is not None
    assert [ref.tool for ref in ping.tool_calls] == ["list_layers"]
    closes = [e for e in events if isinstance(e, ConnectionClosed) and e.route == "main"]
    (close,) = closes
    assert close.abnormal and close.bytes_c2s == close.bytes_s2c == 0
    assert close.reason == (
        f"upstream 127.0.0.1:{port} unreachable: connection refused; "
        f"{ping.size} bytes read from the client not sent"
    )
    assert close.tool_calls is None
    # The upstream refused and the proxy reset the client: a reset toward the client.
    (line,) = [
        json.loads(text)
        for text in record.read_text().splitlines()
        if '"kind":"close"' in text and '"route":"main"' in text
    ]
    assert list(line)[-2:] == ["abnormal", "resets"]
    assert line["resets"] == ["s2c"]


def test_the_readers_put_it_under_the_failed_call(refused: tuple[Path, int, list]) -> None:
    record, _, _ = refused
    layers = read_two_layers(str(record))
    first, second = layers.tool_calls
    assert first.is_error and second.is_error
    (ping,) = first.golem
    assert ping.method == "ping" and ping.is_error and ping.undelivered == UNREACHABLE
    assert first.failed_connections == [] and second.failed_connections == []
    assert second.golem == [] and layers.outside == [] and layers.ambiguous == []


def test_show_prints_the_row_under_the_call(refused: tuple[Path, int, list]) -> None:
    record, _, _ = refused
    shown = run_cli("show", str(record))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    call = next(i for i, line in enumerate(lines) if "list_layers()" in line)
    row = lines[call + 1]
    assert "↳ ping" in row and f"undelivered ({UNREACHABLE})" in row
    assert "✗ connection" not in shown.stdout
    rows = [json.loads(line) for line in run_cli("show", str(record), "--json").stdout.splitlines()]
    (golem,) = [row for row in rows if row["layer"] == "golem"]
    number = next(row["number"] for row in rows if row.get("tool") == "list_layers")
    assert golem["tool_call"] == number and golem["attribution"] == "call"
    assert golem["status"] == f"undelivered ({UNREACHABLE})" and golem["error"] is True
    assert golem["method"] == "ping" and golem["undelivered"] == UNREACHABLE


def test_stats_counts_it_for_the_tool(refused: tuple[Path, int, list]) -> None:
    record, _, _ = refused
    stats = run_cli("stats", str(record), "--json")
    assert stats.returncode == 0, stats.stderr
    tools = {row["tool"]: row for row in json.loads(stats.stdout)["tools"]}
    assert tools["list_layers"]["golem_flows"] == 1
    assert tools["list_layers"]["failed_connections"] == 0
    assert tools["create_layer"]["golem_flows"] == 0
    assert tools["create_layer"]["failed_connections"] == 0


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_connection_whose_request_was_withheld_is_no_failed_connection_row(
    observer: str, tmp_path: Path
) -> None:
    """A byte that reached the proxy crossed the connection, even when it never went on: a
    ``ping`` withheld by ``--fault reset`` is its own row (undelivered: the plugin never got
    it), and the connection is no second, made-up ``✗ connection`` row counted as another
    failure."""
    from golem_proxy.testing.plugin_process import PluginProcess

    from .mcp_helpers import wrapped

    record = tmp_path / "withheld.jsonl"
    with PluginProcess(seed=7) as plugin:
        command = wrapped(
            plugin, record, "--fault", "reset:method=ping,times=1", "--observer", observer
        )
        call_tools(command, environment(), [("list_layers", {})])
    closes = [e for e in read_recording(str(record)).events if isinstance(e, ConnectionClosed)]
    assert closes and all(close.tool_calls is None for close in closes)
    shown = run_cli("show", str(record)).stdout
    assert "↳ ping" in shown and "undelivered (withheld: --fault reset)" in shown
    assert "✗ connection" not in shown


def test_a_call_made_while_the_route_was_down_says_so(refused: tuple[Path, int, list]) -> None:
    """The second call finds the route not listening: whatever its server tried there was
    refused by the system and never reached the proxy. Its row says the route was down, and
    since when, rather than showing nothing under it."""
    record, _, _ = refused
    events = read_recording(str(record)).events
    (down,) = [e for e in events if isinstance(e, UpstreamStatus)]
    assert not down.up and down.route == "main"
    calls = [
        e
        for e in events
        if isinstance(e, FrameSeen) and e.route == "mcp" and e.method == "tools/call"
    ]
    first, second = calls
    assert first.routes_down is None
    assert second.routes_down == (RouteDown(route="main", since=round(down.t, 6)),)
    layers = read_two_layers(str(record))
    assert [routes_down(call.flow) for call in layers.tool_calls] == [(), second.routes_down]

    shown = run_cli("show", str(record)).stdout
    row = next(line for line in shown.splitlines() if 'create_layer(name="A")' in line)
    assert f"⋯ main down since {down.t:.3f} s" in row
    rows = [json.loads(line) for line in run_cli("show", str(record), "--json").stdout.splitlines()]
    by_tool = {row["tool"]: row for row in rows if row.get("tool")}
    assert "routes_down" not in by_tool["list_layers"]
    assert by_tool["create_layer"]["routes_down"] == [{"route": "main", "since": round(down.t, 6)}]
    stats = json.loads(run_cli("stats", str(record), "--json").stdout)
    tools = {row["tool"]: row for row in stats["tools"]}
    assert tools["create_layer"]["calls_while_down"] == 1
    assert tools["list_layers"]["calls_while_down"] == 0


def test_the_call_in_flight_as_the_route_went_down_says_so_on_its_answer(
    refused: tuple[Path, int, list],
) -> None:
    """The first call was in flight when its connection was refused and the route stopped
    listening: its answer carries the route and when, so its row says what it could not
    show after that (whatever its server tried there again was refused by the system)."""
    record, _, _ = refused
    events = read_recording(str(record)).events
    (down,) = [e for e in events if isinstance(e, UpstreamStatus)]
    answers = [
        e
        for e in events
        if isinstance(e, FrameSeen) and e.route == "mcp" and e.direction is Direction.S2C
    ]
    went = (RouteDown(route="main", since=round(down.t, 6)),)
    first, second = [answer for answer in answers if answer.message.id in (1, 2)]
    assert first.routes_down == went
    assert second.routes_down is None  # down when made: said on its request
    layers = read_two_layers(str(record))
    assert [went_down(call.flow) for call in layers.tool_calls] == [went, ()]
    shown = run_cli("show", str(record)).stdout
    row = next(line for line in shown.splitlines() if "list_layers()" in line)
    assert f"⋯ main went down at {down.t:.3f} s" in row
    rows = [json.loads(line) for line in run_cli("show", str(record), "--json").stdout.splitlines()]
    by_tool = {row["tool"]: row for row in rows if row.get("tool")}
    assert by_tool["list_layers"]["went_down"] == [{"route": "main", "since": round(down.t, 6)}]
    assert "went_down" not in by_tool["create_layer"]
    stats = json.loads(run_cli("stats", str(record), "--json").stdout)
    tools = {row["tool"]: row for row in stats["tools"]}
    assert tools["list_layers"]["calls_went_down"] == 1
    assert tools["create_layer"]["calls_went_down"] == 0
    assert [tools[name]["calls_met_route_down"] for name in ("list_layers", "create_layer")] == [
        1,
        1,
    ]
    table = run_cli("stats", str(record)).stdout.splitlines()
    header = next(line.replace("no conn", "no-conn").split() for line in table if "down" in line)
    for tool in ("list_layers", "create_layer"):  # each met the route down, one way or the other
        row = next(line.split() for line in table if line.split()[:1] == [tool])
        assert row[header.index("down")] == "1", (header, row)


def test_a_restarted_observing_process_knows_the_route_is_down(tmp_path: Path) -> None:
    """The route went down before the observing process died: the one that takes over is
    told so (the forwarding process followed the route), and marks the calls made until it is
    back, as the process before would have."""
    record, errors = tmp_path / "r.jsonl", tmp_path / "stderr"
    port = _port_nobody_listens_on()
    command = [
        sys.executable, "-m", "golem_proxy", "mcp",
        "--upstream", f"127.0.0.1:{port}",
        "--gh-upstream", f"127.0.0.1:{_port_nobody_listens_on()}",
        "--record", str(record), "--observer", "child-process", "--", *SERVER_COMMAND,
    ]  # fmt: skip

    def call(ident: int, tool: str) -> dict[str, object]:
        params = {"name": tool, "arguments": {}}
        process.stdin.write(rpc_line({"id": ident, "method": "tools/call", "params": params}))
        process.stdin.flush()
        answer: dict[str, object] = json.loads(process.stdout.readline())
        assert answer["id"] == ident
        return answer

    with errors.open("wb") as stderr:
        process = start_piped(command, stderr=stderr.fileno())
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            process.stdin.write(rpc_line({"method": "notifications/initialized"}))
            call(1, "list_layers")  # the plugin is down: its connection is refused
            wait_for(lambda: answer_recorded(record, 1), what="the answer in the recording")
            os.kill(observing_process(process.pid), signal.SIGKILL)
            wait_for(lambda: b"observation restarted" in errors.read_bytes(), what="restart")
            call(2, "list_layers")
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()
    events = read_recording(str(record)).events
    (down,) = [e for e in events if isinstance(e, UpstreamStatus)]
    first, second = [
        e
        for e in events
        if isinstance(e, FrameSeen) and e.route == "mcp" and e.method == "tools/call"
    ]
    assert first.routes_down is None
    assert second.routes_down == (RouteDown(route="main", since=round(down.t, 6)),)


@pytest.mark.parametrize("since", ["1e999", "-1", "true", '"soon"'])
def test_a_hostile_routes_down_is_refused_in_one_line(
    refused: tuple[Path, int, list], tmp_path: Path, since: str
) -> None:
    record, _, _ = refused
    text = record.read_text()
    start = text.index('"routes_down":[{"route":"main","since":') + len(
        '"routes_down":[{"route":"main","since":'
    )
    end = text.index("}", start)
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text(text[:start] + since + text[end:])
    shown = run_cli("show", str(hostile))
    assert shown.returncode != 0
    (line,) = shown.stderr.strip().splitlines()
    assert "since must be a number of seconds from 0 to 1e12" in line

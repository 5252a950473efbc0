"""``golem-proxy mcp --observer child-process`` (the default): the wrapper forwards both hops
and the observing process decodes, attributes and records them. Its stdout stays the MCP
server's bytes (the observing process logs where the wrapper does: stderr or ``--log FILE``),
the attribution survives both hops crossing one pipe while large results hold the relay, and
what decides on the forwarding path (faults, limits, held frames decided on the console)
leaves the same recording, log and closing line as in one process."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from bench.processes import observing_process
from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.events import FrameSeen
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from tests.live.observer_child_helpers import wait_for
from tests.support.cli_helpers import reap

from .console_client import FILTER, ConsoleClient
from .mcp_helpers import (
    CALLS,
    INITIALIZE,
    Call,
    call_tools,
    environment,
    rpc_line,
    start_piped,
    wrapped,
)
from .observer_parity import assert_alike, run_session

CHILD = ("--observer", "child-process")


LIST_LAYERS = rpc_line(
    {"id": 1, "method": "tools/call", "params": {"name": "list_layers", "arguments": {}}}
)


@pytest.mark.parametrize("log_to", ["stderr", "file"])
def test_stdout_carries_only_the_servers_bytes(tmp_path: Path, log_to: str) -> None:
    record, log, errors = tmp_path / "r.jsonl", tmp_path / "live.log", tmp_path / "stderr"
    logging = ("--verbose",) + (("--log", str(log)) if log_to == "file" else ())
    with PluginProcess(seed=8) as plugin, errors.open("wb") as stderr:
        process = start_piped(wrapped(plugin, record, *CHILD, *logging), stderr=stderr.fileno())
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            answers = [process.stdout.readline()]
            process.stdin.write(rpc_line({"method": "notifications/initialized"}) + LIST_LAYERS)
            process.stdin.flush()
            answers.append(process.stdout.readline())
            process.stdin.close()
            assert process.wait(60) == 0
            rest = process.stdout.read()
        finally:
            reap(process)
            process.stdout.close()
    assert rest == b""
    assert [json.loads(answer)["id"] for answer in answers] == [0, 1]
    assert not json.loads(answers[1])["result"]["isError"]
    # The observing process's log (every frame, with --verbose) is where the wrapper's is.
    where = log.read_text() if log_to == "file" else errors.read_text()
    exchanges = [text for text in where.splitlines() if " scene.list_layers " in text]
    assert len(exchanges) == 1 and exchanges[0].endswith("⟵ list_layers"), where
    if log_to == "file":
        assert "scene.list_layers" not in errors.read_text()
    [call] = read_tool_calls(str(record))
    assert [flow.method for flow in call.golem] == ["ping", "scene.list_layers"]


def test_the_default_observes_in_a_process_of_its_own(tmp_path: Path) -> None:
    with PluginProcess(seed=12) as plugin:
        process = start_piped(wrapped(plugin, tmp_path / "r.jsonl"))
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            assert observing_process(process.pid)
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()


def answer_recorded(record: Path, ident: int) -> bool:
    """The recording (being written) holds the MCP answer ``ident``."""
    for text in record.read_text().splitlines():
        if '"route":"mcp","dir":"s2c"' in text and f'"id":{ident},' in text:
            return True
    return False


def _a_call_across_a_death(tmp_path: Path, *options: str, until: bytes) -> tuple[Path, list[str]]:
    """``list_layers`` through the wrapper; once it is recorded the observing process is killed;
    once stderr says ``until``, ``create_layer``, answered as any call. Returns the recording
    and the wrapper's stderr lines that speak of observation."""
    record, errors = tmp_path / "r.jsonl", tmp_path / "stderr"
    with PluginProcess(seed=10) as plugin, errors.open("wb") as stderr:
        process = start_piped(wrapped(plugin, record, *CHILD, *options), stderr=stderr.fileno())
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(INITIALIZE)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            process.stdin.write(rpc_line({"method": "notifications/initialized"}) + LIST_LAYERS)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 1
            wait_for(lambda: answer_recorded(record, 1), what="the answer in the recording")
            os.kill(observing_process(process.pid), signal.SIGKILL)
            wait_for(lambda: until in errors.read_bytes(), what="the notice")
            params = {"name": "create_layer", "arguments": {"name": "After"}}
            process.stdin.write(rpc_line({"id": 2, "method": "tools/call", "params": params}))
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())
            assert answer["id"] == 2 and not answer["result"]["isError"]
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()
    return record, [text for text in errors.read_text().splitlines() if "observation" in text]


def test_a_killed_observing_process_is_replaced_and_tool_calls_are_attributed_after_it(
    tmp_path: Path,
) -> None:
    record, notices = _a_call_across_a_death(tmp_path, until=b"observation restarted")
    assert notices[0] == (
        "golem-proxy: observation stopped (the observing process was killed by SIGKILL); "
        "forwarding goes on; restarting it"
    )
    # The MCP hop and the plugin's connection, both kept open across the death.
    assert notices[1].startswith("golem-proxy: observation restarted: 2 open connections")
    kinds = [json.loads(line)["kind"] for line in record.read_text().splitlines()[1:]]
    assert kinds.count("observation-restarted") == 1 and "observation-stopped" not in kinds
    # What was observed before stays whole, and a call made after the restart is attributed
    # its GOLEM frames as any other.
    before, after = read_tool_calls(str(record))
    assert before.tool == "list_layers"
    assert [flow.method for flow in before.golem] == ["ping", "scene.list_layers"]
    assert after.tool == "create_layer"
    assert [flow.method for flow in after.golem] == ["scene.create_layer"]


def test_forwarding_goes_on_when_the_observing_process_dies_past_its_restarts(
    tmp_path: Path,
) -> None:
    record, notices = _a_call_across_a_death(
        tmp_path, "--observer-restarts", "0", until=b"observation stopped"
    )
    assert notices == [
        "golem-proxy: observation stopped (the observing process was killed by SIGKILL); "
        "forwarding goes on"
    ]
    lines = record.read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines[-2:]] == [
        "observation-stopped",
        "session-end",  # the server exited: the session ended in order after it
    ]
    [call] = read_tool_calls(str(record))
    assert call.tool == "list_layers"
    assert [flow.method for flow in call.golem] == ["ping", "scene.list_layers"]


ROUND: list[Call] = [
    ("layer_report", {}),  # a name of its own in each round
    # Two copies of 4 MiB in one line: more than the link lets wait unacknowledged (1 MiB),
    # so the relay is held (about once a round) and the next calls' chunks of both hops
    # queue behind it in the pipe.
    ("big_text", {"size": 4 * 1024 * 1024}),
    ("gh_ping", {}),
    ("list_layers", {}),
]
ROUNDS = 8
GOLEM_OF = {
    "layer_report": ["scene.create_layer", "scene.list_layers"],
    "big_text": [],
    "gh_ping": ["ping"],
    "list_layers": ["scene.list_layers"],
}


def test_every_golem_flow_names_its_call_when_both_hops_share_the_pipe_under_load(
    tmp_path: Path,
) -> None:
    record = tmp_path / "r.jsonl"
    calls = [
        (name, {"name": f"R{number}"} if name == "layer_report" else arguments)
        for number in range(ROUNDS)
        for name, arguments in ROUND
    ]
    with PluginProcess(seed=9) as plugin:
        outcomes = call_tools(wrapped(plugin, record, *CHILD), environment(), calls)
    assert [failed for failed, _ in outcomes] == [name == "gh_ping" for name, _ in calls]
    found = read_tool_calls(str(record))
    assert [(call.tool, call.arguments) for call in found] == calls
    assert [call.is_error for call in found] == [name == "gh_ping" for name, _ in calls]
    for number, call in enumerate(found):
        expected = GOLEM_OF[call.tool]
        if number == 0:
            expected = ["ping", *expected]  # the server's connection opens with a ping
        assert [flow.method for flow in call.golem] == expected, (number, call.tool)
    frames = [
        e
        for e in read_recording(str(record)).events
        if isinstance(e, FrameSeen) and e.route != "mcp"
    ]
    assert len(frames) == 2 * sum(len(call.golem) for call in found)
    assert all(frame.tool_calls is not None and len(frame.tool_calls) == 1 for frame in frames)


DECIDING = {
    # A fault of each effect the GOLEM hop of a tool call can see: its request answered here
    # in the plugin's place (half the time: the seed decides which, the same in both runs),
    # its frames held back, its connection cut in the middle of an answer (the Grasshopper
    # socket's, whose tool fails anyway: the server does not connect again).
    "faults": (
        *("--fault", "error:code=-32000,message=busy,method=scene.create_layer,p=0.5"),
        *("--fault", "delay:ms=20,method=ping"),
        *("--fault", "truncate:at=0.5,route=gh,dir=s2c"),
        *("--fault-seed", "3"),
    ),
    # layer_report's list of layers is larger than that: its connection is closed.
    "limits": ("--enforce-limits", "--max-frame", "300"),
}


@pytest.mark.parametrize("deciding", sorted(DECIDING))
def test_what_decides_on_the_forwarding_path_is_recorded_as_in_one_process(
    tmp_path: Path, deciding: str
) -> None:
    """The faults and ``--enforce-limits`` decide in the forwarding process with either
    observer: the client gets the same answers, and the recording (each frame's tool call
    included), the log and the closing line are the same."""
    observed = {}
    for observer in ("in-process", "child-process"):
        with PluginProcess(seed=7) as plugin:
            observed[observer] = run_session(
                plugin, tmp_path / observer, observer, CALLS * 2, *DECIDING[deciding]
            )
    one = observed["in-process"]
    assert_alike(observed["child-process"], one)
    # The run decided something, and says so.
    [closing] = one.closing
    assert closing.startswith("golem-proxy mcp: recorded") and "<dir>/r.jsonl" in closing
    kinds = [json.loads(line)["kind"] for lines in one.recording.values() for line in lines]
    if deciding == "faults":
        assert kinds.count("fault") >= 4
        assert any(" busy" in line for line in one.log)
        # The plan and its seed are announced, as by proxy: a run with p= can be made again.
        assert any(line.startswith("faults: error:") and "seed 3" in line for line in one.log)
    else:
        assert "violation" in kinds
    assert any(tool == "layer_report" and failed for tool, _, failed in one.attribution)


INTERCEPTED: list[Call] = [
    ("create_layer", {"name": "A"}),  # held: accepted
    ("list_layers", {}),  # not held
    ("create_layer", {"name": "B"}),  # held: edited to C
    ("layer_report", {"name": "D"}),  # its create held: answered here
    ("create_layer", {"name": "E"}),  # held: dropped (the server gives up after 10 s)
]


def test_held_frames_are_decided_and_recorded_as_in_one_process(tmp_path: Path) -> None:
    """``--intercept`` with ``--console``: the frames wait in the forwarding process and are
    decided on the socket with either observer; the decisions, the answers, the recording
    and the log are the same."""
    observed, decided = {}, {}
    for observer in ("in-process", "child-process"):
        (tmp_path / observer).mkdir()
        (tmp_path / observer / "console").mkdir(mode=0o700)
        path = tmp_path / observer / "console" / "c.sock"

        def decide(path: Path = path, observer: str = observer) -> None:
            client = ConsoleClient(path)
            try:
                client.held(1)
                answers = [client.ask("accept 1")]
                frame = client.held(2)
                frame["params"]["name"] = "C"
                answers.append(client.ask(f"edit 2 {json.dumps(frame)}"))
                client.held(3)
                answered = {"result": {"name": "D", "full_path": "D", "answered": True}}
                answers.append(client.ask(f"answer 3 {json.dumps(answered)}"))
                client.held(4)
                answers.append(client.ask("drop 4"))
                decided[observer] = answers
            finally:
                client.close()

        console = ("--intercept", FILTER, "--console", f"unix:{path}")
        with PluginProcess(seed=7) as plugin:
            observed[observer] = run_session(
                plugin, tmp_path / observer, observer, INTERCEPTED, *console, beside=decide
            )
    assert (
        decided["child-process"]
        == decided["in-process"]
        == [
            "#1: accept",
            "#2: edit",
            "#3: answer",
            "#4: drop",
        ]
    )
    one = observed["in-process"]
    assert_alike(observed["child-process"], one)
    texts = [answer["content"][0]["text"] for answer in one.answers]
    assert [json.loads(text).get("full_path") for text in texts[:1] + texts[2:3]] == ["A", "C"]
    assert sum("held #" in line for line in one.log) == 4


SLOW_READER = """
import fcntl, json, os, socket, struct, sys, time
# A small stdin pipe (as when the user's pipe quota is spent), then nothing read for a while:
# the wrapper's writes to our stdin wait.
fcntl.fcntl(0, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
sys.stdout.write('{"jsonrpc": "2.0", "method": "ready"}\\n')
sys.stdout.flush()
time.sleep(0.5)
for line in sys.stdin.buffer:
    message = json.loads(line)
    if message.get("method") != "tools/call":
        continue
    port = int(os.environ["GOLEM_RHINO_PORT"])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        payload = json.dumps({"id": "p1", "method": "ping", "params": {}}).encode()
        sock.sendall(struct.pack("!I", len(payload)) + payload)
        size = struct.unpack("!I", sock.recv(4, socket.MSG_WAITALL))[0]
        sock.recv(size, socket.MSG_WAITALL)
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
def test_a_call_is_in_flight_before_the_server_can_act_on_it(tmp_path: Path, observer: str) -> None:
    """The call comes in a chunk the server's stdin cannot take at once: each piece the pipe
    takes is handed on before the wrapper waits to write the rest, since the server may read
    the call and send its GOLEM frames meanwhile (as the TCP relay does with a partial
    write)."""
    record = tmp_path / "r.jsonl"
    padding = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"data": "x" * 300_000},
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping_it"}}
    with PluginProcess(seed=11) as plugin:
        command = wrapped(plugin, record, "--observer", observer)
        command[command.index("--") + 1 :] = [sys.executable, "-c", SLOW_READER]
        process = start_piped(command)
        assert process.stdin is not None and process.stdout is not None
        try:
            assert json.loads(process.stdout.readline())["method"] == "ready"
            # The call in the middle of a chunk the server's stdin cannot take at once.
            around = json.dumps(padding).encode() + b"\n"
            process.stdin.write(around + json.dumps(call).encode() + b"\n" + around)
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 1
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()
    [call_seen] = read_tool_calls(str(record))
    assert [flow.method for flow in call_seen.golem] == ["ping"]


HELD_CALL = """
import json, os, socket, struct, sys
# A server whose "held" tool makes a GOLEM call on its one kept connection, waits for the
# client's "test/go" notification, then makes another and answers; any other tool makes one.
golem = socket.create_connection(("127.0.0.1", int(os.environ["GOLEM_RHINO_PORT"])))

def ping(ident):
    payload = json.dumps({"id": ident, "method": "ping", "params": {}}).encode()
    golem.sendall(struct.pack("!I", len(payload)) + payload)
    size = struct.unpack("!I", golem.recv(4, socket.MSG_WAITALL))[0]
    golem.recv(size, socket.MSG_WAITALL)

def answer(ident):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"content": []}}))
    sys.stdout.write("\\n")
    sys.stdout.flush()

lines = iter(sys.stdin.buffer.readline, b"")
for line in lines:
    message = json.loads(line)
    if message.get("method") != "tools/call":
        continue
    ident = message["id"]
    ping(f"{ident}-before")
    if message["params"]["name"] == "held":
        for line in lines:
            if json.loads(line).get("method") == "test/go":
                break
        ping(f"{ident}-after")
    answer(ident)
"""


def _answered(record: Path, ident: str) -> bool:
    """The recording (being written) holds the GOLEM answer ``ident``."""
    if not record.exists():
        return False
    return any(
        f'"id":"{ident}",'.encode() in line and b'"dir":"s2c"' in line
        for line in record.read_bytes().splitlines()
    )


def test_a_tool_call_in_flight_across_a_restart_attributes_the_golem_frames_after_it(
    tmp_path: Path,
) -> None:
    """A ``tools/call`` recorded by the observing process that dies is in flight for its
    successor: the GOLEM frames the call causes after the restart name it, its answer is
    paired with it and ends it (the next call's frames name only that call)."""
    record, errors = tmp_path / "r.jsonl", tmp_path / "stderr"
    with PluginProcess(seed=13) as plugin, errors.open("wb") as stderr:
        command = wrapped(plugin, record, *CHILD)
        command[command.index("--") + 1 :] = [sys.executable, "-c", HELD_CALL]
        process = start_piped(command, stderr=stderr.fileno())
        assert process.stdin is not None and process.stdout is not None
        try:
            held = {"id": 1, "method": "tools/call", "params": {"name": "held"}}
            process.stdin.write(rpc_line(held))
            process.stdin.flush()
            wait_for(lambda: _answered(record, "1-before"), what="the first ping's answer")
            os.kill(observing_process(process.pid), signal.SIGKILL)
            wait_for(lambda: b"observation restarted" in errors.read_bytes(), what="the restart")
            process.stdin.write(rpc_line({"method": "test/go"}))
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 1
            later = {"id": 2, "method": "tools/call", "params": {"name": "later"}}
            process.stdin.write(rpc_line(later))
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 2
            process.stdin.close()
            assert process.wait(60) == 0
        finally:
            reap(process)
            process.stdout.close()
    assert "Traceback" not in errors.read_text(), errors.read_text()
    lines = [json.loads(text) for text in record.read_text().splitlines()[1:]]
    restart = next(i for i, line in enumerate(lines) if line["kind"] == "observation-restarted")
    [call] = [line for line in lines[:restart] if line.get("method") == "tools/call"]
    ref = {"conn": call["conn"], "n": call["n"], "id": 1, "tool": "held"}
    golem = {
        line["id"]: line for line in lines if line["kind"] == "frame" and line["route"] == "main"
    }
    assert golem["1-before"]["tool_calls"] == [ref]
    # Decoded after the restart, by a process that never saw the call's request.
    assert lines.index(golem["1-after"]) > restart
    assert golem["1-after"]["tool_calls"] == [ref]
    [answer] = [line for line in lines if line.get("route") == "mcp" and line.get("id") == 1
                and line["dir"] == "s2c"]  # fmt: skip
    assert answer["answers"] == call["n"]
    assert [line["req"] for line in lines if line["kind"] == "exchange" and
            line["route"] == "mcp"] == [call["n"], call["n"] + 2]  # fmt: skip
    assert golem["2-before"]["tool_calls"][0]["tool"] == "later"
    assert len(golem["2-before"]["tool_calls"]) == 1
    held_call, later_call = read_tool_calls(str(record))
    assert (held_call.tool, later_call.tool) == ("held", "later")
    assert held_call.latency is not None and held_call.latency > 0
    assert [flow.request.message.id for flow in held_call.golem] == ["1-before", "1-after"]

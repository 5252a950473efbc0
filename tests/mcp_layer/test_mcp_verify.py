"""``golem-proxy mcp-verify`` as a user runs it: a session recorded through ``golem-proxy mcp
--record`` with the `mcp` stdio client and the headless plugin, then played to the same
server build (exit 0), to a changed build (exit 1, the tool named), with Rhino stood in by
the recording or reached live, and to servers that break."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import (
    CALLS,
    ROOT,
    SERVER_COMMAND,
    call_tools,
    direct_env,
    environment,
    recorded_session,
    wrapped,
)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session recorded through the wrapper; the plugin is gone once it is written."""
    return recorded_session(tmp_path_factory.mktemp("mcp-verify") / "session.jsonl")


def mcp_verify(
    *args: str, server: list[str] = SERVER_COMMAND, **env: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "mcp-verify", *args, "--", *server, env=environment(COLUMNS="200", **env), timeout=120
    )


def test_the_same_build_matches_with_rhino_stood_in(recording: Path) -> None:
    done = mcp_verify(str(recording))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp-verify: all 6 tool calls match" in done.stdout
    assert "--json lists" not in done.stdout
    for name, _ in CALLS:
        row = next(line for line in done.stdout.splitlines() if line.startswith(name))
        assert "match" in row


def test_a_changed_build_differs_and_names_the_tool(recording: Path) -> None:
    done = mcp_verify(str(recording), GOLEM_TEST_SERVER_VARIANT="changed")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 of 6 tool calls differ: list_layers" in done.stdout
    row = next(line for line in done.stdout.splitlines() if line.startswith("list_layers"))
    # The tool returns JSON text: the difference names the field inside it.
    assert "differs" in row and "result.content[0].text.layers" in row
    # The row is a preview of the differences; the output says where they are whole.
    assert "--json lists every difference whole" in done.stdout


def test_json_names_every_check(recording: Path) -> None:
    done = mcp_verify("--json", str(recording), GOLEM_TEST_SERVER_VARIANT="changed")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["tool_calls"] == 6
    assert report["differing"] == ["list_layers"]
    tools = [check["tool"] for check in report["checks"] if check["tool"] is not None]
    assert tools == [name for name, _ in CALLS]
    failing = next(check for check in report["checks"] if check["tool"] == "list_layers")
    assert failing["differences"][0]["path"] == "result.content[0].text.layers"
    assert report["standin_misses"] == []
    assert report["exit_status"] == 0


def test_ignore_leaves_a_path_of_one_tool_out(recording: Path) -> None:
    done = mcp_verify(
        str(recording),
        "--ignore",
        "list_layers:result.content[0].text.layers",
        "--ignore",
        "list_layers:result.structuredContent",
        GOLEM_TEST_SERVER_VARIANT="changed",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_live_plugin_can_stand_for_rhino(recording: Path) -> None:
    with PluginProcess(seed=7) as plugin:
        done = mcp_verify(
            str(recording), "--target", str(plugin.main), "--gh-target", str(plugin.gh)
        )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_stand_in_says_when_a_golem_request_was_not_recorded(recording: Path) -> None:
    # The changed server asks Rhino something the recording never saw.
    server = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_renamed.py")]
    done = mcp_verify(str(recording), server=server)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "create_layer" in done.stdout.split("differ:")[1]
    assert "no recorded answer for" in done.stdout


# A server that answers initialize, writes a banner to stdout, and dies on the first call.
DYING = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}), flush=True)
        print("server ready!", flush=True)
    elif message.get("method") == "tools/call":
        print("Traceback (most recent call last):", file=sys.stderr)
        print("RuntimeError: the tool broke", file=sys.stderr, flush=True)
        sys.exit(3)
"""


def test_a_server_that_dies_differs_and_junk_on_stdout_is_flagged(recording: Path) -> None:
    done = mcp_verify(str(recording), server=[sys.executable, "-c", DYING])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the server exited (status 3)" in done.stdout
    assert "not JSON-RPC (first: 'server ready!')" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith(("list_", "big_"))]
    # The call it died in differs; the calls after it were never sent.
    assert len(rows) == 2 and "differs" in rows[0], rows
    assert "not played  the server exited (status 3)" in rows[1], rows
    # Its stderr's last lines, each on a line of its own (not one line of `\n`s).
    lines = done.stdout.splitlines()
    said = lines.index("the server's last words on stderr:")
    assert lines[said + 1 : said + 3] == [
        "Traceback (most recent call last):",
        "RuntimeError: the tool broke",
    ]


def test_could_not_run_is_one_line_and_exit_2(recording: Path, tmp_path: Path) -> None:
    missing = mcp_verify(str(recording), server=[str(tmp_path / "no-such-server")])
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"golem-proxy: mcp-verify: cannot start '{tmp_path / 'no-such-server'}' "
        "(No such file or directory)"
    ]
    plain = tmp_path / "plain.jsonl"
    lines = recording.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["routes"] = [route for route in header["routes"] if route["name"] != "mcp"]
    body = [line for line in lines[1:] if '"route":"mcp"' not in line]
    plain.write_text("\n".join([json.dumps(header), *body]) + "\n", encoding="utf-8")
    no_layer = mcp_verify(str(plain))
    assert no_layer.returncode == 2
    assert "has no MCP layer" in no_layer.stderr and len(no_layer.stderr.splitlines()) == 1
    no_command = run_cli("mcp-verify", str(recording), env=environment())
    assert no_command.returncode == 2 and "no server command" in no_command.stderr


# A server that answers initialize and then reads on without ever answering.
SILENT = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}), flush=True)
"""


def test_a_server_that_stops_answering_costs_one_timeout(recording: Path) -> None:
    """The calls after the one the server left unanswered are not sent: they are not played,
    no difference of the build's (they read ``differs`` and were counted as such)."""
    silent = [sys.executable, "-c", SILENT]
    done = mcp_verify("--timeout", "2", str(recording), server=silent)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line[:1].isalpha()}
    assert "differs" in rows["list_layers"] and "no answer within 2 s" in rows["list_layers"]
    unplayed = [name for name, _ in CALLS[1:]]
    for name in unplayed:
        assert "not played  the server left id 1 unanswered" in rows[name], rows[name]
    assert (
        "mcp-verify: 1 of 6 tool calls differ: list_layers; 5 not played "
        f"({', '.join(unplayed)}): the server left id 1 unanswered"
    ) in done.stdout
    as_json = mcp_verify("--json", "--timeout", "2", str(recording), server=silent)
    report = json.loads(as_json.stdout)
    assert report["ok"] is False
    assert report["differing"] == ["list_layers"]
    assert report["not_played"] == unplayed


OBJECTS = [sys.executable, str(ROOT / "tests" / "mcp_layer" / "golem_mcp_server_objects.py")]


def test_a_live_plugin_with_other_guids_is_followed_through_the_map(tmp_path: Path) -> None:
    """The box's GUID comes back inside the tool's JSON text; the next call's argument names
    it. Against a plugin that hands out other GUIDs, the live GUID is learned from the
    result and sent in its place."""
    record = tmp_path / "objects.jsonl"
    with PluginProcess(seed=7) as plugin:  # the same seed hands out the same GUIDs
        box = call_tools(OBJECTS, direct_env(plugin), [("create_box", {"width": 4})])
    guid = json.loads(box[0][1][0]["text"])["guid"]
    with PluginProcess(seed=7) as plugin:
        command = [*wrapped(plugin, record)[: -len(SERVER_COMMAND)], *OBJECTS]
        calls = [("create_box", {"width": 4}), ("object_info", {"guid": guid})]
        outcomes = call_tools(command, environment(), calls)
    assert [failed for failed, _ in outcomes] == [False, False]
    with PluginProcess(seed=8) as other:
        done = mcp_verify(
            str(record), "--target", str(other.main), "--gh-target", str(other.gh),
            server=OBJECTS,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all 2 tool calls match" in done.stdout


def _without_last_answer(recording: Path, out: Path, *, cancelled: bool = False) -> str:
    """``recording`` with its last tool call's answer taken out (the server was killed while
    it ran; with ``cancelled``, the client cancelled it and the server never answered):
    returns the tool's name."""
    lines = recording.read_bytes().splitlines(keepends=True)
    events = [json.loads(line) for line in lines]
    last = max(
        (e for e in events if e.get("kind") == "frame" and e.get("method") == "tools/call"),
        key=lambda e: e["n"],
    )
    conn, index = last["conn"], last["n"]

    def is_answer(e: dict[str, object]) -> bool:
        if e.get("conn") != conn:
            return False
        if e.get("kind") == "frame":
            return e.get("answers") == index
        return e.get("kind") == "exchange" and e.get("req") == index

    kept = [line for line, e in zip(lines, events) if not is_answer(e)]
    if cancelled:
        notice = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": last["msg"]["id"]}}  # fmt: skip
        payload = json.dumps(notice, separators=(",", ":"))
        n = 1 + max(e["n"] for e in events if e.get("conn") == conn and e.get("dir") == "c2s")
        line = (
            f'{{"seq":{len(lines)},"t":{last["t"] + 0.001},"kind":"frame","conn":{conn},'
            f'"route":"{last["route"]}","dir":"c2s","n":{n},"size":{len(payload) + 1},'
            f'"type":"notification","method":"notifications/cancelled","msg":{payload}}}\n'
        )
        kept.insert(lines.index(lines[events.index(last)]) + 1, line.encode())
    out.write_bytes(b"".join(kept))
    return str(last["msg"]["params"]["name"])


def test_a_call_cancelled_and_answered_in_the_recording_is_not_compared(
    recording: Path, tmp_path: Path
) -> None:
    """The MCP SDK answers a cancelled call ("Request cancelled", code 0): that answer says
    what the cancellation made of the call, which the replay does not play (it sends the
    cancellation after the live answer). It was compared, and failed every such recording;
    and its status read ``0``."""
    cut = tmp_path / "cancelled.jsonl"
    tool = _without_last_answer(recording, cut, cancelled=True)
    lines = cut.read_bytes().splitlines(keepends=True)
    events = [json.loads(line) for line in lines]
    asked = max(
        (e for e in events if e.get("kind") == "frame" and e.get("method") == "tools/call"),
        key=lambda e: e["n"],
    )
    answer = {"jsonrpc": "2.0", "id": asked["msg"]["id"],
              "error": {"code": 0, "message": "Request cancelled"}}  # fmt: skip
    payload = json.dumps(answer, separators=(",", ":"))
    n = 1 + max(e["n"] for e in events if e.get("conn") == asked["conn"] and e.get("dir") == "s2c")
    line = (
        f'{{"seq":{len(lines) + 1},"t":{asked["t"] + 0.002},"kind":"frame",'
        f'"conn":{asked["conn"]},"route":"{asked["route"]}","dir":"s2c","n":{n},'
        f'"size":{len(payload) + 1},"type":"error","answers":{asked["n"]},"msg":{payload}}}\n'
    )
    exchange = (
        f'{{"seq":{len(lines) + 2},"t":{asked["t"] + 0.002},"kind":"exchange",'
        f'"conn":{asked["conn"]},"route":"{asked["route"]}","req":{asked["n"]},"resp":{n},'
        '"method":"tools/call","status":"error (code 0)","latency":0.002,"outcome":"error"}\n'
    )
    cancel = next(i for i, e in enumerate(events) if e.get("method") == "notifications/cancelled")
    lines[cancel + 1 : cancel + 1] = [line.encode(), exchange.encode()]
    cut.write_bytes(b"".join(lines))
    shown = run_cli("show", str(cut), env=environment(COLUMNS="200"))
    assert "error (code 0)" in shown.stdout, shown.stdout + shown.stderr
    done = mcp_verify(str(cut))
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith(tool))
    assert "not compared" in row and "cancelled in the recording while it waited" in row


def test_a_call_unanswered_in_the_recording_that_is_answered_now_differs(
    recording: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "killed-mid-call.jsonl"
    tool = _without_last_answer(recording, cut)
    done = mcp_verify(str(cut))
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith(tool))
    assert "answered now, unanswered in the recording" in row


def test_a_call_cancelled_in_the_recording_is_not_compared(recording: Path, tmp_path: Path) -> None:
    # A server that honours a cancellation never answers it: nothing to compare with.
    cut = tmp_path / "cancelled.jsonl"
    tool = _without_last_answer(recording, cut, cancelled=True)
    done = mcp_verify(str(cut))
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith(tool))
    assert "not compared" in row and "cancelled in the recording" in row
    assert "1 could not be compared" in done.stdout

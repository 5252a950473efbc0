"""The two-layer members of a `golem-proxy mcp` recording (`tool_calls`, `late`,
`answer_of`, `held_under`) on frames they cannot be true of, or naming what the lines
before them do not hold: the views believe them, so every reader, the fast scanner of replay
and mcp-verify too, refuses such a file in the same line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from golem_proxy.recording.schema import RecordingError
from tests.support.cli_helpers import run_cli

MAIN = {"name": "main", "listen": "127.0.0.1:19876", "upstream": "127.0.0.1:9876"}
MCP = {"name": "mcp", "listen": "stdio", "upstream": "server", "profile": "mcp"}
CALL = {"conn": 1, "n": 0, "id": 1, "tool": "list_layers"}
ANSWER_OF = {"route": "main", "conn": 2, "n": 0, "method": "scene.list_layers", "tool": None}


def _line(**members: Any) -> str:
    return json.dumps(members, separators=(",", ":"), ensure_ascii=False)


def _frame(seq: int, conn: int, route: str, direction: str, n: int, msg: Any, **more: Any) -> str:
    kind = "request" if direction == "c2s" else "response"
    return _line(
        seq=seq, t=seq / 1000, kind="frame", conn=conn, route=route, dir=direction, n=n,
        size=len(json.dumps(msg)), type=kind, **more, msg=msg,
    )  # fmt: skip


def _exchange(seq: int, conn: int, route: str, method: str) -> str:
    return _line(
        seq=seq, t=seq / 1000, kind="exchange", conn=conn, route=route, req=0, resp=0,
        method=method, status="ok", latency=0.001, outcome="ok",
    )  # fmt: skip


def _session(golem_answer: dict[str, Any], mcp_answer: dict[str, Any]) -> list[str]:
    """A tool call whose server asked the plugin once; ``golem_answer`` and ``mcp_answer``
    are added to the members of the two answers."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_layers"}}
    asked = {"id": "a", "method": "scene.list_layers", "params": {}}
    result = {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": False}}
    return [
        _line(
            format="golem-proxy-recording", version=2, profile="golem", routes=[MAIN, MCP],
            started_at="2026-12-06T00:00:00Z", clock="t = monotonic seconds since started_at",
            tool="golem-proxy", redact=[],
        ),
        _line(seq=1, t=0.001, kind="open", conn=1, route="mcp", client="stdio", upstream="s"),
        _frame(2, 1, "mcp", "c2s", 0, call, method="tools/call", expects_answer=True),
        _line(seq=3, t=0.003, kind="open", conn=2, route="main", client="c", upstream="u"),
        _frame(4, 2, "main", "c2s", 0, asked, method="scene.list_layers", tool_calls=[CALL],
               expects_answer=True),
        _frame(5, 2, "main", "s2c", 0, {"id": "a", "result": {"layers": []}},
               **{"tool_calls": [CALL], "answers": 0, **golem_answer}),
        _exchange(6, 2, "main", "scene.list_layers"),
        _frame(7, 1, "mcp", "s2c", 0, result, answers=0, **mcp_answer),
        _exchange(8, 1, "mcp", "tools/call"),
    ]  # fmt: skip


CASES = {
    "tool-call-twice": (
        {"tool_calls": [CALL, {**CALL, "tool": "other"}]},
        {},
        "line 6: tool_calls names the call of connection 1, frame 0 twice",
    ),
    "late-on-mcp": (
        {},
        {"late": True},
        "line 8: late on a frame that is no GOLEM answer (only a plugin's answer comes late)",
    ),
    "answer-of-on-golem": (
        {"answer_of": ANSWER_OF},
        {},
        "line 6: answer_of on a frame that is no answer of the MCP hop (only a tool call's "
        "answer is another exchange's)",
    ),
    "held-under-on-golem": (
        {"held_under": True},
        {},
        "line 6: held_under on a frame that is no answer of the MCP hop (only a tool call "
        "holds GOLEM requests)",
    ),
    "answer-of-its-own-route": (
        {},
        {"answer_of": {**ANSWER_OF, "route": "mcp"}},
        "line 8: answer_of names the MCP hop's own route: it names a GOLEM exchange",
    ),
    "answer-of-no-such-connection": (
        {},
        {"answer_of": {**ANSWER_OF, "conn": 9}},
        "line 8: answer_of names connection 9 of route 'main', of which no request is in the "
        "lines before it",
    ),
    "answer-of-no-such-route": (
        {},
        {"answer_of": {**ANSWER_OF, "route": "gh"}},
        "line 8: answer_of names connection 2 of route 'gh', of which no request is in the "
        "lines before it",
    ),
    "answer-of-no-such-frame": (
        {},
        {"answer_of": {**ANSWER_OF, "n": 7}},
        "line 8: answer_of names request frame 7 of connection 2 of route 'main', which the "
        "lines before it do not hold (its last is frame 0)",
    ),
    "tool-call-no-such-frame": (
        {"tool_calls": [{**CALL, "n": 77, "id": 77, "tool": "ghost"}]},
        {},
        "line 6: tool_calls names request frame 77 of connection 1, which the lines before it "
        "do not hold (its last is frame 0)",
    ),
    "tool-call-no-such-connection": (
        {"tool_calls": [{**CALL, "conn": 2}]},
        {},
        "line 6: tool_calls names connection 2, of which no MCP request is in the lines before it",
    ),
    "tool-call-other-id": (
        {"tool_calls": [{**CALL, "id": "1"}]},
        {},
        'line 6: tool_calls names request frame 0 of connection 1 as id "1", tool '
        "'list_layers'; that tools/call has id 1, tool 'list_layers'",
    ),
    "tool-call-other-tool": (
        {"tool_calls": [{**CALL, "tool": "ghost"}]},
        {},
        "line 6: tool_calls names request frame 0 of connection 1 as id 1, tool 'ghost'; "
        "that tools/call has id 1, tool 'list_layers'",
    ),
}


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "two-layers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_members_where_they_can_be_true_are_read(tmp_path: Path) -> None:
    path = _write(tmp_path, _session({"late": True}, {"answer_of": ANSWER_OF, "held_under": True}))
    for command in ("show", "replay"):
        args = [command, str(path)]
        if command == "replay":
            args += ["--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0"]
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("case", CASES)
def test_a_member_that_cannot_be_true_is_refused_by_every_reader(tmp_path: Path, case: str) -> None:
    golem_answer, mcp_answer, said = CASES[case]
    path = _write(tmp_path, _session(golem_answer, mcp_answer))
    readers = [
        ("show",),
        ("show", "--json"),
        ("stats",),
        ("check",),
        ("replay", "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0"),
        ("mcp-verify", "--timeout", "5", "--", "true"),
    ]
    for command, *rest in readers:
        done = run_cli(command, str(path), *rest)
        assert (done.returncode, done.stderr.strip()) == (2, f"golem-proxy: {path}: {said}"), (
            command
        )
    # query reads it in a worker process of its own: refused there too, naming the line.
    done = run_cli("query", "SELECT count(*) FROM flows", str(path))
    assert done.returncode != 0 and said in done.stderr, done.stderr


def _gap_before_the_answer(lines: list[str]) -> list[str]:
    """``lines`` with a ``gap`` line before the tool call's answer: the disk lost events."""
    gap = _line(seq=8, t=0.007, kind="gap", missed=2, consumer="recording")
    return [*lines[:7], gap, *lines[7:]]


def _saved_view(lines: list[str]) -> list[str]:
    """``lines`` as the TUI saves a view that left flows out (its header says so)."""
    header = json.loads(lines[0])
    header["left_out"] = "3 older flows let go from memory before it, not in it"
    return [_line(**header), *lines[1:]]


@pytest.mark.parametrize("made", [_gap_before_the_answer, _saved_view])
def test_an_answer_of_the_file_may_lack_is_believed(tmp_path: Path, made: Any) -> None:
    """The proxy named an exchange it decoded; a file whose disk fell behind (a gap line) or
    a view saved without some flows may not hold it: such a file is read, not refused."""
    lines = made(_session({"late": True}, {"answer_of": {**ANSWER_OF, "conn": 9}}))
    path = _write(tmp_path, lines)
    for command in ("show", "replay"):
        args = [command, str(path)]
        if command == "replay":
            args += ["--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0"]
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr


def _skipping_a_request(answer_of: dict[str, Any]) -> list[str]:
    """The session with a second request of the GOLEM connection numbered 2: the line of its
    frame 1 is missing, though no ``gap`` line says the disk lost one."""
    lines = _session({"late": True}, {"answer_of": answer_of})
    asked = {"id": "c", "method": "scene.list_layers", "params": {}}
    third = _frame(5, 2, "main", "c2s", 2, asked, method="scene.list_layers", expects_answer=True)
    lines = [*lines[:5], third, *lines[5:]]
    renumbered = [lines[0]]
    for seq, line in enumerate(lines[1:], start=1):
        renumbered.append(_line(**{**json.loads(line), "seq": seq}))
    return renumbered


def test_an_answer_of_naming_a_request_skipped_below_the_last_is_refused(tmp_path: Path) -> None:
    """Frame 1 of the connection is not in the file, frames 0 and 2 are: the proxy numbers
    each frame it decodes and writes it before any answer naming it, so only a file whose
    line was removed names it. Refused by every reader, in one line naming the line."""
    path = _write(tmp_path, _skipping_a_request({**ANSWER_OF, "n": 1}))
    said = (
        "line 9: answer_of names request frame 1 of connection 2 of route 'main', which the "
        "lines before it do not hold (they skip frame 1, then go on to frame 2)"
    )
    for command, *rest in [
        ("show",),
        ("show", "--json"),
        ("check",),
        ("replay", "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0"),
        ("mcp-verify", "--timeout", "5", "--", "true"),
    ]:
        done = run_cli(command, str(path), *rest)
        assert (done.returncode, done.stderr.strip()) == (2, f"golem-proxy: {path}: {said}"), (
            command,
            done.stderr,
        )
    # Naming a frame the file holds, the same file is read; after a gap line, believed.
    held = _write(tmp_path, _skipping_a_request({**ANSWER_OF, "n": 2}))
    assert run_cli("show", str(held)).returncode == 0
    lines = _skipping_a_request({**ANSWER_OF, "n": 1})
    gap = _line(seq=9, t=0.0065, kind="gap", missed=1, consumer="recording")
    renumbered = [
        _line(**{**json.loads(line), "seq": seq}) for seq, line in enumerate(lines[8:], 10)
    ]
    after_gap = [*lines[:8], gap, *renumbered]
    done = run_cli("show", str(_write(tmp_path, after_gap)))
    assert done.returncode == 0, done.stderr


def _with_close(calls: list[dict[str, Any]]) -> list[str]:
    """The session with a GOLEM connection that failed before a byte crossed it, its close
    naming ``calls`` (the calls in flight when it was opened)."""
    lines = _session({"late": True}, {})
    opened = _line(seq=9, t=0.009, kind="open", conn=3, route="main", client="c", upstream="u")
    closed = _line(
        seq=10, t=0.010, kind="close", conn=3, route="main", reason="upstream refused",
        bytes={"c2s": 0, "s2c": 0}, abnormal=True, tool_calls=calls, resets=[],
    )  # fmt: skip
    return [*lines[:7], opened, closed, *lines[7:]]


def test_a_close_naming_a_tool_call_the_file_lacks_is_refused(tmp_path: Path) -> None:
    """A connection that failed carries its calls on its close line: checked as a frame's."""
    assert run_cli("show", str(_write(tmp_path, _with_close([CALL])))).returncode == 0
    path = _write(tmp_path, _with_close([{**CALL, "n": 3}]))
    said = (
        "line 9: tool_calls names request frame 3 of connection 1, which the lines before it "
        "do not hold (its last is frame 0)"
    )
    for command, *rest in [
        ("show",),
        ("check",),
        ("replay", "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0"),
    ]:
        done = run_cli(command, str(path), *rest)
        assert (done.returncode, done.stderr.strip()) == (2, f"golem-proxy: {path}: {said}"), (
            command,
            done.stderr,
        )


def _no_call_at(lines: list[str]) -> list[str]:
    """``lines`` with an MCP ``tools/list`` (request frame 1) before the GOLEM request, whose
    ``tool_calls`` then names that frame."""
    listing = _frame(
        2, 1, "mcp", "c2s", 1, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
        method="tools/list", expects_answer=True,
    )  # fmt: skip
    return [*lines[:3], listing, *lines[3:]]


@pytest.mark.parametrize("made", [_gap_before_the_answer, _saved_view])
def test_tool_calls_the_file_may_lack_are_believed(tmp_path: Path, made: Any) -> None:
    """After a gap line, or in a view saved without some flows, a call named may be one the
    file lacks: read, not refused."""
    lines = _session({"tool_calls": [{**CALL, "n": 77}]}, {})
    if made is _gap_before_the_answer:
        gap = _line(seq=5, t=0.0045, kind="gap", missed=2, consumer="recording")
        lines = [*lines[:5], gap, *lines[5:]]
    else:
        lines = made(lines)
    done = run_cli("show", str(_write(tmp_path, lines)))
    assert done.returncode == 0, done.stderr


def test_tool_calls_naming_a_frame_that_is_no_tools_call_are_refused(tmp_path: Path) -> None:
    lines = _no_call_at(_session({}, {}))
    lines[5] = lines[5].replace('"tool_calls":[{"conn":1,"n":0', '"tool_calls":[{"conn":1,"n":1')
    path = _write(tmp_path, lines)
    said = (
        "line 6: tool_calls names request frame 1 of connection 1, which is no tools/call in "
        "the lines before it"
    )
    for command, *rest in [
        ("show",),
        ("replay", "--listen", "127.0.0.1:0", "--gh-listen", "127.0.0.1:0", "--idle-exit", "0"),
    ]:
        done = run_cli(command, str(path), *rest)
        assert (done.returncode, done.stderr.strip()) == (2, f"golem-proxy: {path}: {said}"), (
            command,
            done.stderr,
        )


def test_a_file_read_in_two_parts_checks_tool_calls_as_one_read(tmp_path: Path) -> None:
    """A large file's second half is read by another process (`scan`): a call named there
    and made in the first half is the first half's to decide, wherever the file is split."""
    from golem_proxy.recording import scan, scan_loader
    from golem_proxy.recording.reader import parse_header, route_profiles

    def read_split(lines: list[str]) -> list[Optional[str]]:
        data = ("\n".join(lines) + "\n").encode()
        header_end = data.index(b"\n") + 1
        header, profile = parse_header(data[:header_end])
        routes = route_profiles(header)
        end = data.rindex(b"\n") + 1
        said: list[Optional[str]] = []
        for middle in [at for at in range(header_end, end - 1) if data[at] == ord("\n")]:
            first = scan_loader.Loader(profile, routes, data, 1 << 20, header=header)
            try:
                first.scan(header_end - 1, middle + 1)
                first.adopt(scan._scan_part(profile, routes, data, 1 << 20, middle, end, header))
                said.append(None)
            except RecordingError as exc:
                said.append(f"line {exc.line}")
        return said

    whole = read_split(_session({}, {}))
    assert whole and set(whole) == {None}
    ghost = read_split(_session({"tool_calls": [{**CALL, "n": 77}]}, {}))
    assert set(ghost) == {"line 6"}, ghost
    # Two calls in flight, one asked before the split and one after: each half decides its own.
    assert set(read_split(_two_in_flight())) == {None}


def _two_in_flight() -> list[str]:
    """A tool call the server never answers (in flight for the rest of the session), then
    another, whose GOLEM request names both."""
    header, opened = _session({}, {})[:2]
    first = {"conn": 1, "n": 0, "id": 1, "tool": "hang"}
    second = {"conn": 1, "n": 1, "id": 2, "tool": "list_layers"}

    def call(ident: int, tool: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": tool}}

    asked = {"id": "a", "method": "scene.list_layers", "params": {}}
    return [
        header,
        opened,
        _frame(2, 1, "mcp", "c2s", 0, call(1, "hang"), method="tools/call", expects_answer=True),
        _line(seq=3, t=0.003, kind="open", conn=2, route="main", client="c", upstream="u"),
        _frame(4, 1, "mcp", "c2s", 1, call(2, "list_layers"), method="tools/call",
               expects_answer=True),
        _frame(5, 2, "main", "c2s", 0, asked, method="scene.list_layers",
               tool_calls=[first, second], expects_answer=True),
        _frame(6, 2, "main", "s2c", 0, {"id": "a", "result": {"layers": []}},
               tool_calls=[first, second], answers=0),
        _exchange(7, 2, "main", "scene.list_layers"),
    ]  # fmt: skip

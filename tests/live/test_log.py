"""The live log's lines: peer-controlled text is shown, never obeyed (no markup, no control
sequences) and never makes the log raise (lone surrogates)."""

from __future__ import annotations

import dataclasses
import io
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from golem_core.profiles import GOLEM, JSONRPC_NDJSON, MCP, Profile
from golem_proxy.events import (
    AnswerOf,
    Direction,
    Event,
    ExchangeCompleted,
    FrameSeen,
    RouteDown,
    SpoolFull,
    ToolCallRef,
)
from golem_proxy.live.log import EventLog, Verbosity
from golem_proxy.live.log_output import TerminalOutput
from tests.support.frames import too_large_gap
from tests.support.trace_builder import TapSimulator

TITLE_AND_CLEAR = "\x1b]0;PWNED\x1b\\\x1b[2J"


def frame(payload: bytes, profile: Profile = GOLEM) -> bytes:
    if profile is JSONRPC_NDJSON:
        return payload + b"\n"
    return struct.pack("!I", len(payload)) + payload


def hostile_session(
    method: str, message: str, code: object = "E\x1b[31m", profile: Profile = GOLEM
) -> list[Event]:
    """One connection, one exchange whose method, id, params, error code and error message
    carry ``method`` / ``message`` as JSON escapes (so lone surrogates survive the wire)."""
    sim = TapSimulator(profile)
    sim.open(1, route="ma\x1bin")
    # Scrybe ids are integers; GOLEM's are strings, here carrying the hostile text too.
    ident: object = 1 if profile is JSONRPC_NDJSON else f"id-{method}"
    request = {"jsonrpc": "2.0", "id": ident, "method": method, "params": {"k": method}}
    sim.send(1, Direction.C2S, frame(json.dumps(request).encode(), profile))
    error = {"code": code, "message": message}
    reply = {"jsonrpc": "2.0", "id": ident, "result": None, "error": error}
    if profile is JSONRPC_NDJSON:
        del reply["result"]
    sim.send(1, Direction.S2C, frame(json.dumps(reply).encode(), profile))
    bad = b'{"method": "\\udfff", "id": ['  # malformed JSON
    sim.send(1, Direction.C2S, frame(bad, profile))
    sim.close(1, reason=f"closed by {method}")
    return sim.events


def render(
    events: list[Event], verbosity: Verbosity, profile: Profile = GOLEM, **console: object
) -> str:
    buffer = io.StringIO()
    log = EventLog(Console(file=buffer, width=200, **console), profile, verbosity)  # type: ignore[arg-type]
    for event in events:
        log.handle(event)
    return buffer.getvalue()


def test_escape_sequences_are_printed_as_visible_text() -> None:
    events = hostile_session(TITLE_AND_CLEAR, f"boom {TITLE_AND_CLEAR}")
    for verbosity in Verbosity:
        out = render(events, verbosity, color_system=None)
        assert "\x1b" not in out and "\x9b" not in out
    out = render(events, Verbosity.VERBOSE, color_system=None)
    assert "\\x1b]0;PWNED\\x1b\\\\x1b[2J" in out  # the method, as text
    assert "boom \\x1b]0;PWNED" in out  # the error message
    assert "E\\x1b[31m" in out  # the error code
    assert "ma\\x1bin" in out  # the route name


def test_on_a_colour_terminal_only_the_logs_own_styles_are_sequences() -> None:
    out = render(
        hostile_session(TITLE_AND_CLEAR, TITLE_AND_CLEAR),
        Verbosity.VERBOSE,
        force_terminal=True,
        color_system="standard",
    )
    assert "\x1b[" in out  # colours are on
    assert "\x1b]" not in out and "\x1b[2J" not in out  # no title, no clear screen
    assert "E\x1b[31m" not in out and "E\\x1b[31m" in out  # the code's sequence is text


@pytest.mark.parametrize("profile", [GOLEM, JSONRPC_NDJSON], ids=lambda p: p.name)
def test_lone_surrogates_anywhere_never_raise(profile: Profile) -> None:
    code = "\udfff" if profile is GOLEM else -32001
    events = hostile_session("\udfff", "bad \ud800 message", code=code, profile=profile)
    for verbosity in Verbosity:
        out = render(events, verbosity, profile, color_system=None)
        out.encode("utf-8")  # what a UTF-8 terminal would have to take
        if verbosity >= Verbosity.NORMAL:
            assert "\\udfff" in out and "bad \\ud800 message" in out


def test_markup_in_data_stays_literal() -> None:
    out = render(hostile_session("[red]x[/red]", "[bold]no[/]"), Verbosity.VERBOSE)
    assert "[red]x[/red]" in out and "[bold]no[/]" in out


def test_the_log_stops_when_its_output_is_gone() -> None:
    output = TerminalOutput(io.StringIO())
    log = EventLog(output.console(), GOLEM)
    assert not log.stopped
    output.close(timeout=10)
    assert log.stopped


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_any_method_and_message_print_as_one_line_each(method: str, message: str) -> None:
    events = hostile_session(method, message)
    out = render(events, Verbosity.NORMAL, color_system=None)
    out.encode("utf-8")
    shown = [e for e in events if EventLog(Console(), GOLEM).render(e) is not None]
    assert len(out.splitlines()) == len(shown) >= 4  # no line split, none swallowed
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out.replace("\n", ""))


def test_huge_peer_strings_are_cut_to_one_short_line() -> None:
    # Under the 1 MiB past which the tap elides long strings: this is about cutting lines.
    events = hostile_session("m" * 100_000, "x" * 600_000, code="c" * 100_000)
    out = render(events, Verbosity.VERBOSE, color_system=None)
    assert max(len(line) for line in out.splitlines()) < 1000
    assert "x" * 150 + "…" in out


def test_a_gap_in_observation_is_always_shown() -> None:
    gap = too_large_gap(
        conn=3, t=1.5, detail="a frame over the limit\x1b[2J", digest="sha256:" + "ab" * 32
    )
    for verbosity in Verbosity:
        log = EventLog(Console(width=200), GOLEM, verbosity)
        line = log.render(gap)
        assert line is not None
        assert "frame-too-large" in line.plain and "\\x1b[2J" in line.plain
        assert "\x1b" not in line.plain


def test_a_failure_inside_a_success_result_is_a_problem_even_when_quiet() -> None:
    """The plugin's wrapped handlers answer a failure with a success envelope: the quiet log
    (problems only) shows it, in the failure colour, with the result's message; an ok
    answer stays out of it."""
    sim = TapSimulator(GOLEM)
    sim.open(1)
    for ident, method, result in (
        ("a", "ping", {"alive": True}),
        ("b", "operations.boolean_union", {"code": "INVALID_PARAMS", "message": "needs 2"}),
        ("c", "scripting.execute_python", {"success": False, "stderr": "boom"}),
    ):
        request = {"id": ident, "method": method, "params": {}}
        sim.send(1, Direction.C2S, frame(json.dumps(request).encode()))
        reply = {"id": ident, "result": result, "error": None}
        sim.send(1, Direction.S2C, frame(json.dumps(reply).encode()))
    lines = render(sim.events, Verbosity.QUIET).splitlines()
    assert len(lines) == 2, lines
    assert "operations.boolean_union" in lines[0] and "INVALID_PARAMS (in result)" in lines[0]
    assert "needs 2" in lines[0]
    assert "success: false" in lines[1] and "boom" in lines[1]
    coloured = render(sim.events, Verbosity.QUIET, force_terminal=True, color_system="standard")
    assert "\x1b[31mINVALID_PARAMS (in result)" in coloured  # red, as every failure


def test_a_quiet_log_lets_in_only_the_exchanges_it_shows() -> None:
    """`may_show` keeps the exchanges a quiet log leaves out off its queue (a stream of calls
    that went well costs it nothing), and lets every one it prints through."""
    sim = TapSimulator(GOLEM)
    sim.open(1)
    for ident, result in (("a", {"alive": True}), ("b", {"success": False, "stderr": "x"})):
        request = {"id": ident, "method": "m", "params": {}}
        sim.send(1, Direction.C2S, frame(json.dumps(request).encode()))
        sim.send(1, Direction.S2C, frame(json.dumps({"id": ident, "result": result}).encode()))
    exchanges = [e for e in sim.events if isinstance(e, ExchangeCompleted)]
    for verbosity in Verbosity:
        log = EventLog(Console(file=io.StringIO(), width=200), GOLEM, verbosity)
        for exchange in exchanges:
            assert log.may_show(exchange) == (log.render(exchange) is not None), verbosity
    quiet = EventLog(Console(file=io.StringIO()), GOLEM, Verbosity.QUIET)
    assert [quiet.may_show(e) for e in exchanges] == [False, True]


def _tools_call_line(side: str) -> str:
    """The live log's line for a ``tools/call`` whose exchange has main down on ``side``
    (``request``: made while down; ``response``: main went down during it)."""
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "box"}}
    reply = {"jsonrpc": "2.0", "id": 2, "result": {"content": [], "isError": True}}
    sim = TapSimulator(MCP)
    sim.open(1, route="mcp")
    sim.send(1, Direction.C2S, json.dumps(request).encode() + b"\n")
    sim.send(1, Direction.S2C, json.dumps(reply).encode() + b"\n")
    down = (RouteDown(route="main", since=1.25),)
    buffer = io.StringIO()
    log = EventLog(Console(file=buffer, width=200), MCP, Verbosity.NORMAL)
    log.started_wall = 0.0
    for event in sim.events:
        if isinstance(event, ExchangeCompleted):
            marked = dataclasses.replace(getattr(event, side), routes_down=down)
            event = dataclasses.replace(event, **{side: marked})
        log.handle(event)
    (line,) = [line for line in buffer.getvalue().splitlines() if "tools/call box" in line]
    return line


def test_a_call_made_while_a_golem_route_was_down_says_so() -> None:
    line = _tools_call_line("request")
    assert "⋯ main down since " in line and "went down" not in line


def test_a_call_during_which_a_golem_route_went_down_says_so() -> None:
    line = _tools_call_line("response")
    assert "⋯ main went down at " in line and "down since" not in line


def test_a_late_answer_and_a_result_read_from_another_call_are_problems_when_quiet() -> None:
    """Both went well by their outcome (``ok``), and both are what a quiet log is for: the
    exchange a server gave up on, and the call that returned another's answer to the model
    (their lines at the default verbosity: tests/mcp_layer/test_mcp_late_answer.py)."""
    sim = TapSimulator(GOLEM)
    sim.open(1)
    for ident in ("a", "b", "c"):
        request = {"id": ident, "method": "scene.list_layers", "params": {}}
        sim.send(1, Direction.C2S, frame(json.dumps(request).encode()))
        sim.send(1, Direction.S2C, frame(json.dumps({"id": ident, "result": {}}).encode()))
    plain, late, misread = [e for e in sim.events if isinstance(e, ExchangeCompleted)]
    call = ToolCallRef(conn=7, index=2, id=3, tool="run_python")
    late = dataclasses.replace(
        late,
        request=dataclasses.replace(late.request, tool_calls=(call,)),
        response=dataclasses.replace(late.response, late=True),
    )
    of = AnswerOf(route="main", conn=1, index=1, method="scene.list_layers", tool="run_python")
    misread = dataclasses.replace(
        misread, response=dataclasses.replace(misread.response, answer_of=of)
    )
    buffer = io.StringIO()
    quiet = EventLog(Console(file=buffer, width=300), GOLEM, Verbosity.QUIET)
    assert [quiet.may_show(e) for e in (plain, late, misread)] == [False, True, True]
    for exchange in (plain, late, misread):
        quiet.handle(exchange)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("· late: after its tool call run_python (MCP id 3) returned")
    assert lines[1].endswith(
        "· its result is main conn 1's answer (run_python), not its own: the server reads "
        "answers out of order"
    )


def test_a_full_spool_is_said_whatever_the_verbosity() -> None:
    # What a kill -9 would lose changes there: a quiet log says it too, as one line.
    buffer = io.StringIO()
    quiet = EventLog(Console(file=buffer, width=600), GOLEM, Verbosity.QUIET)
    full = SpoolFull(t=1.5, limit=16 * 1024 * 1024)
    assert quiet.may_show(full)
    quiet.handle(full)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 1
    assert (
        "the spool was full (--spool-limit 16 MiB) and the session went on without it: up to "
        "this point it held everything forwarded (a kill -9 would have lost no line, "
        "golem-proxy recover rebuilds them); from this point the session went on through "
        "the pipe without waiting while the recording caught up with what the spool held "
        "(the spool stays until then; a kill -9 meanwhile loses what was forwarded after "
        "this point), then forwarding waits for the recording again and a kill -9 loses at "
        "most ~100 ms of lines"
    ) in lines[0]


@pytest.mark.parametrize("acts", [False, True])
def test_a_tool_layer_log_takes_every_event_only_where_the_proxy_acts_on_frames(
    acts: bool,
) -> None:
    """`golem-proxy mcp` with --fault or --intercept: the log follows every row, to say on a
    tools/call line what the proxy did under it; without them it filters as any log, so a
    flood of GOLEM frames never takes room from the lines it prints."""
    sim = TapSimulator(GOLEM)
    sim.open(1)
    request = {"id": "a", "method": "ping", "params": {}}
    sim.send(1, Direction.C2S, frame(json.dumps(request).encode()))
    [seen] = [event for event in sim.events if isinstance(event, FrameSeen)]
    log = EventLog(
        Console(file=io.StringIO()), GOLEM, route_profiles={"mcp": MCP}, acts_on_frames=acts
    )
    assert log.may_show(seen) is acts

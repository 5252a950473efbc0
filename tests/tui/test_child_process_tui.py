"""``golem-proxy proxy --tui --observer child-process`` on a terminal, as a user runs it: the
forwarding process forwards and draws nothing, the observing process draws the TUI from its
hub; quitting the TUI ends both processes and leaves a whole recording; the forwarding
process stopping closes the TUI."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bench.processes import observing_processes
from golem_proxy.recording.format import read_recording
from golem_proxy.recording.shared_file import STOPPED_KIND
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from rhino_plugin import HeadlessPlugin, PluginOptions
from tests.support.cli_helpers import run_cli

from .helpers import box_and_missing_object, large_answer_upstream
from .terminal import Terminal, gone, pid_of_child, wait_until


@pytest.fixture
def upstream() -> Iterator[str]:
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=3))
    (host, port), _ = plugin.start()
    try:
        yield f"{host}:{port}"
    finally:
        plugin.stop()


@contextmanager
def _running_tui(tmp_path: Path, upstream: str, *more: str) -> Iterator[tuple[Terminal, int]]:
    """``proxy --tui --observer child-process`` on a terminal, recording to live.jsonl in
    ``tmp_path``; yields the terminal and the port it listens on, once the TUI shows it. The
    terminal is closed when the block ends (its text stays readable)."""
    terminal = Terminal(
        "proxy", "--tui", "--observer", "child-process",
        "--route", f"main@127.0.0.1:0={upstream}", "--record", "live.jsonl", *more,
        cwd=tmp_path,
    )  # fmt: skip
    try:
        yield terminal, int(terminal.wait_for(r"GOLEM_RHINO_PORT=(\d+)").group(1))
    finally:
        terminal.close()


def _lines(path: Path) -> list[dict[str, Any]]:
    """The recording's lines after its header."""
    return [json.loads(line) for line in path.read_bytes().splitlines()[1:]]


def _count(lines: list[dict[str, Any]], kind: str) -> int:
    return sum(line.get("kind") == kind for line in lines)


def test_the_tui_shows_calls_and_q_ends_both_processes_with_a_whole_recording(
    tmp_path: Path, upstream: str
) -> None:
    with _running_tui(tmp_path, upstream) as (terminal, port):
        observing = pid_of_child(terminal.process)
        assert observing is not None
        assert terminal.wait_for(f"main: 127.0.0.1:{port} → {upstream}")
        assert terminal.wait_for("recording to live.jsonl")
        assert box_and_missing_object(port)  # the error answer came back through the proxy
        terminal.wait_for(r"geometry\.create_box")
        terminal.wait_for(r"scene\.get_object_info")
        terminal.type("q")
        terminal.wait_for("Stop the proxy and quit")
        terminal.type("y")
        code = terminal.exit_code()
    assert code == 0, terminal.text()[-2000:]
    assert gone(observing)
    # The observing process's closing line, once the TUI gave the terminal back (the client
    # pings first).
    assert "recorded 3 exchanges (1 error, 0 violations) to live.jsonl" in terminal.text()
    recording = read_recording(str(tmp_path / "live.jsonl"))
    assert not recording.truncated_tail
    lines = _lines(tmp_path / "live.jsonl")
    methods = [line["method"] for line in lines if line["kind"] == "exchange"]
    assert methods == ["ping", "geometry.create_box", "scene.get_object_info"]
    assert not [line for line in lines if line["kind"] in ("gap", "unobserved", STOPPED_KIND)]


def test_ctrl_c_in_the_tui_quits_without_asking(tmp_path: Path, upstream: str) -> None:
    with _running_tui(tmp_path, upstream) as (terminal, port):
        observing = pid_of_child(terminal.process)
        box_and_missing_object(port)
        terminal.wait_for(r"scene\.get_object_info")
        terminal.type("\x03")
        code = terminal.exit_code()
    assert code == 0, terminal.text()[-2000:]
    assert observing is not None and gone(observing)
    assert "recorded 3 exchanges" in terminal.text()


def _answers_written_by_w(
    terminal: Terminal, tmp_path: Path, flows: int, after: int = 0
) -> list[bytes]:
    """`w` to the path offered (view.jsonl where the proxy runs) once ``flows`` flows are
    drawn, then Ctrl-C: the answers the view holds."""
    terminal.type("w")
    terminal.wait_for("Write the")
    terminal.type("\r")
    assert _shown_after(terminal, after, rf"Wrote {flows} flows")
    terminal.type("\x03")
    assert terminal.exit_code() == 0, terminal.text()[-2000:]
    view = read_recording(str(tmp_path / "view.jsonl"))
    return [exchange.response.payload for exchange in view.exchanges()]


def test_the_view_is_written_with_the_answers_read_back_from_the_recording(
    tmp_path: Path,
) -> None:
    # The observing process keeps none of these answers (each over the TUI's payload
    # threshold): `w` reads each back from the recording it writes (tui/payloads.py).
    mib = 1024 * 1024
    with (
        large_answer_upstream(mib) as upstream,
        _running_tui(tmp_path, str(upstream)) as (terminal, port),
    ):
        with GolemClient("127.0.0.1", port, timeout=10) as golem:  # its ping, then two calls
            assert golem.send_command("viewport.capture") == "C" * mib
            assert golem.send_command("viewport.capture") == "C" * mib
        terminal.wait_for(r"3 flows")
        answers = _answers_written_by_w(terminal, tmp_path, 3)
        assert "released from memory" not in terminal.text()
    assert len(answers) == 3
    assert all(answer.endswith(b"C" * mib + b'","error":null}') for answer in answers)


def test_the_tui_names_the_faults_the_forwarding_process_injects(
    tmp_path: Path, upstream: str
) -> None:
    # The plan stays in the forwarding process (the observing process is sent options
    # without it), so the note shown above the table is made there.
    more = ("--fault", "error:code=TIMEOUT,method=nothing.matches", "--fault-seed", "7")
    with _running_tui(tmp_path, upstream, *more) as (terminal, _port):
        assert terminal.wait_for(r"faults: error:code=TIMEOUT,method=nothing\.matches \(seed 7")
        terminal.type("\x03")
        assert terminal.exit_code() == 0, terminal.text()[-2000:]


def test_stopping_the_forwarding_process_closes_the_tui(tmp_path: Path, upstream: str) -> None:
    with _running_tui(tmp_path, upstream) as (terminal, port):
        box_and_missing_object(port)
        terminal.wait_for(r"scene\.get_object_info")
        os.kill(terminal.process.pid, signal.SIGTERM)
        code = terminal.exit_code()
    assert code == 0, terminal.text()[-2000:]
    assert "recorded 3 exchanges" in terminal.text()
    assert sum(line["kind"] == "exchange" for line in _lines(tmp_path / "live.jsonl")) == 3


def test_held_frames_stay_with_the_tui_of_one_process() -> None:
    result = run_cli(
        "proxy", "--tui", "--observer", "child-process", "--intercept", "",
        "--route", "main@127.0.0.1:0=127.0.0.1:9",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(
        "golem-proxy: --tui with --observer child-process does not take --intercept"
    )
    assert "use --observer in-process" in result.stderr


def _shown_after(terminal: Terminal, mark: int, pattern: str, timeout: float = 30) -> bool:
    """Whether ``pattern`` is drawn past character ``mark`` of the terminal's text, within
    ``timeout`` seconds."""
    return wait_until(lambda: re.search(pattern, terminal.text()[mark:]) is not None, timeout)


def test_with_its_recording_cut_the_tui_leaves_those_flows_out_of_a_view(
    tmp_path: Path,
) -> None:
    with (
        large_answer_upstream(100 * 1024) as upstream,
        _running_tui(tmp_path, str(upstream)) as (terminal, port),
    ):
        with GolemClient("127.0.0.1", port, timeout=10) as golem:
            golem.send_command("viewport.capture")
        mark = terminal.wait_for(r"2 flows").end()
        os.truncate(tmp_path / "live.jsonl", 100)
        terminal.type("w")
        terminal.wait_for("Write the")
        terminal.type("\r")
        # The TUI has no copy of the answers: both flows (their ping too, answered with
        # 100 KiB) are left out of the view, which says why.
        assert _shown_after(terminal, mark, "Wrote 0 flows")
        terminal.type("\x03")
        assert terminal.exit_code() == 0, terminal.text()[-2000:]
    view = read_recording(str(tmp_path / "view.jsonl"))
    assert view.exchanges() == []
    assert view.header.extra["left_out"] == (
        "2 flows left out, payloads not read back: "
        f"the recording {tmp_path / 'live.jsonl'} ends before it (cut short)"
    )


def test_a_killed_tui_is_replaced_and_shows_the_session_so_far(
    tmp_path: Path, upstream: str
) -> None:
    """``kill -9`` of the observing process that draws the TUI: a new one takes over the
    terminal and the recording; its TUI shows the calls from before (read back from the
    recording) and goes on live, on the same kept connection."""
    box = {"corner": [0, 0, 0], "width": 1, "depth": 2, "height": 3}
    with _running_tui(tmp_path, upstream) as (terminal, port):
        with GolemClient("127.0.0.1", port) as golem:  # kept open, as the MCP server keeps it
            golem.send_command("geometry.create_box", box)
            terminal.wait_for(r"geometry\.create_box")
            pid = terminal.process.pid
            assert wait_until(lambda: len(observing_processes(pid)) == 2)  # and a standby
            drawing = observing_processes(pid)[0]
            os.kill(drawing, signal.SIGKILL)
            note = terminal.wait_for(
                r"observation restarted \(the observing process was killed by SIGKILL\); "
                r"\d+ events before it read back"
            )
            with pytest.raises(RhinoCommandError):
                golem.send_command("scene.get_object_info", {"guid": "missing"})
            assert _shown_after(terminal, note.end(), r"scene\.get_object_info")
            assert _shown_after(terminal, note.end(), r"geometry\.create_box")  # read back
            assert _shown_after(terminal, note.end(), r"unobserved:restarted")  # its own row
        terminal.type("\x03")
        code = terminal.exit_code()
    assert code == 0, terminal.text()[-2000:]
    assert gone(drawing)
    assert "since observation restarted, recorded 1 exchange (1 error" in terminal.text()
    assert "the observing process was replaced 1 time" in terminal.text()
    lines = _lines(tmp_path / "live.jsonl")
    exchanges = [line for line in lines if line["kind"] == "exchange"]
    methods = [line["method"] for line in exchanges]
    assert methods == ["ping", "geometry.create_box", "scene.get_object_info"]
    assert len({line["conn"] for line in exchanges}) == 1
    assert [line["kind"] for line in lines].count("observation-restarted") == 1
    assert not read_recording(str(tmp_path / "live.jsonl")).truncated_tail


def test_a_tui_that_took_over_reads_its_answers_back_from_the_recording(
    tmp_path: Path,
) -> None:
    # The new process's lines begin after the line the forwarding process writes once the
    # process is made: the places of its answers count from where they really are.
    size = 100 * 1024
    with (
        large_answer_upstream(size) as upstream,
        _running_tui(tmp_path, str(upstream)) as (terminal, port),
    ):
        with GolemClient("127.0.0.1", port, timeout=10) as golem:
            golem.send_command("viewport.capture")
        terminal.wait_for(r"2 flows")
        pid = terminal.process.pid
        assert wait_until(lambda: len(observing_processes(pid)) == 2)  # and a standby
        # Both answers in the recording before the kill (drawn is not yet written: what the
        # killed process had not flushed would be read back unanswered).
        record = tmp_path / "live.jsonl"
        assert wait_until(lambda: _count(_lines(record), "exchange") == 2)
        os.kill(observing_processes(pid)[0], signal.SIGKILL)
        note = terminal.wait_for(r"observation restarted")
        with GolemClient("127.0.0.1", port, timeout=10) as golem:
            golem.send_command("viewport.capture")
        # Two calls before, two after, and the restart's own row between them, as in `show`.
        assert _shown_after(terminal, note.end(), r"5 flows")
        # The last answer decoded (a row counts from its request on), so handed to the TUI
        # too (the recorder is handed each event just before it): `w` takes it in, drawn yet
        # or not.
        assert wait_until(lambda: _count(_lines(record), "exchange") == 4)
        answers = _answers_written_by_w(terminal, tmp_path, 5, after=note.end())
    assert len(answers) == 4
    assert all(answer.endswith(b"C" * size + b'","error":null}') for answer in answers)


def test_past_its_restarts_a_killed_tui_gives_the_terminal_back(
    tmp_path: Path, upstream: str
) -> None:
    """With no restart left, forwarding goes on and the terminal is as before the TUI: line
    editing and signals again, so a Ctrl-C typed into it stops the proxy."""
    with _running_tui(tmp_path, upstream, "--observer-restarts", "0") as (terminal, port):
        observing = pid_of_child(terminal.process)
        assert observing is not None
        terminal.wait_for("recording to live.jsonl")
        assert not termios.tcgetattr(terminal.controller)[3] & termios.ICANON  # the TUI's raw
        os.kill(observing, signal.SIGKILL)
        terminal.wait_for(r"observation stopped \(the observing process was killed by SIGKILL\)")
        modes = termios.tcgetattr(terminal.controller)[3]
        assert modes & termios.ICANON and modes & termios.ISIG and modes & termios.ECHO
        assert box_and_missing_object(port)  # still forwarded
        terminal.type("\x03")  # a signal again, to the forwarding process
        code = terminal.exit_code()
    assert code == 0, terminal.text()[-2000:]
    # Observation stopped; the session then ended in order (the forwarding process's line).
    last_two = [line["kind"] for line in _lines(tmp_path / "live.jsonl")[-2:]]
    assert last_two == [STOPPED_KIND, "session-end"]


def test_a_busy_port_is_one_line_before_any_tui() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            "proxy", "--tui", "--observer", "child-process",
            "--route", f"main@127.0.0.1:{port}=127.0.0.1:9",
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        f"golem-proxy: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )
    assert result.stdout == ""  # the forwarding process binds first: no TUI was started


def test_r_sends_again_through_the_proxy_and_the_copy_is_recorded(
    tmp_path: Path, upstream: str
) -> None:
    with _running_tui(tmp_path, upstream) as (terminal, port):
        box_and_missing_object(port)
        terminal.wait_for(r"scene\.get_object_info")
        terminal.type("r")  # the flow followed: the last one
        terminal.wait_for(r"flow 3 sent again as #4")
        terminal.type("q")
        terminal.wait_for("Stop the proxy and quit")
        terminal.type("y")
        code = terminal.exit_code()
    assert code == 0, terminal.text()[-2000:]
    lines = _lines(tmp_path / "live.jsonl")
    methods = [line["method"] for line in lines if line["kind"] == "exchange"]
    # Sent again as a new client of the proxy: forwarded and recorded like the others.
    expected = ["ping", "geometry.create_box", "scene.get_object_info", "scene.get_object_info"]
    assert methods == expected
    assert len({line["conn"] for line in lines if line["kind"] == "exchange"}) == 2


def test_r_sends_again_on_the_flows_own_route_among_several(tmp_path: Path) -> None:
    """With several routes (the golem defaults are two), `r` refused ("sending again needs a
    live proxy") while the status bar said live: which route a flow came by was no address."""
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=3))
    main, gh = plugin.start()
    terminal = Terminal(
        "proxy", "--tui", "--observer", "child-process",
        "--route", f"main@127.0.0.1:0={main[0]}:{main[1]}",
        "--route", f"gh@127.0.0.1:0={gh[0]}:{gh[1]}",
        "--record", "live.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    try:
        port = int(terminal.wait_for(r"GOLEM_RHINO_PORT=(\d+)").group(1))
        gh_port = int(terminal.wait_for(r"GOLEM_GH_PORT=(\d+)").group(1))
        box_and_missing_object(port)
        terminal.wait_for(r"scene\.get_object_info")
        called = run_cli("call", "gh.ping", "--target", f"127.0.0.1:{gh_port}")
        assert called.returncode == 0, called.stderr
        terminal.wait_for(r"gh\.ping")
        terminal.type("r")  # the flow followed: the last one, gh.ping on the second route
        terminal.wait_for(r"flow 4 sent again as #5: ok")
        terminal.type("q")
        terminal.wait_for("Stop the proxy and quit")
        terminal.type("y")
        code = terminal.exit_code()
    finally:
        terminal.close()
        plugin.stop()
    assert code == 0, terminal.text()[-2000:]
    exchanges = [line for line in _lines(tmp_path / "live.jsonl") if line["kind"] == "exchange"]
    assert [(line["route"], line["method"]) for line in exchanges][-2:] == [
        ("gh", "gh.ping"),
        ("gh", "gh.ping"),
    ]

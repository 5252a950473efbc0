"""``golem-proxy proxy --intercept`` as a user drives it: commands typed on stdin, the headless
plugin process upstream, ``golem-proxy call`` as the client, and the recording afterwards."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.processes import observing_process
from golem_core.blocking import MessageReader
from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.analysis.filters import parse_filter
from golem_proxy.events import Direction, FrameSeen, InterceptStep
from golem_proxy.live.faults import received_streams
from golem_proxy.live.intercept import HeldFrame, InterceptEngine
from golem_proxy.live.intercept_console import HELP, InterceptConsole, frame_number, read_line
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.recording_lines import differing_lines
from tests.live.observer_child_helpers import process_gone, wait_for
from tests.support.cli_helpers import ROOT, run_cli
from tests.support.plugin_fixture import plugin_fixture

plugin = plugin_fixture(seed=13)


LOG_LINE = re.compile(r"\d\d:\d\d:\d\d\.\d{3} ")
"""The start of a log line (its time), which no console answer starts with."""


class InterceptingProxy:
    """A ``golem-proxy proxy`` child with a pipe on stdin; collects what it prints."""

    def __init__(self, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="300")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "golem_proxy", "proxy", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.listed = ""
        """The head of the last ``list`` answer (``intercept filter: …; N held``)."""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.port = int(self.wait_for(r": 127\.0\.0\.1:(\d+) →").group(1))
        self.wait_for("Ctrl-C to stop")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float = 20) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            time.sleep(0.01)
        raise AssertionError(f"no {pattern!r} in:\n{''.join(self.lines)}")

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def type_bytes(self, line: bytes) -> None:
        """Type bytes that need not be UTF-8, as a terminal or a pipe can send."""
        assert self.process.stdin is not None
        self.process.stdin.flush()
        self.process.stdin.buffer.write(line + b"\n")
        self.process.stdin.buffer.flush()

    def answer_to(self, line: bytes) -> list[str]:
        """Type ``line``, then ``list``; returns what was printed in between (the answer),
        without the log lines that came meanwhile (a connection's close, printed by an
        observing process of its own whenever it gets there; `call` probing on a second
        connection when its answer is held for long)."""
        start = len(self.lines)
        self.type_bytes(line)
        self.type("list")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            printed = [text for text in self.lines[start:] if not LOG_LINE.match(text)]
            for index, text in enumerate(printed):
                if text.startswith("intercept filter: "):
                    self.listed = text
                    return printed[:index]
            time.sleep(0.01)
        raise AssertionError(f"no answer to {line[:80]!r} in:\n{''.join(self.lines[start:])}")

    def stop(self) -> str:
        self.process.send_signal(signal.SIGINT)
        _, stderr = self.process.communicate(timeout=30)
        self._reader.join(10)
        return stderr


HOLD_CREATE_LAYER = r"~q & ~m ^scene\.create_layer$"


OBSERVERS = pytest.mark.parametrize("observer", ["in-process", "child-process"])
"""Where the session observes: the intercept engine decides in the forwarding process either
way; with a child, what it let through is decoded and recorded there."""


def holding_create_layer(
    plugin: PluginProcess, record: Path, observer: str = "in-process"
) -> InterceptingProxy:
    """A proxy to ``plugin``'s main port, recording to ``record``, that holds every
    ``scene.create_layer`` request."""
    return InterceptingProxy(
        "--route", f"127.0.0.1:0={plugin.main}", "--record", str(record),
        "--intercept", HOLD_CREATE_LAYER, "--observer", observer,
    )  # fmt: skip


def call_in_background(
    port: int, *args: str
) -> tuple[threading.Thread, list[subprocess.CompletedProcess[str]]]:
    done: list[subprocess.CompletedProcess[str]] = []
    thread = threading.Thread(
        target=lambda: done.append(run_cli("call", *args, "--target", f"127.0.0.1:{port}")),
        daemon=True,
    )
    thread.start()
    return thread, done


def create_layer_in_background(
    proxy: InterceptingProxy, params: dict[str, Any], *args: str
) -> tuple[threading.Thread, list[subprocess.CompletedProcess[str]], int]:
    """``call scene.create_layer`` with ``params`` through ``proxy``, which holds it, in a
    thread: returns the thread, the list its result lands in, and the number it is held as."""
    thread, done = call_in_background(proxy.port, "scene.create_layer", json.dumps(params), *args)
    held = int(proxy.wait_for(r"fault intercept:held scene\.create_layer held #(\d+)").group(1))
    return thread, done, held


def plugin_layers(plugin: PluginProcess) -> list[dict[str, Any]]:
    """The layers ``plugin`` has, as ``call scene.list_layers`` prints them."""
    target = str(plugin.main)
    return json.loads(run_cli("call", "scene.list_layers", "--target", target).stdout)["layers"]


@OBSERVERS
def test_hold_edit_and_send_from_stdin(
    plugin: PluginProcess, tmp_path: Path, observer: str
) -> None:
    record = tmp_path / "session.jsonl"
    proxy = holding_create_layer(plugin, record, observer)
    name = f"Walls-{observer}"
    try:
        params = {"name": name, "color": {"r": 255, "g": 0, "b": 0}}
        thread, done, held = create_layer_in_background(proxy, params, "--id", "w1")
        proxy.type("list")
        proxy.wait_for(rf"#{held} main conn \d+ → scene\.create_layer id=w1 held")
        proxy.type("edit 1 {not json")
        proxy.wait_for("the edited frame is not JSON")
        edited = {
            "id": "w1",
            "method": "scene.create_layer",
            "params": {"name": name, "color": {"r": 0, "g": 0, "b": 255}},
        }
        proxy.type(f"edit {held} {json.dumps(edited)}")
        thread.join(30)
        assert done and done[0].returncode == 0, done
        assert json.loads(done[0].stdout)["full_path"] == name
        proxy.wait_for(r"fault intercept:edit scene\.create_layer edited after")
    finally:
        proxy.stop()
    walls = [x for x in plugin_layers(plugin) if x["full_path"] == name]
    assert walls[0]["color"] == {"r": 0, "g": 0, "b": 255, "a": 255}
    recording = read_recording(str(record))
    frames = [
        e for e in recording.events if isinstance(e, FrameSeen) and e.method == "scene.create_layer"
    ]
    assert [json.loads(f.payload) for f in frames] == [edited]
    edit = next(
        e for e in recording.events if isinstance(e, InterceptStep) and e.fault == "intercept:edit"
    )
    assert json.loads(edit.original)["params"]["color"] == {"r": 255, "g": 0, "b": 0}


@OBSERVERS
def test_answer_and_drop_from_stdin(plugin: PluginProcess, observer: str) -> None:
    upstream = f"{plugin.main.host}:{plugin.main.port}"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0={upstream}", "--intercept", r"~q & ~m ^viewport\.",
        "--observer", observer,
    )  # fmt: skip
    try:
        thread, done = call_in_background(proxy.port, "viewport.capture", "--id", "v1")
        held = proxy.wait_for(r"held #(\d+)").group(1)
        answer = {"result": None, "error": {"code": "TIMEOUT", "message": "UI thread busy"}}
        proxy.type(f"answer {held} {json.dumps(answer)}")
        thread.join(30)
        assert done[0].returncode == 1
        assert done[0].stdout.startswith("error TIMEOUT: UI thread busy")
        thread, done = call_in_background(proxy.port, "viewport.get_view_info", "--timeout", "1")
        held = proxy.wait_for(r"viewport\.get_view_info held #(\d+)").group(1)
        proxy.type(f"d {held}")
        thread.join(30)
        assert done[0].returncode == 2 and "did not answer" in done[0].stderr
        proxy.wait_for(r"fault intercept:drop viewport\.get_view_info withheld request: dropped")
    finally:
        proxy.stop()


def _intercept_session(proxy: InterceptingProxy) -> list[str]:
    """Edit one held request, answer another by hand, drop a third, accept a fourth, each on a
    connection of its own; returns what the client got for each (a plain client: `call` would
    open a probing connection of its own when an answer is held for long)."""
    answer = {"result": None, "error": {"code": "TIMEOUT", "message": "UI thread busy"}}
    edited = {"id": "e1", "method": "scene.create_layer", "params": {"name": "Edited2"}}
    steps = [
        ("e1", "Edited", "edit", json.dumps(edited)),
        ("a1", "Answered", "answer", json.dumps(answer)),
        ("d1", "Dropped", "drop", ""),
        ("k1", "Kept", "accept", ""),
    ]
    got = []
    for call_id, name, verb, rest in steps:
        request = {"id": call_id, "method": "scene.create_layer", "params": {"name": name}}
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as sock:
            sock.sendall(GOLEM.encode(request))
            held = proxy.wait_for(rf"held #(\d+): .*id={call_id}\b").group(1)
            proxy.type(f"{verb} {held} {rest}".rstrip())
            if verb == "drop":
                proxy.wait_for(rf"intercept:drop .*id={call_id}\b")
                got.append("dropped")
                continue
            reply = MessageReader(sock).read_message(Role.RESPONSE)
            got.append(type(reply).__name__)
    return got


def test_an_intercept_session_is_recorded_alike_in_a_child(tmp_path: Path) -> None:
    """The same session, observed in this process and in a child: the intercept decides in
    the forwarding process either way, and the two recordings hold the same lines."""
    codes = {}
    for observer in ("in-process", "child-process"):
        with PluginProcess(seed=13) as fresh:
            proxy = holding_create_layer(fresh, tmp_path / observer, observer)
            try:
                codes[observer] = _intercept_session(proxy)
            finally:
                stderr = proxy.stop()
            assert proxy.process.returncode == 0, stderr
            names = [x["full_path"] for x in plugin_layers(fresh)]
            assert "Edited2" in names and "Kept" in names
            assert "Answered" not in names and "Dropped" not in names
    assert codes["child-process"] == codes["in-process"] == [
        "Response", "ErrorResponse", "dropped", "Response",
    ]  # fmt: skip
    recording = read_recording(str(tmp_path / "child-process"))
    steps = [e.fault for e in recording.events if isinstance(e, InterceptStep)]
    assert steps == [
        "intercept:held", "intercept:edit", "intercept:held", "intercept:answer",
        "intercept:held", "intercept:drop", "intercept:held", "intercept:accept",
    ]  # fmt: skip
    assert differing_lines(tmp_path / "in-process", tmp_path / "child-process") == []


def test_a_held_frame_outlives_a_killed_observing_process(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    """The frame waits in the forwarding process: the observing process dying costs the log and
    the rest of the recording, never the held frame or the commands that decide it."""
    record = tmp_path / "session.jsonl"
    proxy = holding_create_layer(plugin, record, "child-process")
    try:
        observer = observing_process(proxy.process.pid)
        thread, done, held = create_layer_in_background(proxy, {"name": "Survived"}, "--id", "o1")
        os.kill(observer, signal.SIGKILL)
        wait_for(lambda: process_gone(observer), what="the observing process to die")
        assert proxy.answer_to(f"accept {held}".encode()) == [f"#{held}: accept\n"]
        thread.join(30)
        assert done and done[0].returncode == 0, done
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert (
        "golem-proxy: observation stopped (the observing process was killed by SIGKILL)" in stderr
    )
    assert "Survived" in [x["full_path"] for x in plugin_layers(plugin)]
    assert read_recording(str(record)).events  # readable, ended by a line that says why


def test_usage_errors() -> None:
    bad = run_cli("proxy", "--route", "127.0.0.1:0=127.0.0.1:1", "--intercept", "~m (")
    assert bad.returncode == 2
    assert "golem-proxy: --intercept: bad filter: expected an argument" in bad.stderr
    lone = run_cli("proxy", "--route", "127.0.0.1:0=127.0.0.1:1", "--intercept-timeout", "3")
    assert lone.returncode == 2 and "--intercept-timeout needs --intercept FILTER" in lone.stderr


def test_console_commands_without_a_terminal() -> None:
    engine = InterceptEngine(GOLEM, parse_filter("~q"))
    console = InterceptConsole(engine)
    assert "intercept filter: ~q; 0 held" in console.handle("")[0].plain
    assert "not a command" in console.handle("frobnicate 3")[0].plain
    assert console.handle("accept 4")[0].plain == "no frame #4 is held"
    assert console.handle("e 4")[0].plain == "e needs the JSON after the number"
    assert console.handle("filter ~m (")[0].plain.startswith("bad filter: ")
    assert console.handle("filter off")[0].plain.startswith("intercept filter off")
    assert engine.filter is None
    assert console.handle("filter ~s & ~m ping")[0].plain == "intercept filter: ~s & ~m ping"
    assert console.handle("A")[0].plain == "accepted 0 held frames"
    assert "accept N" in console.handle("?")[0].plain


def test_the_console_reads_stdin_through_a_reader_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The thread waiting for a line is abandoned at a stop: on ``sys.stdin``'s own reader, it
    held that reader's lock when the interpreter closed it at exit, which aborts the process
    (``Fatal Python error: _enter_buffered_busy``, exit -6, seen at a Ctrl-C)."""
    read_fd, write_fd = os.pipe()

    class Stdin:
        def fileno(self) -> int:
            return read_fd

        @property
        def buffer(self) -> io.BufferedReader:
            raise AssertionError("read through sys.stdin's own reader")

    monkeypatch.setattr(sys, "stdin", Stdin())
    os.write(write_fd, b"list\n")
    os.close(write_fd)
    printed: list[str] = []
    console = InterceptConsole(InterceptEngine(GOLEM, parse_filter("~q")))
    try:
        trio.run(console.run, lambda text: printed.append(text.plain))
    finally:
        os.close(read_fd)
    assert printed[0].startswith("intercept filter: ~q; 0 held")


HOSTILE_LINES = [
    (b"accept \xc2\xb2", r"^not a frame number: '²' \(help: \?\)$"),
    (b"show \xc2\xb3", r"^not a frame number: '³'"),
    (b"a \xd9\xa1", "^not a frame number: '\u0661'"),  # an Arabic-Indic one
    (b"accept " + b"1" * 5000, r"^not a frame number: '1111"),
    (b"show #" + b"9" * 13, r"^not a frame number: '#9999"),
    (b'edit 1 {"a":"\xff"}', r"^not UTF-8 \(byte 13\): the line was ignored$"),
    (b"\xff\xfe", r"^not UTF-8 \(byte 0\)"),
    (b"edit 1 " + b"[" * 100_000 + b"]" * 100_000, r"nested too deep \(more than 256 levels\)"),
    (b"answer 1 " + b"[" * 100_000, r"^the answer is refused: JSON nested too deep"),
    (b"edit 1 " + b'{"a":' * 100_000, r"^the edited frame is refused: JSON nested too deep"),
    (b"filter " + b"(" * 100_000 + b"~q" + b")" * 100_000, r"^bad filter: nested deeper than 64"),
    (b"filter " + b"!" * 100_000 + b"~q", r"^bad filter: nested deeper than 64"),
    (b"accept 99", r"^no frame #99 is held$"),
]


def test_a_hostile_console_line_costs_one_line_and_keeps_the_held_frame(
    plugin: PluginProcess,
) -> None:
    upstream = f"{plugin.main.host}:{plugin.main.port}"
    proxy = InterceptingProxy("--route", f"127.0.0.1:0={upstream}", "--intercept", "~q")
    params = json.dumps({"name": "Survivor"})
    thread, done = call_in_background(proxy.port, "scene.create_layer", params, "--id", "s1")
    try:
        proxy.wait_for(r"fault intercept:held scene\.create_layer held #1:")
        for line, answer in HOSTILE_LINES:
            printed = proxy.answer_to(line)
            assert len(printed) == 1, (line[:40], printed)
            assert re.search(answer, printed[0].rstrip("\n")), (line[:40], printed)
            assert proxy.process.poll() is None  # still serving
            assert proxy.listed.rstrip() == "intercept filter: ~q; 1 held"  # and holding
        proxy.type("accept 1")
        thread.join(30)
        assert done and done[0].returncode == 0, done
        assert json.loads(done[0].stdout)["full_path"] == "Survivor"
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr


def test_hostile_lines_without_a_held_frame_leave_the_proxy_running() -> None:
    # As the issue tried it: no upstream, no held frame, one line typed at the console.
    proxy = InterceptingProxy("--route", "127.0.0.1:0=127.0.0.1:1", "--intercept", "~q")
    try:
        for line in (b"accept \xc2\xb2", b'edit 1 {"a":"\xff"}', b"show \xc2\xb3"):
            assert len(proxy.answer_to(line)) == 1
        assert proxy.process.poll() is None
    finally:
        stderr = proxy.stop()
    assert proxy.process.returncode == 0, stderr
    assert "internal error" not in stderr


@OBSERVERS
@pytest.mark.parametrize("how", ["reset", "close"])
def test_a_held_request_whose_client_goes_is_lost_and_never_sent(
    plugin: PluginProcess, tmp_path: Path, how: str, observer: str
) -> None:
    record = tmp_path / "session.jsonl"
    proxy = holding_create_layer(plugin, record, observer)
    name = f"Orphan-{how}-{observer}"
    try:
        held = create_layer_then_leave(proxy, name, how)
        why = "reset" if how == "reset" else "closed"
        proxy.wait_for(rf"fault intercept:lost .*not sent: the client {why} the connection")
        assert proxy.answer_to(f"accept {held}".encode()) == [
            f"#{held} was lost: the client {why} the connection while it was held\n"
        ]
    finally:
        proxy.stop()
    assert name not in [x["full_path"] for x in plugin_layers(plugin)]
    recording = read_recording(str(record))
    faults = [e.fault for e in recording.events if isinstance(e, InterceptStep)]
    assert faults == ["intercept:held", "intercept:lost"]
    # The client sent it: recorded though never forwarded, its flow undelivered (not missing,
    # nor unanswered: the plugin never got it, so it cannot have acted on it).
    sent = [e for e in recording.events if isinstance(e, FrameSeen)]
    assert [(e.direction, e.method) for e in sent] == [(Direction.C2S, "scene.create_layer")]
    shown = run_cli("show", str(record), "--json")
    [flow] = [json.loads(line) for line in shown.stdout.splitlines()]
    assert (flow["method"], flow["status"]) == (
        "scene.create_layer",
        "undelivered (withheld: intercept:lost)",
    )
    # Withheld, as a dropped request: what the plugin received is rebuilt without it, and the
    # rebuilt streams agree with what the proxy counted as forwarded.
    steps = [e for e in recording.events if isinstance(e, InterceptStep)]
    assert [e.withheld for e in steps] == [False, True]
    received = received_streams(recording.events, GOLEM)
    assert received[(1, Direction.C2S)] == b""
    exported = run_cli("export", str(record), "--format", "streams", "--out", str(tmp_path / "s"))
    assert exported.returncode == 0 and "≠" not in exported.stdout, exported.stdout


@OBSERVERS
@pytest.mark.parametrize("how", ["reset", "close"])
def test_a_held_answer_whose_client_goes_is_recorded_as_never_delivered(
    plugin: PluginProcess, tmp_path: Path, how: str, observer: str
) -> None:
    record = tmp_path / "session.jsonl"
    proxy = InterceptingProxy(
        "--route", f"127.0.0.1:0={plugin.main}", "--record", str(record),
        "--intercept", r"~s & ~m ^scene\.create_layer$", "--observer", observer,
    )  # fmt: skip
    try:
        create_layer_then_leave(proxy, "Made", how)
        proxy.wait_for(r"fault intercept:lost .*while the response was held")
    finally:
        proxy.stop()
    # The plugin made the layer and answered; the proxy read the answer and never sent it on.
    assert "Made" in [x["full_path"] for x in plugin_layers(plugin)]
    recording = read_recording(str(record))
    answers = [
        e for e in recording.events if isinstance(e, FrameSeen) and e.direction is Direction.S2C
    ]
    assert len(answers) == 1 and answers[0].undelivered, answers
    shown = run_cli("show", str(record), "--json")
    [flow] = [json.loads(line) for line in shown.stdout.splitlines()]
    assert flow["method"] == "scene.create_layer" and flow["status"] != "unanswered", flow
    assert flow["undelivered"] == answers[0].undelivered, flow


def create_layer_then_leave(proxy: InterceptingProxy, name: str, how: str) -> str:
    """A client asks ``proxy`` for a layer ``name``, waits until a frame of it is held, then
    goes (``reset``: SO_LINGER 0, else a close); the number of the frame held."""
    client = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    payload = {"id": "o1", "method": "scene.create_layer", "params": {"name": name}}
    client.sendall(GOLEM.encode(payload))
    held = proxy.wait_for(r"held #(\d+):").group(1)
    if how == "reset":
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    return held


def _engine_holding_one() -> InterceptEngine:
    engine = InterceptEngine(GOLEM, parse_filter("~q"))
    payload = GOLEM.encode_payload({"id": "h1", "method": "ping", "params": {}})
    message = GOLEM.parse(payload, Role.REQUEST)
    engine._add(HeldFrame(1, 1, "main", Direction.C2S, "ping", message, payload, 0.0))
    return engine


_COMMAND_WORDS = ["accept", "a", "A", "show", "s", "edit", "e", "drop", "d", "answer", "filter"]
_LINES = st.one_of(
    st.text(max_size=60),
    st.tuples(
        st.sampled_from(_COMMAND_WORDS),
        st.text(max_size=20),
        st.text(max_size=40),
    ).map(" ".join),
    st.tuples(st.sampled_from(_COMMAND_WORDS), st.sampled_from(["1", "#1", "²", "1" * 5000])).map(
        " ".join
    ),
)


def _answers_in_one_line(console: InterceptConsole, raw: bytes) -> list[str]:
    async def handle() -> list[str]:  # `list` reads trio's clock
        return [text.plain for text in console.handle_bytes(raw)]

    printed = trio.run(handle)
    for text in printed:
        assert text == HELP or "\n" not in text, text
        assert "internal error" not in text, text
        text.encode("utf-8")  # printable
    return printed


PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTIES
@given(_LINES)
def test_any_text_line_is_answered_in_lines_and_only_a_decision_releases(line: str) -> None:
    engine = _engine_holding_one()
    printed = _answers_in_one_line(InterceptConsole(engine), line.encode("utf-8", "surrogatepass"))
    decided = engine._held[1].decision is not None
    assert decided == any(re.fullmatch(r"#1: \w+|accepted 1 held frame", t) for t in printed)


@PROPERTIES
@given(st.binary(max_size=200))
def test_any_bytes_are_answered_in_lines(raw: bytes) -> None:
    _answers_in_one_line(InterceptConsole(_engine_holding_one()), raw)


def test_a_line_longer_than_the_limit_is_read_to_its_end_and_refused() -> None:
    stream = io.BytesIO(b"x" * 100 + b"\nlist\n" + b"y" * 50)
    assert read_line(stream, limit=10) == (b"", 101)  # the newline counts: what was dropped
    assert read_line(stream, limit=10) == (b"list\n", 0)
    assert read_line(stream, limit=10) == (b"", 50)
    assert read_line(stream, limit=10) == (b"", 0)  # the end


def test_frame_numbers_are_short_ascii_digits() -> None:
    assert [frame_number(w) for w in ("1", "#12", "007", "9" * 12)] == [1, 12, 7, 10**12 - 1]
    for word in ("", "#", "²", "\u0661", "1.0", "-1", "+1", "9" * 13, "1e3", " 1"):
        assert frame_number(word) is None, word


def test_an_unforeseen_failure_costs_the_line_only() -> None:
    class Broken(InterceptEngine):
        def held(self) -> list[HeldFrame]:
            raise RuntimeError("a bug\nover two lines")

    console = InterceptConsole(Broken(GOLEM, parse_filter("~q")))
    printed = [text.plain for text in console.handle_bytes(b"list")]
    assert printed == [
        "internal error on this line, ignored (RuntimeError: a bug\\nover two lines)"
    ]
    assert console.handle_bytes(b"filter off")[0].plain.startswith("intercept filter off")

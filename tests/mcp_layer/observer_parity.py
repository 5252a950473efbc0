"""Running one `golem-proxy mcp` session with either observer and reducing what it leaves
(the client's answers, the recording, the log and stderr) to what must be the same in both:
without times, durations, ports, pids, the server's random GOLEM ids and the server's own
stderr (the FastMCP server stamps its log lines with the time)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from golem_proxy.analysis.two_layers import read_tool_calls
from golem_proxy.testing.plugin_process import PluginProcess
from golem_proxy.testing.recording_lines import lines_by_connection
from tests.support.cli_helpers import reap

from .mcp_helpers import INITIALIZE, Call, rpc_line, start_piped, wrapped

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
"""The ids the test server gives its GOLEM requests (uuid4: new in every run)."""
LOG_NOISE = (
    (re.compile(r"^\d\d:\d\d:\d\d\.\d{3} "), ""),  # a log line's time
    (re.compile(r"\b\d+(?:\.\d+)? (?:s|ms|µs)\b"), "<duration>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"_PORT=\d+"), "_PORT=<port>"),
    (re.compile(r"\(pid \d+\)"), "(pid <pid>)"),
    (UUID, "<uuid>"),
    (re.compile(r"\s+"), " "),  # columns padded to the width of what was replaced
)
BASE64_KEYS = frozenset({"raw", "original"})
"""The keys of a recording's line whose value is bytes in base64."""
SERVER_LOG = re.compile(r"^(\[\d\d/\d\d/\d\d \d\d:\d\d:\d\d\]|\s)")
"""A line of the FastMCP server's own log on stderr (passed on by the wrapper): its first
line starts with the time in brackets, the rest with spaces."""


@dataclass(frozen=True)
class Observed:
    """What one run left, reduced to what both observers must agree on."""

    answers: list[Any]
    """The result (or error) the client got for each call."""
    recording: dict[Any, list[str]]
    """The recording's lines by connection (`lines_by_connection`), each as JSON."""
    attribution: list[tuple[str, list[Optional[str]], bool]]
    """Each tool call's name, the methods of the GOLEM flows it caused, and isError."""
    log: list[str]
    """The log lines the wrapper and its observer wrote to stderr, sorted (two processes
    write them in the other mode, the announcement and the events interleave freely)."""
    closing: list[str]
    """The stderr lines after the log: the closing line."""


def run_session(
    plugin: PluginProcess,
    directory: Path,
    observer: str,
    calls: Sequence[Call],
    *options: str,
    beside: Optional[Callable[[], object]] = None,
) -> Observed:
    """Make ``calls`` through ``golem-proxy mcp --observer OBSERVER OPTIONS`` to ``plugin``,
    recording to ``directory``/r.jsonl with the log on stderr (``directory`` is <dir> in
    the log), while ``beside`` runs in a
    thread (it decides held frames; its exception fails the run); returns what it left."""
    directory.mkdir(exist_ok=True)
    record, errors = directory / "r.jsonl", directory / "stderr"
    command = wrapped(plugin, record, "--observer", observer, *options)
    with errors.open("wb") as stderr, ThreadPoolExecutor(1) as pool:
        running = pool.submit(beside or (lambda: None))
        answers = call_raw(start_piped(command, stderr=stderr.fileno()), calls)
        running.result(timeout=60)
    lines = [
        _reduce_log(line).replace(str(directory), "<dir>")
        for line in errors.read_text().splitlines()
        if line.strip() and not SERVER_LOG.match(line)
    ]
    closing = [line for line in lines if line.startswith("golem-proxy ")]
    found = read_tool_calls(str(record))
    return Observed(
        answers=[json.loads(UUID.sub("<uuid>", json.dumps(answer))) for answer in answers],
        recording=comparable_recording(record),
        attribution=[
            (call.tool, [flow.method for flow in call.golem], bool(call.is_error)) for call in found
        ],
        log=sorted(line for line in lines if line not in closing),
        closing=closing,
    )


def assert_alike(child: Observed, one: Observed) -> None:
    """The run observed in a process of its own left what the run in one process did."""
    assert child.answers == one.answers
    assert child.attribution == one.attribution
    assert child.recording == one.recording
    assert child.log == one.log
    assert child.closing == one.closing


def call_raw(process: subprocess.Popen[bytes], calls: Sequence[Call]) -> list[Any]:
    """Initialize, make ``calls`` one at a time, close stdin and wait for the wrapper to exit
    (with status 0): unlike the `mcp` client, which kills a server that takes more than two
    seconds, so that everything the wrapper prints at the end is there. Returns each call's
    answer (its ``result`` or ``error``)."""
    assert process.stdin is not None and process.stdout is not None
    answers = []
    try:
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        _answer(process, 0)
        process.stdin.write(rpc_line({"method": "notifications/initialized"}))
        for number, (name, arguments) in enumerate(calls, 1):
            params = {"name": name, "arguments": arguments}
            process.stdin.write(rpc_line({"id": number, "method": "tools/call", "params": params}))
            process.stdin.flush()
            answer = _answer(process, number)
            answers.append(answer.get("result", answer.get("error")))
        process.stdin.close()
        assert process.wait(60) == 0
    finally:
        reap(process)
        process.stdout.close()
    return answers


def _answer(process: subprocess.Popen[bytes], ident: int) -> dict[str, Any]:
    """The server's answer ``ident`` (passing over its notifications)."""
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        assert line, f"stdout ended before answer {ident}"
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == ident:
            return message


def comparable_recording(record: Path) -> dict[Any, list[str]]:
    """The recording's lines by connection without what differs between runs: the server's
    stderr lines, and its GOLEM ids (numbered in the order each connection shows them, also
    inside the bytes a line carries)."""
    comparable: dict[Any, list[str]] = {}
    for conn, lines in lines_by_connection(record).items():
        number = _numbering()
        comparable[conn] = [
            UUID.sub(number, json.dumps(_raw_decoded(line), sort_keys=True))
            for line in lines
            if line.get("kind") != "stderr"
        ]
    return comparable


def _numbering() -> Callable[[re.Match[str]], str]:
    """A replacement for `UUID` that numbers each id in the order it first comes."""
    ids: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return ids.setdefault(match.group(), f"<id {len(ids)}>")

    return number


def _raw_decoded(line: dict[str, Any]) -> dict[str, Any]:
    """``line`` with the bytes it carries in base64 (a frame it could not decode, an edited
    frame's original) as text, where the ids are."""
    return {
        key: base64.b64decode(value).decode("utf-8", "replace")
        if key in BASE64_KEYS and isinstance(value, str)
        else value
        for key, value in line.items()
    }


def _reduce_log(line: str) -> str:
    for pattern, replacement in LOG_NOISE:
        line = pattern.sub(replacement, line)
    return line.strip()

"""Getting flows out of the TUI: the selected request as JSON or as the `golem-proxy call`
command line that sends it again, the view as a recording."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import Optional

from golem_core.messages import ABSENT, Malformed, Request, Role
from golem_core.profiles import Profile

from ..analysis.flows import Flow
from ..events import ConnectionClosed, Direction, Event, FrameSeen
from ..recording import files
from ..recording.format import SESSION_END_PROMISE, Header, RecordingWriter
from ..recording.frame_skeleton import over_parse_budget
from .payloads import (
    PayloadReleased,
    payload_of,
    released,
    stands_for_payload,
    with_payload,
)
from .render import pretty_json

__all__ = ["call_command", "request_json", "save_events", "write_copy", "write_private"]

DEFAULT_PROFILE = "golem"
"""The profile `golem-proxy call` uses without --profile."""


def request_json(flow: Flow) -> str:
    """The flow's request as pretty JSON; the raw payload text when it is not JSON; "" when
    the flow has no request. A live frame's long strings, elided from its message, are
    taken from its payload. Raises PayloadReleased when the TUI released the payload and
    the message alone is not the whole request (`payloads.stands_for_payload`) and the
    payload cannot be read back from the recording either (`payloads.payload_of`)."""
    frame = flow.request
    if frame is None:
        return ""
    message = frame.message
    if released(frame) is not None and stands_for_payload(frame):
        return pretty_json(message.obj)  # the message is the whole request: no reading back
    if isinstance(message, Malformed) and message.obj is None:
        return payload_of(frame).decode("utf-8", errors="replace")
    if frame.elided:
        payload = payload_of(frame)
        if not over_parse_budget(payload, 0):
            with contextlib.suppress(ValueError, RecursionError):
                return pretty_json(json.loads(payload))
        # Too large to parse (as a reader: read from its skeleton), or, in a file changed
        # since, no JSON: its text as recorded.
        return payload.decode("utf-8", errors="replace")
    return pretty_json(message.obj)


def call_command(
    flow: Flow,
    profile: Profile,
    target: Optional[str],
    environ: Mapping[str, str] = os.environ,
) -> Optional[str]:
    """The shell command that sends the flow's request again: ``golem-proxy call METHOD
    PARAMS --target TARGET`` (params as compact JSON, every word shell-quoted; the program
    as ``$GOLEM_PROXY_COMMAND`` names it, like the demo's hints). None when the flow has no
    well-formed request. Raises PayloadReleased as `request_json` does."""
    frame = flow.request
    message = frame.message if frame is not None else None
    if frame is None or not isinstance(message, Request):
        return None
    if frame.elided:
        # The message holds placeholders for its long strings: the params are the payload's.
        payload = payload_of(frame)
        if over_parse_budget(payload, 0):
            raise PayloadReleased(frame, _TOO_LARGE_FOR_A_COMMAND)
        message = profile.parse(payload, Role.REQUEST)
        if not isinstance(message, Request):  # pragma: no cover - parsed as a request before
            return None
    words = ["call", message.method]
    if message.params is not ABSENT:
        words.append(json.dumps(message.params, ensure_ascii=False, separators=(",", ":")))
    if target:
        words += ["--target", target]
    if profile.name != DEFAULT_PROFILE:
        words += ["--profile", profile.name]
    # The program may be several words ("./dev run"): it is written as the user set it.
    program = environ.get("GOLEM_PROXY_COMMAND", "golem-proxy")
    return f"{program} {shlex.join(words)}"


_TOO_LARGE_FOR_A_COMMAND = (
    "payload is too large to parse, so no command line is made of it (y copies its JSON)"
)


def write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (payloads may be private),
    whole, replacing only a file the user owns. Raises OSError."""
    files.write_private(path, text.encode("utf-8", "backslashreplace"), overwrite=True)


def write_copy(text: str, number: int, suffix: str = ".json") -> str:
    """Write a copied request (JSON, or a command line with ``suffix`` ".sh") to a new file
    with an unpredictable name in a directory only the user can enter (never a predictable
    name in a shared one, where another user could plant a file or a link first). Returns
    its path. Raises OSError."""
    stream, path = files.private_temp_file(f"request-{number}-", suffix)
    with stream:
        stream.write(text.encode("utf-8", "backslashreplace"))
    return path


def save_events(
    path: str, header: Header, events: Sequence[Event], filter_text: str, left_out: str = ""
) -> int:
    """Write ``events`` as a new recording at ``path`` (which must not exist), under a copy
    of ``header`` noting the filter and what was ``left_out`` (flows whose payloads the TUI
    released: in words). Returns the number of lines written after the header.
    Raises OSError (FileExistsError when ``path`` exists), or PayloadReleased when a payload
    the recording held cannot be read back from it; either way no file is left."""
    extra = dict(header.extra)
    # A view is not the session: its end line (how the session ended) is not written, so the
    # copy does not promise one either (it would read as cut short).
    extra.pop(SESSION_END_PROMISE, None)
    if filter_text:
        extra["filtered_by"] = filter_text
    unsaved = _answers_of_unsaved(events)
    if unsaved:
        # Without it, a reader would refuse the copy (an answer_of naming no request it holds).
        said = (
            "1 tool call returned the answer of a GOLEM exchange not in it"
            if unsaved == 1
            else f"{unsaved} tool calls returned the answers of GOLEM exchanges not in it"
        )
        left_out = f"{left_out}; {said}" if left_out else said
    uncalled = _calls_unsaved(events)
    if uncalled:
        # Nor would it take a GOLEM frame named under a tool call it does not hold.
        said = (
            "1 GOLEM frame names a tool call not in it"
            if uncalled == 1
            else f"{uncalled} GOLEM frames name tool calls not in it"
        )
        left_out = f"{left_out}; {said}" if left_out else said
    if left_out:
        extra["left_out"] = left_out
    new_header = dataclasses.replace(header, extra=extra)
    path = os.path.expanduser(path)
    writer = RecordingWriter.create(path, new_header)
    try:
        for event in events:
            # A payload the recording holds is read back here, one frame at a time.
            writer.write(with_payload(event))
        writer.close()
    except BaseException:
        # A view not written whole is not left behind looking like one cut short.
        with contextlib.suppress(Exception):
            writer.stream.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return writer.seq


def _answers_of_unsaved(events: Sequence[Event]) -> int:
    """How many tool calls' answers among ``events`` name (``answer_of``) a GOLEM request the
    events before them do not hold: the view left it out, or the session's file lacked it."""
    if not any(isinstance(e, FrameSeen) and e.answer_of is not None for e in events):
        return 0
    asked: set[tuple[str, int, int]] = set()
    unsaved = 0
    for event in events:
        if not isinstance(event, FrameSeen):
            continue
        found = event.answer_of
        if found is not None:
            unsaved += (found.route, found.conn, found.index) not in asked
        elif event.direction is Direction.C2S:
            asked.add((event.route, event.conn, event.index))
    return unsaved


def _calls_unsaved(events: Sequence[Event]) -> int:
    """How many GOLEM frames (and closes) among ``events`` name (``tool_calls``) an MCP tool
    call whose request the events before them do not hold: the view left it out, or the
    session's file lacked it."""
    sent: set[tuple[int, int]] = set()
    unsaved = 0
    for event in events:
        if isinstance(event, (FrameSeen, ConnectionClosed)) and event.tool_calls:
            unsaved += any((call.conn, call.index) not in sent for call in event.tool_calls)
        if isinstance(event, FrameSeen) and event.direction is Direction.C2S:
            sent.add((event.conn, event.index))
    return unsaved

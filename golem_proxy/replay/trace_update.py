"""`verify --update`: write a verified trace's live answers into the recording in place of the
recorded ones. Apart from `verify` because it is the one place that writes a recording the
proxy did not: it must change the answer frames of the exchanges verified and nothing else.

The exchanges verify re-sent are the scanner's (`load_exchanges`): the client's requests of
the plugin's layer. The recording is read again here with the reader, which also yields a
server's own requests and the MCP hop's exchanges; those are passed over, and each exchange
taken is checked to hold the request and answer verified (their digests), so that an answer is
never written into another exchange's frame: where the two readings differ (the file changed
since, or a damaged line the two readers pair otherwise), nothing is written."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Optional

from golem_core.contract import Violation
from golem_core.messages import Role
from golem_core.profiles import Profile

from ..events import Direction, ExchangeCompleted, ViolationSeen
from ..recording.files import replacing
from ..recording.format import RecordingError, RecordingReader, encode_event
from ..recording.frame_reading import event_object, read_frame
from ..recording.frame_skeleton import over_parse_budget
from ..recording.members import member_number
from ..recording.trace_lock import trace_lock
from .diffing import Comparator
from .large_payloads import with_id
from .row_numbers import row_label
from .verify import ExchangeCheck, VerifyResult, recorded_digest

__all__ = ["TraceReadsOtherwise", "update_trace"]


class TraceReadsOtherwise(Exception):
    """The recording's lines pair its frames otherwise than the trace verified: nothing is
    written (an answer would land in another exchange's frame)."""


@dataclass(frozen=True)
class _NewAnswer:
    """What replaces one recorded answer: its payload, the rules that redacted it, and what
    the tap would have said of it (the exchange's status and outcome, its violations)."""

    payload: bytes
    redacted: tuple[str, ...]
    status: str
    outcome: str
    violations: tuple[Violation, ...]


_Key = tuple[int, str, int]
"""An answer frame: its connection, route and index."""


def update_trace(path: str, result: VerifyResult, comparator: Comparator) -> int:
    """Rewrite the trace at ``path`` with the live responses of ``result``: header and every
    other line kept, each re-sent exchange's response replaced (carrying the recorded id, live
    GUIDs mapped back to the recorded ones so later requests stay valid), with its violations
    found again and its exchange's status. Written to a new file that atomically replaces the
    old one. Returns how many responses changed. Raises TraceReadsOtherwise, writing nothing,
    when the file's exchanges are not those verified; ValueError for a ``result`` verified
    without the recorded exchanges' digests (`verify_trace`'s ``digests``)."""
    checks = {check.number: check for check in result.checks if check.live_payload}
    if any(check.recorded is None for check in checks.values()):
        raise ValueError("update_trace needs a result verified with digests=True")
    # The file checked is the file rewritten: an append (`--golem-record=new`) waits.
    with trace_lock(path):
        return _update(path, checks, comparator)


def _update(path: str, checks: dict[int, ExchangeCheck], comparator: Comparator) -> int:
    with open(path, "rb") as stream:
        reader = RecordingReader(stream)
        profile = reader.profile
        other_layers = reader.header.route_profile_names()
        targets: dict[_Key, _NewAnswer] = {}
        number = 0
        for event in reader:
            # Verify re-sends the client's requests of the plugin's layer (`load_exchanges`):
            # a request the server sent, or a frame of the MCP hop, is no exchange of its.
            if (
                not isinstance(event, ExchangeCompleted)
                or event.request.direction is not Direction.C2S
                or event.route in other_layers
            ):
                continue
            number += 1
            check = checks.get(number)
            if check is None:
                continue
            found = (
                recorded_digest(event.request.payload),
                recorded_digest(event.response.payload),
            )
            if found != check.recorded:
                raise TraceReadsOtherwise(
                    f"its exchange {row_label(check.row)} reads otherwise than when it was "
                    "verified (the file changed, or a damaged line pairs its frames "
                    "otherwise); nothing written"
                )
            new = _updated_payload(event, check.live_payload or b"", profile, comparator)
            if new != event.response.payload:
                key: _Key = (event.conn, event.route, event.response.index)
                checked = new
                if check.live_unredacted is not None:  # checked as it came, as the tap does
                    checked = _updated_payload(event, check.live_unredacted, profile, comparator)
                targets[key] = _new_answer(event, new, checked, check.live_redacted, profile)
    if not targets:
        return 0
    with open(path, "rb") as source, replacing(path, overwrite=True) as out:
        out.write(source.readline())
        rewriter = _Rewriter(targets, profile)
        for line in source:
            out.write(rewriter.line(line))
    return len(targets)


def _new_answer(
    event: ExchangeCompleted,
    payload: bytes,
    checked: bytes,
    redacted: tuple[str, ...],
    profile: Profile,
) -> _NewAnswer:
    """The answer ``payload`` for ``event``'s exchange, judged as the tap judges one, from
    ``checked`` (the answer before redaction): its own checks and the pair's
    (`tap_frames`), and the exchange's outcome."""
    message = profile.parse(checked, Role.RESPONSE)
    violations = [*profile.check_message(message, checked)]
    violations += profile.check_exchange(event.request.message, message)
    outcome = profile.outcome(event.request.message, message)
    return _NewAnswer(payload, redacted, outcome.text, outcome.kind.value, tuple(violations))


def _updated_payload(
    event: ExchangeCompleted, live_payload: bytes, profile: Profile, comparator: Comparator
) -> bytes:
    if over_parse_budget(live_payload, 0):
        # Too large to parse: its bytes, the recorded id and GUIDs spliced in.
        to_recorded = comparator.guids.to_recorded_map
        return with_id(live_payload, event.request.message.id, to_recorded)
    try:
        obj = json.loads(live_payload)
    except ValueError:
        return live_payload
    if not isinstance(obj, dict):
        return live_payload
    obj = comparator.guids.to_recorded(obj)
    return profile.encode_payload(profile.with_id(obj, event.request.message.id))


class _Rewriter:
    """Writes the recording's lines again, each answer in ``targets`` replaced: its frame line
    (every other member kept), its violations (the old ones dropped, the new ones written
    right after it, as the tap publishes them) and its exchange line's status. The lines'
    ``seq`` numbers are shifted by the lines added and dropped, so that a reader finds none
    lost."""

    def __init__(self, targets: dict[_Key, _NewAnswer], profile: Profile) -> None:
        self.targets = targets
        self.profile = profile
        self.shift = 0

    def line(self, line: bytes) -> bytes:
        if not line.endswith(b"\n"):
            return line  # a killed writer's last line, which no reader takes: as it was
        head = line[:200]
        try:
            if b'"kind":"exchange"' in head:
                return self._exchange(line)
            if b'"kind":"violation"' in head and b'"dir":"s2c"' in head:
                key = _key(json.loads(line), "frame")  # None for a framing error's
                if key is not None and key in self.targets:
                    self.shift -= 1
                    return b""
            elif b'"kind":"frame"' in head and b'"dir":"s2c"' in line[:300]:
                return self._frame(line)
        except (ValueError, RecordingError):
            pass  # a line the readers passed over (damaged): kept as it is
        return self._shifted(line)

    def _exchange(self, line: bytes) -> bytes:
        data = json.loads(line)
        key = _key(data, "resp")
        answer = None if key is None else self.targets.get(key)
        if answer is None:
            return self._shifted(line)
        data["seq"] = int(data["seq"]) + self.shift
        data["status"] = answer.status
        data["outcome"] = answer.outcome
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    def _frame(self, line: bytes) -> bytes:
        data, verbatim = event_object(line)
        key = _key(data, "n")
        answer = None if key is None else self.targets.get(key)
        if answer is None:
            return self._shifted(line)
        profile = self.profile
        recorded = read_frame(data, verbatim, member_number(data, "t"), profile)
        payload = answer.payload
        frame = replace(
            recorded,
            size=len(profile.frame_payload(payload)),
            payload=payload,
            message=profile.parse(payload, Role.RESPONSE),
            redacted=answer.redacted,
            elided=0,
        )
        seq = int(data["seq"]) + self.shift
        lines = [encode_event(frame, profile, seq) or b""]
        for found in answer.violations:
            seq += 1
            seen = ViolationSeen(
                conn=frame.conn,
                route=frame.route,
                direction=Direction.S2C,
                frame_index=frame.index,
                t=frame.t,
                violation=found,
            )
            lines.append(encode_event(seen, profile, seq) or b"")
        self.shift += len(answer.violations)
        return b"".join(lines)

    def _shifted(self, line: bytes) -> bytes:
        """``line`` with its ``seq`` shifted (the writer puts it first); a line without one
        as it is."""
        if not self.shift or not line.startswith(_SEQ):
            return line
        end = line.find(b",", len(_SEQ))
        try:
            seq = int(line[len(_SEQ) : end])
        except ValueError:
            return line
        return b"%s%d%s" % (_SEQ, seq + self.shift, line[end:])


_SEQ = b'{"seq":'


def _key(data: Any, index: str) -> Optional[_Key]:
    """The frame a line names by ``index`` (``n``, ``resp``, ``frame``): None where it names
    none (a framing error's violation) or is no object."""
    if not isinstance(data, dict):
        return None
    conn, number = data.get("conn"), data.get(index)
    if type(conn) is not int or type(number) is not int:
        return None
    return (conn, str(data.get("route", "")), number)

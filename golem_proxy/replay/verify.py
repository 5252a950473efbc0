"""Client replay: re-send a trace's requests, in order, to a live plugin and compare each live
response with the recorded one.

Requests get fresh ids (UUID4 for GOLEM, counting integers for JSON-RPC) and recorded GUIDs are
swapped for the live ones learned from earlier responses, so a session that creates an object
and then uses it runs against the live plugin as it ran when recorded.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.framing import Frame
from golem_core.messages import Message, Role
from golem_core.profiles import Profile

from ..events import Direction, ExchangeCompleted, FrameSeen
from ..net.addresses import Address
from ..net.framed_stream import FramedStream
from ..net.listeners import connect, connect_reason
from ..recording.files import replacing
from ..recording.format import RecordingError, RecordingReader, encode_event
from ..recording.frame_skeleton import over_parse_budget
from ..recording.schema import MSG_KEY
from .diffing import Comparator, Difference, envelope_body
from .index import ExchangeTrace, RecordedExchange, encode_recorded
from .large_payloads import compare_as_bytes, with_id

__all__ = ["ExchangeCheck", "TargetUnreachable", "VerifyResult", "update_trace", "verify_trace"]


class TargetUnreachable(Exception):
    """The live plugin could not be reached at all on a route: the trace could not be
    verified, which is not the same as the plugin answering differently."""

    def __init__(self, route: str, address: Address, reason: str) -> None:
        super().__init__(f"cannot reach the plugin at {address} for route {route} ({reason})")
        self.route = route
        self.address = address
        self.reason = reason


@dataclass
class ExchangeCheck:
    """One re-sent exchange: the differences found, or why it could not be checked."""

    number: int
    route: str
    method: Optional[str]
    differences: list[Difference] = field(default_factory=list)
    problem: Optional[str] = None
    live_payload: Optional[bytes] = None

    @property
    def ok(self) -> bool:
        return not self.differences and self.problem is None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number, "route": self.route, "method": self.method}
        if self.problem is not None:
            out["problem"] = self.problem
        out["differences"] = [d.to_json() for d in self.differences]
        return out


@dataclass
class VerifyResult:
    checks: list[ExchangeCheck]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def failed(self) -> list[ExchangeCheck]:
        return [check for check in self.checks if not check.ok]


class _Link:
    """One connection to the live plugin for one route, reopened after the plugin closes it."""

    def __init__(self, route: str, address: Address, profile: Profile) -> None:
        self.route = route
        self.address = address
        self.profile = profile
        self.framed: Optional[FramedStream] = None
        self.reached = False

    async def round_trip(self, data: bytes, timeout: float) -> Frame:
        """Send a framed request and return the reply frame; one reconnect on a closed or reset
        connection, as the GOLEM client does. Raises OSError or trio.TooSlowError, and
        TargetUnreachable when the plugin was never reached on this route."""
        for attempt in (1, 2):
            try:
                with trio.fail_after(timeout):
                    return await self._try(data)
            except trio.TooSlowError:
                # The answer may still come: drop the connection so it cannot be taken for
                # the answer to the next request.
                await self.close()
                raise
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, EOFError):
                await self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _try(self, data: bytes) -> Frame:
        if self.framed is None:
            try:
                stream = await connect(self.address)
            except OSError as exc:
                if not self.reached:
                    raise TargetUnreachable(self.route, self.address, connect_reason(exc)) from exc
                raise
            self.reached = True
            self.framed = FramedStream(stream, self.profile)
        return await self.framed.exchange(data)

    async def close(self) -> None:
        if self.framed is not None:
            await self.framed.aclose()
            self.framed = None


async def verify_trace(
    trace: ExchangeTrace,
    targets: Mapping[str, Address],
    comparator: Comparator,
    *,
    timeout: float = 30.0,
    progress: Optional[Callable[[int], None]] = None,
) -> VerifyResult:
    """Re-send every recorded exchange of ``trace`` to ``targets`` (route name → address) in
    order and compare the answers. A route without a target is reported, not sent. Raises
    TargetUnreachable when a target cannot be connected to at all (a plugin that answered
    once and then stops answering is a difference, reported per exchange). ``progress`` is
    told how many exchanges are done before each one and at the end."""
    profile = trace.profile
    links: dict[str, _Link] = {}
    checks: list[ExchangeCheck] = []
    ids = profile.request_ids()
    try:
        for exchange in trace.exchanges:
            if progress is not None:
                progress(len(checks))
            check = ExchangeCheck(exchange.number, exchange.route, exchange.method)
            checks.append(check)
            address = targets.get(exchange.route)
            if address is None:
                check.problem = f"no target for route {exchange.route!r}"
                continue
            data = _request_bytes(exchange, profile, comparator, ids)
            link = links.get(exchange.route)
            if link is None:
                link = links[exchange.route] = _Link(exchange.route, address, profile)
            try:
                frame = await link.round_trip(data, timeout)
            except (OSError, EOFError, trio.TooSlowError, trio.BrokenResourceError) as exc:
                reason = str(exc) or (
                    f"no answer within {timeout:g} s"
                    if isinstance(exc, trio.TooSlowError)
                    else type(exc).__name__
                )
                check.problem = f"no answer from {address}: {reason}"
                continue
            check.live_payload = frame.payload
            check.differences = _compare(exchange, frame.payload, comparator)
        if progress is not None:
            progress(len(checks))
    except RecordingError as exc:  # a payload of a damaged line, decoded only now
        raise (exc.at(trace.path) if trace.path is not None else exc) from None
    finally:
        with trio.CancelScope(shield=True):
            for link in links.values():
                await link.close()
    return VerifyResult(checks)


def _request_bytes(
    exchange: RecordedExchange, profile: Profile, comparator: Comparator, ids: Iterator[Any]
) -> bytes:
    if exchange.request_type != "request":
        return profile.frame_payload(exchange.request)  # malformed: as recorded
    if exchange.too_large(response=False):
        # Not parsed (a reader's budget): its bytes, a fresh id and the live GUIDs spliced in.
        live = with_id(exchange.request, next(ids), comparator.guids.to_live_map)
        return profile.frame_payload(live)
    try:
        obj = exchange.request_obj()
    except RecordingError:
        raise
    except ValueError:  # recorded as it came, not JSON: sent so
        return profile.frame_payload(exchange.request)
    if not isinstance(obj, dict):  # a request that is no object is sent as it was recorded
        return profile.frame_payload(exchange.request)
    obj["id"] = next(ids)
    if "params" in obj:
        obj["params"] = comparator.guids.to_live(obj["params"])
    return encode_recorded(profile, obj)


def _compare(
    exchange: RecordedExchange, live_payload: bytes, comparator: Comparator
) -> list[Difference]:
    if exchange.too_large(response=True):
        return compare_as_bytes(exchange.response, live_payload, comparator)
    try:
        live: Any = json.loads(live_payload)
    except ValueError:
        live = live_payload.decode("utf-8", "replace")
    try:
        recorded: Any = exchange.response_obj()
    except RecordingError:
        raise
    except ValueError:  # recorded as it came, not JSON
        recorded = exchange.response.decode("utf-8", "replace")
    return comparator.compare(envelope_body(recorded), envelope_body(live), exchange.method)


def update_trace(path: str, result: VerifyResult, comparator: Comparator) -> int:
    """Rewrite the trace at ``path`` with the live responses of ``result``: header and every
    other line kept, each re-sent exchange's response replaced (carrying the recorded id, live
    GUIDs mapped back to the recorded ones so later requests stay valid). Written to a new file
    that atomically replaces the old one. Returns how many responses changed."""
    live = {check.number: check.live_payload for check in result.checks if check.live_payload}
    with open(path, "rb") as stream:
        reader = RecordingReader(stream)
        profile = reader.profile
        targets: dict[tuple[int, int], bytes] = {}
        number = 0
        for event in reader:
            if isinstance(event, ExchangeCompleted):
                number += 1
                payload = live.get(number)
                if payload is not None:
                    new = _updated_payload(event, payload, profile, comparator)
                    if new != event.response.payload:
                        targets[(event.conn, event.response.index)] = new
    if not targets:
        return 0
    with open(path, "rb") as source, replacing(path, overwrite=True) as out:
        out.write(source.readline())
        parsed: dict[tuple[int, int], Message] = {}  # each new answer parsed once
        for line in source:
            out.write(_rewrite_line(line, targets, profile, parsed))
    return len(targets)


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


def _frame_members(line: bytes) -> dict[str, Any]:
    """A frame line's members before its message, parsed without it: a recorded answer too
    large to parse is not (its line was read as the reader reads it when the trace loaded)."""
    at = line.find(MSG_KEY)
    if at >= 0:
        with contextlib.suppress(ValueError):
            members = json.loads(line[:at] + b"}")
            if isinstance(members, dict):
                return members
    data = json.loads(line)
    return data if isinstance(data, dict) else {}


def _rewrite_line(
    line: bytes,
    targets: dict[tuple[int, int], bytes],
    profile: Profile,
    parsed: dict[tuple[int, int], Message],
) -> bytes:
    head = line[:200]
    if b'"kind":"exchange"' in head:
        data = json.loads(line)
        key = (int(data["conn"]), int(data["resp"]))
        payload = targets.get(key)
        if payload is None:
            return line
        # The line keeps no request: the outcome is read from the answer alone.
        message = parsed.pop(key, None) or profile.parse(payload, Role.RESPONSE)
        outcome = profile.outcome(None, message)
        data["status"] = outcome.text
        data["outcome"] = outcome.kind.value
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    if b'"kind":"frame"' not in head or b'"dir":"s2c"' not in line[:300]:
        return line
    data = _frame_members(line)
    if data.get("kind") != "frame" or data.get("dir") != "s2c":
        return line
    key = (int(data["conn"]), int(data["n"]))
    payload = targets.get(key)
    if payload is None:
        return line
    message = parsed[key] = profile.parse(payload, Role.RESPONSE)
    answers = data.get("answers")
    frame = FrameSeen(
        conn=int(data["conn"]),
        route=str(data.get("route", "")),
        direction=Direction.S2C,
        index=int(data["n"]),
        t=float(data.get("t", 0.0)),
        size=len(profile.frame_payload(payload)),
        payload=payload,
        message=message,
        answers=answers if type(answers) is int else None,
        orphan=data.get("orphan") is True,
    )
    encoded = encode_event(frame, profile, int(data["seq"]))
    assert encoded is not None
    return encoded

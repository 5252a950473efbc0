"""Client replay: re-send a trace's requests, in order, to a live plugin and compare each live
response with the recorded one.

Requests get fresh ids (UUID4 for GOLEM, counting integers for JSON-RPC) and recorded GUIDs are
swapped for the live ones learned from earlier responses, so a session that creates an object
and then uses it runs against the live plugin as it ran when recorded.

The live answer is the frame that answers the request sent, by golem_core's `AnswerReader`
rule, never just the next frame: the plugin's own notifications and requests are skipped and
counted, a late or repeated answer to an earlier request is told to that request's check, and a
reply with an id never sent is a difference of its own (where the protocol's client would take
it for the answer) or skipped and named (where replies go by id). What the plugin sends after
a route's last answer is read too, for a short while (`Link.read_after_last`), and told to
the exchanges it belongs to the same way: a plugin that answers the last request twice
differs as one that answers an earlier one twice does.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.answers import ASKED_REMEMBERED
from golem_core.messages import Request, Role
from golem_core.profiles import Profile

from ..net.addresses import Address
from ..net.request_client import id_text
from ..recording.format import RecordingError
from ..recording.frame_skeleton import over_parse_budget
from .diffing import Comparator, Difference, envelope_body
from .index import ExchangeTrace, RecordedExchange, encode_recorded
from .large_payloads import compare_as_bytes, with_id
from .live_link import MAX_SKIPPED, Link, Live, Sent, TargetUnreachable, TooManyFrames
from .live_redaction import LiveRedaction
from .row_numbers import row_label

__all__ = [
    "ExchangeCheck",
    "TargetUnreachable",
    "VerifyResult",
    "recorded_digest",
    "verify_trace",
]


@dataclass
class ExchangeCheck:
    """One re-sent exchange: the differences found, or why it could not be checked."""

    number: int
    route: str
    method: Optional[str]
    differences: list[Difference] = field(default_factory=list)
    problem: Optional[str] = None
    live_payload: Optional[bytes] = None
    """The frame that answered the request (None when none did)."""
    extra: list[str] = field(default_factory=list)
    """What the plugin sent besides that answer that belongs to this exchange (a second
    answer with its id, replies with ids never sent), in words: each is a difference."""
    unasked: int = 0
    """Frames of the plugin's own (notifications, requests) skipped while waiting for the
    answer: reported, not a difference."""
    row: Optional[int] = None
    """The exchange's row in the recording, as `show` numbers it (what ``#N`` says)."""
    not_sent: Optional[str] = None
    """Why it was not sent, where the recording's answer is not the plugin's (the proxy
    answered in its place): no difference, said apart."""
    live_redacted: tuple[str, ...] = ()
    """The recording's ``--redact`` rules that replaced something in ``live_payload``."""
    live_unredacted: Optional[bytes] = None
    """Where they did, the answer as it came: checked against the contract as the tap checks
    a frame, before redaction (a placeholder breaks the shapes the contract names)."""
    recorded: Optional[tuple[bytes, bytes]] = None
    """Digests of the recorded request and response, taken only when asked for
    (`verify_trace`'s ``digests``: ``--update``): `update_trace` writes an answer only where
    the line it rewrites holds that exchange. A run that writes nothing does not hash every
    recorded answer."""

    @property
    def ok(self) -> bool:
        return not self.differences and self.problem is None and not self.extra

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.row, "route": self.route, "method": self.method}
        if self.problem is not None:
            out["problem"] = self.problem
        if self.extra:
            out["extra"] = self.extra
        if self.unasked:
            out["unasked"] = self.unasked
        if self.not_sent is not None:
            out["not_sent"] = self.not_sent
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

    @property
    def unasked(self) -> int:
        """Frames of the plugin's own skipped over the whole run."""
        return sum(check.unasked for check in self.checks)

    @property
    def unanswered(self) -> list[ExchangeCheck]:
        """The checks whose request got no answer (nothing to update them from); not those
        not sent (`ExchangeCheck.not_sent`)."""
        return [
            check for check in self.checks if check.live_payload is None and check.not_sent is None
        ]

    @property
    def not_sent(self) -> list[ExchangeCheck]:
        """The checks not sent: answered by the proxy in the plugin's place."""
        return [check for check in self.checks if check.not_sent is not None]


async def verify_trace(
    trace: ExchangeTrace,
    targets: Mapping[str, Address],
    comparator: Comparator,
    *,
    timeout: float = 30.0,
    progress: Optional[Callable[[int], None]] = None,
    digests: bool = False,
) -> VerifyResult:
    """Re-send every recorded exchange of ``trace`` to ``targets`` (route name → address) in
    order and compare the answers. A route without a target is reported, not sent. Raises
    TargetUnreachable when a target cannot be connected to at all (a plugin that answered
    once and then stops answering is a difference, reported per exchange). ``progress`` is
    told how many exchanges are done before each one and at the end. ``digests``: keep the
    digests of each recorded exchange (`ExchangeCheck.recorded`), which `update_trace`
    needs."""
    profile = trace.profile
    links: dict[str, Link] = {}
    checks: list[ExchangeCheck] = []
    # The exchange each recent request key was sent for: a later answer with that key is told
    # to its check. Keys are fresh per run (`request_ids`), so they never collide.
    sent_for: OrderedDict[Any, ExchangeCheck] = OrderedDict()
    ids = profile.request_ids()
    redaction = LiveRedaction(profile, trace.header.redact)
    last: dict[str, tuple[Sent, ExchangeCheck]] = {}
    """Each route's last request sent, and its check."""
    try:
        for exchange in trace.exchanges:
            if progress is not None:
                progress(len(checks))
            row = exchange.row
            check = ExchangeCheck(exchange.number, exchange.route, exchange.method, row=row)
            if digests:
                check.recorded = (
                    recorded_digest(exchange.request),
                    recorded_digest(exchange.response),
                )
            checks.append(check)
            by_proxy = exchange.answered_by_proxy
            if by_proxy is not None:
                # The plugin never got it when recorded: sent now, it would change the live
                # document, and its answer is the proxy's, not the plugin's.
                check.not_sent = f"answered by the proxy ({by_proxy}), not by the plugin"
                continue
            address = targets.get(exchange.route)
            if address is None:
                check.problem = f"no target for route {exchange.route!r}"
                continue
            sent = _request(exchange, profile, comparator, ids)
            if sent.key is not None:
                sent_for[sent.key] = check
                if len(sent_for) > ASKED_REMEMBERED:
                    sent_for.popitem(last=False)
            link = links.get(exchange.route)
            if link is None:
                link = links[exchange.route] = Link(exchange.route, address, profile)
            live = Live()
            try:
                await link.round_trip(sent, live, timeout)
            except TooManyFrames:
                check.problem = (
                    f"no answer from {address}: it sent {MAX_SKIPPED} frames that are not the "
                    f"answer ({live.unasked} of its own) without answering"
                )
            except (OSError, EOFError, trio.TooSlowError, trio.BrokenResourceError) as exc:
                reason = str(exc) or (
                    f"no answer within {timeout:g} s"
                    if isinstance(exc, trio.TooSlowError)
                    else type(exc).__name__
                )
                check.problem = f"no answer from {address}: {reason}"
            _note_live(check, live, sent, sent_for, f"while {row_label(check.row)} waited")
            if live.frame is not None:
                # Compared and written as the recording holds answers: redacted by its rules.
                payload, check.live_redacted = redaction.answer(
                    exchange.route, live.frame.payload, exchange.method
                )
                if check.live_redacted:
                    check.live_unredacted = live.frame.payload
                check.live_payload = payload
                check.differences = _compare(exchange, payload, comparator)
            last[exchange.route] = (sent, check)
        await _read_after_last(links, last, sent_for)
        if progress is not None:
            progress(len(checks))
    except RecordingError as exc:  # a payload of a damaged line, decoded only now
        raise (exc.at(trace.path) if trace.path is not None else exc) from None
    finally:
        with trio.CancelScope(shield=True):
            for link in links.values():
                await link.close()
    return VerifyResult(checks)


async def _read_after_last(
    links: Mapping[str, Link],
    last: Mapping[str, tuple[Sent, ExchangeCheck]],
    sent_for: Mapping[Any, ExchangeCheck],
) -> None:
    """Read what each route's plugin sends after its last answer, the routes at once (each
    costs a round trip, or a quiet spell), and tell it to the checks it belongs to: the last
    request's own, or an earlier one's."""
    after: dict[str, Live] = {}

    async def read(route: str, link: Link, sent: Sent) -> None:
        live = after[route] = Live()
        await link.read_after_last(sent, live)

    async with trio.open_nursery() as nursery:
        for route, link in links.items():
            if route in last:
                nursery.start_soon(read, route, link, last[route][0])
    for route, live in after.items():
        sent, check = last[route]
        when = f"once route {route}'s last request was answered"
        if live.again:
            check.extra.append(f"{_answers_again(check, live.again)}, {when} (skipped)")
        if live.again_unnamed:
            frames = "a frame" if live.again_unnamed == 1 else f"{live.again_unnamed} frames"
            check.extra.append(
                f"{frames} a client takes for its answer (no id, or no JSON) came {when} (skipped)"
            )
        if live.bad_framing is not None:
            check.extra.append(f"bytes that are no frame came {when}: {live.bad_framing}")
        _note_live(check, live, sent, sent_for, when, strays_came=when)


def _note_live(
    check: ExchangeCheck,
    live: Live,
    sent: Sent,
    sent_for: Mapping[Any, ExchangeCheck],
    when: str,
    strays_came: str = "before its answer",
) -> None:
    """Tell ``check`` (and the checks of earlier requests) what came for it besides its
    answer; ``when`` says when it came (``while #3 waited``), ``strays_came`` when the
    replies with an id never sent came, as said on ``check``."""
    check.unasked += live.unasked
    if live.answered_wrong:
        check.problem = (
            f"answered with id {id_text(live.wrong_id)}, not {_sent_id_text(sent)} (not compared)"
        )
    strays = live.strays
    if strays.count:
        check.extra.append(
            f"{strays.count} {'reply' if strays.count == 1 else 'replies'} with an id "
            f"verify never sent came {strays_came} (skipped): "
            + ", ".join(id_text(ident) for ident in strays.ids)
            + (", …" if strays.count > len(strays.ids) else "")
        )
    for key in live.stale:
        earlier = sent_for.get(key)
        if earlier is None:
            continue
        earlier.extra.append(f"{_answers_again(earlier, 1)}, {when} (skipped)")


def _answers_again(check: ExchangeCheck, count: int) -> str:
    """``count`` answers to ``check``'s request besides the one taken, in words: after the
    first, or late (none was taken: no answer came in time, or one with another id)."""
    if check.live_payload is not None:
        more = "another answer" if count == 1 else f"{count} more answers"
        return f"{more} with its id came after the first"
    return f"{'an answer' if count == 1 else f'{count} answers'} with its id came late"


def _sent_id_text(sent: Sent) -> str:
    return "the request's (none readable)" if sent.key is None else id_text(sent.ident)


def _key(profile: Profile, ident: Any) -> Optional[Any]:
    """The correlation key of a request with id ``ident``."""
    return profile.correlation_key(Request(ident, "", None, {"id": ident}))


def _key_of(profile: Profile, payload: bytes) -> tuple[Any, Optional[Any]]:
    """The id and correlation key of a request sent as recorded (None for one too large to
    read)."""
    if over_parse_budget(payload, 0):
        return None, None
    message = profile.parse(payload, Role.REQUEST)
    return message.id, profile.correlation_key(message)


def _request(
    exchange: RecordedExchange, profile: Profile, comparator: Comparator, ids: Iterator[Any]
) -> Sent:
    """The request to send for ``exchange``: a fresh id, live GUIDs in its params."""
    data, ident = _request_bytes(exchange, profile, comparator, ids)
    if ident is _AS_RECORDED:
        ident, key = _key_of(profile, exchange.request)
        return Sent(data, ident, key)
    return Sent(data, ident, _key(profile, ident))


_AS_RECORDED = object()
"""`_request_bytes`' id for a request sent as it was recorded."""


def _request_bytes(
    exchange: RecordedExchange, profile: Profile, comparator: Comparator, ids: Iterator[Any]
) -> tuple[bytes, Any]:
    """The framed request and the fresh id it carries, or `_AS_RECORDED` for one sent as it
    was recorded."""
    as_recorded = profile.frame_payload(exchange.request), _AS_RECORDED
    if exchange.request_type != "request":
        return as_recorded  # malformed: as recorded
    if exchange.too_large(response=False):
        # Not parsed (a reader's budget): its bytes, a fresh id and the live GUIDs spliced in.
        ident = next(ids)
        live = with_id(exchange.request, ident, comparator.guids.to_live_map)
        return profile.frame_payload(live), ident
    try:
        obj = exchange.request_obj()
    except RecordingError:
        raise
    except ValueError:  # recorded as it came, not JSON: sent so
        return as_recorded
    if not isinstance(obj, dict):  # a request that is no object is sent as it was recorded
        return as_recorded
    ident = obj["id"] = next(ids)
    if "params" in obj:
        obj["params"] = comparator.guids.to_live(obj["params"])
    return encode_recorded(profile, obj), ident


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


def recorded_digest(payload: bytes) -> bytes:
    """What `ExchangeCheck.recorded` holds of a recorded payload."""
    return hashlib.blake2b(payload, digest_size=16).digest()

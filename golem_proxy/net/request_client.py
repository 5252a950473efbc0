"""One request and its answer on a connection of its own: the client behind ``golem-proxy
call``, ``golem-proxy resend`` and the live session's resend.

The request goes out whole on a `FramedStream`; frames come back through the profile's decoder
until the one that answers it (golem_core's `AnswerReader` rule). A reply with another id is
never taken for the answer: where the protocol's client takes the next reply as its answer
(GOLEM, Scrybe) it ends the exchange at once as `OtherAnswer`; where replies go by id (MCP) the
client reads on, and the replies it passed over are named in the error or the `Answer`.
Every answer is hostile
input: it is classified by the profile (a success, an error, or malformed with its kind) and
never decoded a second time by the caller, so bytes that are not UTF-8 or not JSON end as
`Malformed`, not as an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.answers import Answer as Reply
from golem_core.answers import UnrelatedKind
from golem_core.framing import Frame
from golem_core.messages import Message
from golem_core.profiles import Profile

from .addresses import Address
from .framed_stream import FramedStream, FramingFailure, Observe
from .listeners import connect, connect_reason

__all__ = [
    "Answer",
    "NoAnswerInTime",
    "Observe",
    "OtherAnswer",
    "RequestFailed",
    "StrayIds",
    "Unreachable",
    "request_answer",
]


class RequestFailed(Exception):
    """No answer came: ``what`` happened and ``why`` (both fit for one error line)."""

    def __init__(self, what: str, why: Optional[str] = None) -> None:
        super().__init__(f"{what} ({why})" if why else what)
        self.what = what
        self.why = why


class Unreachable(RequestFailed):
    """No connection could be made; ``why`` says why ("connection refused")."""


class NoAnswerInTime(RequestFailed):
    """Connected, but the answer did not come within the timeout; ``strays`` are the ids of
    the replies with another id that came meanwhile (where replies go by id)."""

    def __init__(self, what: str, why: Optional[str] = None, strays: tuple[Any, ...] = ()):
        super().__init__(what, why)
        self.strays = strays


class OtherAnswer(RequestFailed):
    """The server answered with another id, where the protocol's client takes the next reply
    as the answer to its request (`Profile.replies_by_id` False): ``answered_id`` is the id
    it carried."""

    def __init__(self, what: str, answered_id: Any) -> None:
        super().__init__(what)
        self.answered_id = answered_id


SHOWN_ID = 60
"""Characters of an id an error line shows."""

STRAYS_KEPT = 5
"""Ids of stray replies kept to name (they are counted all the same)."""


@dataclass(frozen=True)
class Answer:
    """The frame that answered the request, the profile's reading of it, and the seconds from
    sending the request to the answer's last byte received."""

    frame: Frame
    message: Message
    latency: float
    strays: tuple[Any, ...] = ()
    """The ids of the replies with another id read before it (where replies go by id)."""
    stray_count: int = 0
    """How many there were (`strays` names the first few)."""


@dataclass
class StrayIds:
    """The replies with another id passed over: the first `STRAYS_KEPT` ids, and how many."""

    ids: list[Any] = field(default_factory=list)
    count: int = 0

    def add(self, ident: Any) -> None:
        self.count += 1
        if len(self.ids) < STRAYS_KEPT:
            self.ids.append(ident)

    def text(self) -> str:
        return strays_text(tuple(self.ids), self.count)


def id_text(ident: Any) -> str:
    """An id as JSON writes it (a string quoted, a number bare), cut to `SHOWN_ID` characters."""
    text = json.dumps(ident, ensure_ascii=False)
    return text if len(text) <= SHOWN_ID else text[: SHOWN_ID - 1] + "…"


def strays_text(strays: tuple[Any, ...], count: int) -> str:
    """``1 answer with another id: "x"``, the ids `strays` keeps named."""
    noun = "answer" if count == 1 else "answers"
    named = ", ".join(id_text(ident) for ident in strays)
    more = f", … ({count - len(strays)} more)" if count > len(strays) else ""
    return f"{count} {noun} with another id: {named}{more}"


async def request_answer(
    upstream: Address,
    frame: bytes,
    profile: Profile,
    wanted: Any,
    *,
    timeout: float,
    observe: Optional[Observe] = None,
) -> Answer:
    """Connect to ``upstream``, send ``frame`` (a framed request whose correlation key is
    ``wanted``) and return the answer: the frame with that key, or one without a key that is
    no notification (the server's answer to a request it could not read). The server's own
    notifications and requests are skipped, and so are replies with another id where replies
    go by id (named in the `Answer`). ``timeout`` bounds the whole exchange, connecting
    included.

    Raises RequestFailed when the upstream closes first or sends bytes that are no frame of the
    profile; its kinds Unreachable when no connection could be made, NoAnswerInTime when no
    answer came within ``timeout`` seconds once connected (naming the replies with another id
    that came), OtherAnswer when the upstream answered with another id and the protocol's
    client would take it as the answer."""
    framed: Optional[FramedStream] = None
    strays = StrayIds()
    try:
        with trio.fail_after(timeout):
            try:
                stream = await connect(upstream)
            except OSError as exc:
                raise Unreachable(f"cannot reach {upstream}", connect_reason(exc)) from None
            async with stream:
                framed = FramedStream(stream, profile, observe)
                return await _exchange(framed, frame, wanted, upstream, strays)
    except trio.TooSlowError:
        if framed is None:
            raise Unreachable(
                f"cannot reach {upstream}", f"no connection within {timeout:g} s"
            ) from None
        waited = f"waited {timeout:g} s"
        what = _cut_short(framed, upstream)
        if not strays.count:
            raise NoAnswerInTime(what or f"{upstream} did not answer", waited) from None
        raise NoAnswerInTime(
            what or f"{upstream} did not answer our id {_key_text(wanted)}",
            f"{waited}; {strays.text()}",
            tuple(strays.ids),
        ) from None


def _cut_short(framed: FramedStream, upstream: Address) -> str:
    """``… answered 5 bytes of a frame, then nothing for 0.9 s`` when the timeout came with
    part of a frame in hand (a server that trickles, or stopped in the middle of its answer);
    "" when none was."""
    partial = framed.answers.decoder.buffered
    if not partial or framed.received_at is None:
        return ""
    idle = trio.current_time() - framed.received_at
    return f"{upstream} answered {partial} bytes of a frame, then nothing for {idle:.1f} s"


def _key_text(key: Any) -> str:
    """A correlation key as its id is written (`golem_core.profiles.members.id_key`: the id's
    type name and the id), or "none" for a request with no id."""
    if isinstance(key, tuple) and len(key) == 2:
        return id_text(key[1])
    return "none" if key is None else id_text(key)


async def _exchange(
    framed: FramedStream, frame: bytes, wanted: Any, upstream: Address, strays: StrayIds
) -> Answer:
    """The answer, the ids of the replies with another id passed over added to ``strays``."""
    try:
        # Timed from the start of the send: send_all may yield once the bytes are out, and
        # the answer of a fast peer can arrive before it returns.
        await framed.send(frame)
        while True:
            reading = await framed.receive_reading(wanted)
            if isinstance(reading, Reply):
                break
            if reading.wrong_id:
                answered = reading.message.id
                raise OtherAnswer(
                    f"{upstream} answered with another id ({id_text(answered)}), "
                    f"not ours ({_key_text(wanted)})",
                    answered,
                )
            if reading.kind is not UnrelatedKind.OWN:
                strays.add(reading.message.id)
        # A frame came, so a chunk did; the request's observed time is the same `sent_at`.
        assert framed.sent_at is not None and framed.received_at is not None
        latency = framed.received_at - framed.sent_at
        return Answer(reading.frame, reading.message, latency, tuple(strays.ids), strays.count)
    except FramingFailure as exc:
        raise RequestFailed(f"{upstream} sent a bad frame", exc.detail) from None
    except EOFError:
        raise RequestFailed(f"{upstream} closed the connection without answering") from None
    except (OSError, trio.BrokenResourceError) as exc:
        # trio's BrokenResourceError carries the socket's error (a reset) as its cause.
        cause = exc if isinstance(exc, OSError) else exc.__cause__
        reason = connect_reason(cause) if isinstance(cause, OSError) else str(exc)
        raise RequestFailed(f"connection to {upstream} failed", reason or None) from None

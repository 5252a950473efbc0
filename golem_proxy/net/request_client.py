"""One request and its answer on a connection of its own: the client behind ``golem-proxy
call``, ``golem-proxy resend`` and the live session's resend.

The request goes out whole on a `FramedStream`; frames come back through the profile's decoder
until the one that answers it (golem_core's `AnswerReader` rule). Every answer is hostile
input: it is classified by the profile (a success, an error, or malformed with its kind) and
never decoded a second time by the caller, so bytes that are not UTF-8 or not JSON end as
`Malformed`, not as an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import trio

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
    "RequestFailed",
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
    """Connected, but the answer did not come within the timeout."""


@dataclass(frozen=True)
class Answer:
    """The frame that answered the request, the profile's reading of it, and the seconds from
    sending the request to the answer's last byte received."""

    frame: Frame
    message: Message
    latency: float


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
    no notification (the server's answer to a request it could not read). Other frames are
    skipped. ``timeout`` bounds the whole exchange, connecting included.

    Raises RequestFailed when the upstream closes first or sends bytes that are no frame of the
    profile; its kinds Unreachable when no connection could be made, NoAnswerInTime when the
    upstream stays silent for ``timeout`` seconds once connected."""
    connected = False
    try:
        with trio.fail_after(timeout):
            try:
                stream = await connect(upstream)
            except OSError as exc:
                raise Unreachable(f"cannot reach {upstream}", connect_reason(exc)) from None
            connected = True
            async with stream:
                return await _exchange(stream, frame, profile, wanted, observe, upstream)
    except trio.TooSlowError:
        if not connected:
            raise Unreachable(
                f"cannot reach {upstream}", f"no connection within {timeout:g} s"
            ) from None
        raise NoAnswerInTime(f"{upstream} did not answer", f"waited {timeout:g} s") from None


async def _exchange(
    stream: trio.SocketStream,
    frame: bytes,
    profile: Profile,
    wanted: Any,
    observe: Optional[Observe],
    upstream: Address,
) -> Answer:
    framed = FramedStream(stream, profile, observe)
    try:
        # Timed from the start of the send: send_all may yield once the bytes are out, and
        # the answer of a fast peer can arrive before it returns.
        await framed.send(frame)
        answer = await framed.receive_answer(wanted)
        # A frame came, so a chunk did; the request's observed time is the same `sent_at`.
        assert framed.sent_at is not None and framed.received_at is not None
        return Answer(answer.frame, answer.message, framed.received_at - framed.sent_at)
    except FramingFailure as exc:
        raise RequestFailed(f"{upstream} sent a bad frame", exc.detail) from None
    except EOFError:
        raise RequestFailed(f"{upstream} closed the connection without answering") from None
    except (OSError, trio.BrokenResourceError) as exc:
        # trio's BrokenResourceError carries the socket's error (a reset) as its cause.
        cause = exc if isinstance(exc, OSError) else exc.__cause__
        reason = connect_reason(cause) if isinstance(cause, OSError) else str(exc)
        raise RequestFailed(f"connection to {upstream} failed", reason or None) from None

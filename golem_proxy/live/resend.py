"""Sending a request again: a recorded or observed request goes to a live upstream on a side
connection of its own, with a fresh id, and its answer comes back.

`resend` is the whole exchange on its own (``tui FILE --target``, tests); `Proxy.resend` runs
it as a connection of the live session, so the new exchange is decoded, logged and recorded
like any other, next to the original.

The GOLEM plugin serves one client per channel at a time (the real one as the headless one):
while the MCP server stays connected, the side connection waits for its turn, and the timeout
says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable, Optional

import trio

from golem_core.framing import EndOfStream, Frame, FrameError
from golem_core.messages import Message, Request, Role
from golem_core.outcome import Outcome
from golem_core.profiles import Profile

from ..events import Direction
from ..net.addresses import Address
from ..net.listeners import connect

__all__ = ["ResendError", "Resent", "fresh_request", "resend"]

RECV_SIZE = 65536

Observe = Callable[[Direction, bytes, float], None]
"""Told every chunk sent (c2s) and received (s2c), ``b""`` at the end of each direction."""


class ResendError(Exception):
    """The request could not be sent again, or got no answer; the message says why."""


@dataclass(frozen=True)
class Resent:
    """A request sent again and its answer. ``request`` and ``response`` are payloads."""

    upstream: Address
    original_id: Any
    request_id: Any
    method: str
    request: bytes
    response: bytes
    message: Message
    latency: float
    """Seconds from sending the request to the response's last byte received."""
    outcome: Outcome
    """What the answer means (`Profile.outcome`), a failure inside a success result included."""


def fresh_request(payload: bytes, profile: Profile, ids: Iterator[Any]) -> tuple[bytes, Request]:
    """``payload`` (a request) with the next id of ``ids`` in place of its own, every other
    member as it was. Returns the new payload and the original request. Raises ResendError
    when the payload is not a request."""
    original = profile.parse(payload, Role.REQUEST)
    if not isinstance(original, Request):
        raise ResendError("only a well-formed request can be sent again")
    obj = json.loads(payload)
    obj["id"] = next(ids)
    return profile.encode_payload(obj), original


async def resend(
    payload: bytes,
    upstream: Address,
    profile: Profile,
    *,
    ids: Optional[Iterator[Any]] = None,
    timeout: float = 30.0,
    observe: Optional[Observe] = None,
) -> Resent:
    """Send the request ``payload`` to ``upstream`` on a new connection, with a fresh id from
    ``ids`` (a new `Profile.request_ids` source by default), and return the answer. Frames
    that answer something else are skipped. Raises ResendError when the upstream cannot be
    reached, closes first, sends a bad frame, or stays silent for ``timeout`` seconds."""
    new_payload, original = fresh_request(payload, profile, ids or profile.request_ids())
    sent = profile.parse(new_payload, Role.REQUEST)
    wanted = profile.correlation_key(sent)
    frame = profile.frame_payload(new_payload)
    tell = observe or (lambda direction, data, t: None)
    try:
        with trio.fail_after(timeout):
            try:
                stream = await connect(upstream)
            except OSError as exc:
                raise ResendError(f"cannot reach {upstream}: {exc.strerror or exc}") from None
            async with stream:
                answer, latency = await _exchange(stream, frame, profile, wanted, tell)
    except trio.TooSlowError:
        raise ResendError(
            f"{upstream} did not answer within {timeout:g} s (a server that serves one client "
            "at a time, as the GOLEM plugin does per channel, answers once its client is gone)"
        ) from None
    message = profile.parse(answer.payload, Role.RESPONSE)
    return Resent(
        upstream, original.id, sent.id, original.method, new_payload, answer.payload, message,
        latency, profile.outcome(sent, message),
    )  # fmt: skip


async def _exchange(
    stream: trio.SocketStream,
    frame: bytes,
    profile: Profile,
    wanted: Any,
    tell: Observe,
) -> tuple[Frame, float]:
    decoder = profile.new_decoder()
    try:
        # Timed from the start of the send: send_all may yield once the bytes are out, and
        # the answer of a fast peer can arrive before it returns.
        sent_at = trio.current_time()
        await stream.send_all(frame)
        tell(Direction.C2S, frame, trio.current_time())
        while True:
            chunk = await stream.receive_some(RECV_SIZE)
            now = trio.current_time()
            tell(Direction.S2C, chunk, now)
            if chunk:
                decoder.receive_data(chunk)
            else:
                decoder.receive_eof()
            for event in decoder.events():
                if isinstance(event, Frame):
                    key = profile.correlation_key(profile.parse(event.payload, Role.RESPONSE))
                    if key == wanted or key is None:
                        return event, now - sent_at
                elif isinstance(event, FrameError):
                    raise ResendError(f"the upstream sent a bad frame: {event.detail}")
                elif isinstance(event, EndOfStream):
                    raise ResendError("the upstream closed the connection without answering")
    except (OSError, trio.BrokenResourceError) as exc:
        raise ResendError(f"the connection to the upstream failed: {exc}") from None

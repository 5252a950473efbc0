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
from typing import Any, Optional

from golem_core.messages import Message, Request, Role
from golem_core.outcome import Outcome
from golem_core.profiles import Profile

from ..net.addresses import Address
from ..net.request_client import (
    NoAnswerInTime,
    Observe,
    RequestFailed,
    request_answer,
    strays_text,
)

__all__ = ["ResendError", "Resent", "fresh_request", "resend"]


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
    strays: Optional[str] = None
    """The replies with another id read before the answer, in words (`request_client`), if
    any came (only where replies go by id: elsewhere such a reply fails the resend)."""


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
    ``ids`` (a new `Profile.request_ids` source by default), and return the answer, classified
    by the profile (a malformed answer is a `Malformed` message, not an error). Frames that
    answer something else are skipped (replies with another id named in ``strays``). Raises
    ResendError when the upstream cannot be reached, closes first, sends a bad frame, answers
    with another id where the protocol's client would take it as the answer, or sends no
    answer for ``timeout`` seconds."""
    new_payload, original = fresh_request(payload, profile, ids or profile.request_ids())
    sent = profile.parse(new_payload, Role.REQUEST)
    wanted = profile.correlation_key(sent)
    frame = profile.frame_payload(new_payload)
    try:
        answer = await request_answer(
            upstream, frame, profile, wanted, timeout=timeout, observe=observe
        )
    except NoAnswerInTime as exc:
        if exc.strays:  # it did answer, with other ids: say which
            raise ResendError(str(exc)) from None
        raise ResendError(
            f"{upstream} did not answer within {timeout:g} s (a server that serves one client "
            "at a time, as the GOLEM plugin does per channel, answers once its client is gone)"
        ) from None
    except RequestFailed as exc:
        raise ResendError(str(exc)) from None
    return Resent(
        upstream, original.id, sent.id, original.method, new_payload, answer.frame.payload,
        answer.message, answer.latency, profile.outcome(sent, answer.message),
        strays_text(answer.strays, answer.stray_count) if answer.stray_count else None,
    )  # fmt: skip

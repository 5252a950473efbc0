"""One connection to the live plugin per route, for `verify`: a request goes out and what the
plugin sends comes back up to the frame that answers it, by golem_core's `AnswerReader` rule.

What is not the answer is sorted as it comes: the plugin's own notifications and requests
(counted), late or repeated answers to earlier requests (their keys, for those requests'
checks), replies with an id never sent (named, where replies go by id; where the protocol's
client takes the next reply as its answer, such a reply ends the wait as the request's answer
with the wrong id). At most `MAX_SKIPPED` of them are read for one request.

Once a route's last request is answered, what the plugin still sends is read too
(`Link.read_after_last`): a second answer to that request, or a late one to an earlier
request, would otherwise go unread, and the trace would pass as if the plugin had answered
once. The link says it is done (a half-close); the plugin then closes its side at once,
as the real plugin does and the headless one, so a well-behaved plugin costs one round trip.
A plugin that keeps the connection open is read until it is quiet for `AFTER_LAST_QUIET`,
within `AFTER_LAST_WITHIN` at most.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Optional

import trio

from golem_core.answers import Answer, Unrelated, UnrelatedKind
from golem_core.framing import Frame
from golem_core.profiles import Profile

from ..net.addresses import Address
from ..net.framed_stream import FramedStream, FramingFailure
from ..net.listeners import connect, connect_reason
from ..net.request_client import StrayIds

__all__ = [
    "AFTER_LAST_QUIET",
    "AFTER_LAST_WITHIN",
    "MAX_SKIPPED",
    "Link",
    "Live",
    "Sent",
    "TargetUnreachable",
    "TooManyFrames",
]

MAX_SKIPPED = 1000
"""Frames that are not the answer read for one request before verify gives up on it (and on
the connection, whose state it no longer knows)."""

AFTER_LAST_QUIET = 0.25
"""Seconds without a frame after which a plugin that keeps the connection open past its last
answer is taken to have sent all it will. A second answer is written by the handler that
wrote the first, right after it: on loopback it comes within a millisecond, and a quarter of
a second leaves room for a busy machine's scheduling; it is what such a plugin costs a run."""

AFTER_LAST_WITHIN = 1.0
"""Seconds at most spent reading after a route's last answer, however much the plugin sends
(notifications of its own keep coming): verify must end."""


class TargetUnreachable(Exception):
    """The live plugin could not be reached at all on a route: the trace could not be
    verified, which is not the same as the plugin answering differently."""

    def __init__(self, route: str, address: Address, reason: str) -> None:
        super().__init__(f"cannot reach the plugin at {address} for route {route} ({reason})")
        self.route = route
        self.address = address
        self.reason = reason


@dataclass
class Sent:
    """A request about to go out: its framed bytes, its id and its correlation key."""

    data: bytes
    ident: Any
    key: Optional[Any]


@dataclass
class Live:
    """What the plugin sent for one request: the frame that answers it, or the reply it sent
    instead with another id, and what was skipped while waiting."""

    frame: Optional[Frame] = None
    wrong_id: Any = None
    answered_wrong: bool = False
    unasked: int = 0
    stale: list[Any] = field(default_factory=list)
    """Correlation keys of the answers to earlier requests read meanwhile."""
    strays: StrayIds = field(default_factory=StrayIds)
    """Replies to no request sent (where replies go by id: passed over)."""
    skipped: int = 0
    again: int = 0
    """Answers to the request read after its answer (`Link.read_after_last`)."""
    again_unnamed: int = 0
    """Frames read after its answer that a client takes for an answer to it though they
    name no id (a reply with none, or no JSON at all)."""
    bad_framing: Optional[str] = None
    """What was wrong with bytes after the last answer that are no frame (none: None)."""


class TooManyFrames(Exception):
    """`MAX_SKIPPED` frames came for one request and none answered it."""


class Link:
    """One connection to the live plugin for one route, reopened after the plugin closes it."""

    def __init__(self, route: str, address: Address, profile: Profile) -> None:
        self.route = route
        self.address = address
        self.profile = profile
        self.framed: Optional[FramedStream] = None
        self.reached = False

    async def round_trip(self, sent: Sent, live: Live, timeout: float) -> None:
        """Send a framed request and read up to its answer into ``live``; one reconnect on a
        closed or reset connection, as the GOLEM client does. Raises OSError or
        trio.TooSlowError, TooManyFrames, and TargetUnreachable when the plugin was never
        reached on this route."""
        for attempt in (1, 2):
            try:
                with trio.fail_after(timeout):
                    return await self._try(sent, live)
            except (trio.TooSlowError, TooManyFrames):
                # The answer may still come: drop the connection so it cannot be taken for
                # the answer to the next request.
                await self.close()
                raise
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, EOFError):
                await self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _try(self, sent: Sent, live: Live) -> None:
        if self.framed is None:
            try:
                stream = await connect(self.address)
            except OSError as exc:
                if not self.reached:
                    raise TargetUnreachable(self.route, self.address, connect_reason(exc)) from exc
                raise
            self.reached = True
            self.framed = FramedStream(stream, self.profile)
        await self.framed.send(sent.data)
        while True:
            reading = await self.framed.receive_reading(sent.key)
            if isinstance(reading, Answer):
                live.frame = reading.frame
                return
            if reading.wrong_id:  # this protocol's client would take it for the answer
                live.answered_wrong, live.wrong_id = True, reading.message.id
                return
            _skip(reading, live)
            if live.skipped >= MAX_SKIPPED:
                raise TooManyFrames

    async def read_after_last(self, last: Sent, live: Live) -> None:
        """Once ``last``, the route's last request, was answered: say the end of what is sent
        (a half-close) and read into ``live`` what the plugin still sends, until it closes,
        is quiet for `AFTER_LAST_QUIET`, `AFTER_LAST_WITHIN` has passed or `MAX_SKIPPED`
        frames came; then close. An answer to ``last`` counts in ``live.again``, what does
        not answer it is sorted as while waiting (a reply with an id never sent is passed
        over, whatever the protocol: no request waits for it). Never raises for what the
        plugin does: a connection that fails only ends the reading."""
        framed = self.framed
        if framed is None:
            return  # dropped after the last request (no answer, or too many frames)
        try:
            with trio.move_on_after(AFTER_LAST_WITHIN):
                stream = framed.stream
                if isinstance(stream, trio.abc.HalfCloseableStream):
                    # A plugin that reset the connection already fails the half-close, but
                    # what it sent before the reset is still there to read.
                    with contextlib.suppress(OSError, trio.BrokenResourceError):
                        await stream.send_eof()
                while live.skipped < MAX_SKIPPED:
                    with trio.move_on_after(AFTER_LAST_QUIET) as quiet:
                        reading = await framed.receive_reading(last.key)
                    if quiet.cancelled_caught:
                        return
                    if isinstance(reading, Answer):
                        if reading.message.id is None:  # no id, or no JSON: read as its answer
                            live.again_unnamed += 1
                        else:
                            live.again += 1
                        live.skipped += 1
                    else:
                        _skip(reading, live)
        except FramingFailure as exc:
            live.bad_framing = exc.detail
        except (OSError, EOFError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # closed (as it should) or reset: nothing more was sent
        finally:
            await self.close()

    async def close(self) -> None:
        if self.framed is not None:
            await self.framed.aclose()
            self.framed = None


def _skip(reading: Unrelated, live: Live) -> None:
    """Count in ``live`` a frame that does not answer the request waited for."""
    live.skipped += 1
    if reading.kind is UnrelatedKind.OWN:
        live.unasked += 1
    elif reading.kind is UnrelatedKind.STALE:
        live.stale.append(reading.key)
    else:
        live.strays.add(reading.message.id)

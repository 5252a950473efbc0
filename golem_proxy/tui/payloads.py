"""The live TUI's payload budget: how many bytes of frame payloads it keeps, and which it
lets go beyond that.

A live session runs for an afternoon; GOLEM viewport captures answer with 1 to 16 MiB of base64
each, and the flows the TUI keeps would hold every one of them. So the model hands each batch's
flows to a `PayloadBudget`, which keeps the payloads of the newest large frames up to
``keep`` bytes and releases the oldest beyond it: the frame the flow holds becomes a copy
whose payload is a `ReleasedPayload`, and the published event (which the recorder may not
have written yet) is left as it is. The row stays whole: method, outcome, sizes, timing, the
message the tap parsed (long strings already elided above 1 MiB). Only the bytes go; the
recording holds them.

Frames under `RELEASE_OVER` are kept whatever the budget: they are the table's substance, and
each costs about what its row does. Compact frames (a recording's, and a live session's under
`RELEASE_OVER`: `golem_proxy.tui.compact`) are never released: their message is parsed again
from the payload on demand.

When the session records, a large payload the recording holds verbatim is not kept at all:
the recorder noted where it lies in the file (`golem_proxy.recording.payload_places`), and the
frame comes to the TUI already without it, its marker carrying that place
(`LeftToRecording`). Readers that need the bytes (`payload_of`: the detail pane's hex dump,
copying and sending a request again, the difference with an answer sent again, writing the
view) read them back from the recording then, checked to be the very line written. A live
TUI following a session of viewport captures keeps none of them in memory (docs/architecture.md,
"The live TUI's payload budget": its peak RSS about halved in `bench_proxy --tui`). Search and
filters read such a frame as they read a released one: the message the row kept, its bulk
(blobs, long arrays of numbers) elided (`golem_proxy.tui.skeleton`).

The decision is made once, here, and carried by the frame; readers ask `released()`, take the
bytes with `payload_of()`, and say `release_note()` instead of showing an empty body.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Mapping
from typing import Optional

from golem_core.messages import Malformed
from golem_core.profiles import Profile

from ..analysis.flows import Flow
from ..events import Event, ExchangeCompleted, FrameSeen
from ..recording.payload_places import (
    LINE_END,
    LONGEST_LINE_START,
    MOST_PLACES,
    WRITTEN_WAIT,
    PayloadNotReadBack,
    PayloadPlace,
    PayloadPlaces,
    PlaceKey,
    place_key,
    read_back,
)
from ..released_payload import ReleasedPayload
from ..terminal import format_size
from .compact import is_compact
from .skeleton import without_bulk

__all__ = [
    "DEFAULT_KEEP",
    "RELEASE_OVER",
    "LeftInFile",
    "LeftToRecording",
    "PayloadBudget",
    "PayloadReleased",
    "in_recording",
    "payload_of",
    "release_note",
    "released",
    "stands_for_payload",
    "with_payload",
]

DEFAULT_KEEP = 256 * 1024 * 1024
"""Payload bytes of large frames the live TUI keeps: about the last sixteen 16 MiB captures, or a
few hundred 1 MiB ones, for the detail pane, `w`, `r` and `D` to read whole. The observing
process then stays within a few hundred MiB all afternoon, where it grew by every capture."""
MOST_WHOLE_COPIES = 64
"""Copies that keep their payloads (`LeftToRecording` without a place) held for the exchange
that will name them: a request never answered is held until 64 newer ones push it out, at
most 64 large payloads. An exchange that comes after its request's copy went names the
request as published; the flow keeps the copy it already holds."""
RELEASE_OVER = 64 * 1024
"""Frames with payloads this large or larger may be released. A GOLEM call or answer is a few
hundred bytes; 64 KiB is where the tap starts treating a string as a blob (the live
elision's threshold)."""


def released(frame: Optional[FrameSeen]) -> Optional[ReleasedPayload]:
    """The marker standing in ``frame``'s payload when the TUI released it, else None (compare
    with None: the marker is an empty bytes, false as a bool)."""
    if frame is None:
        return None
    payload = frame.payload
    return payload if isinstance(payload, ReleasedPayload) else None


def in_recording(frame: Optional[FrameSeen]) -> Optional[PayloadPlace]:
    """Where the recording holds ``frame``'s payload, when the TUI read it from there rather
    than keeping it (None: kept, released over the budget, or no frame)."""
    marker = released(frame)
    return marker.place if marker is not None else None


def payload_of(
    frame: FrameSeen, *, first: Optional[int] = None, wait: float = WRITTEN_WAIT
) -> bytes:
    """``frame``'s payload (its ``first`` bytes only, when given): kept, or read back from
    the recording, waiting at most ``wait`` seconds for the recorder to write it. Raises
    PayloadReleased when the bytes are not here (released over the budget, or the reading
    back failed: the message says which)."""
    marker = released(frame)
    if marker is None:
        return frame.payload if first is None else frame.payload[:first]
    if marker.place is None:
        raise PayloadReleased(frame)
    try:
        return read_back(marker.place, wait, first)
    except PayloadNotReadBack as exc:
        raise PayloadReleased(frame, f"payload not read back: {exc}") from None


def with_payload(event: Event) -> Event:
    """``event``, a frame the recording holds given its payload back (`payload_of`); other
    events as they are. Raises PayloadReleased."""
    if isinstance(event, FrameSeen) and in_recording(event) is not None:
        return dataclasses.replace(event, payload=payload_of(event))
    return event


def release_note(frame: Optional[FrameSeen]) -> Optional[str]:
    """What a view says instead of a released payload (None: the payload is kept, or read
    back from the recording when it is needed): its size, the budget, and where the bytes
    are now."""
    marker = released(frame)
    if frame is None or marker is None or marker.place is not None:
        return None
    where = (
        f"the recording holds it ({marker.recording})"
        if marker.recording
        else "it was not recorded (run with --record to keep it)"
    )
    return (
        f"payload released from memory ({format_size(frame.size)}, over the TUI's "
        f"{format_size(marker.keep)} budget); {where}"
    )


def stands_for_payload(frame: FrameSeen) -> bool:
    """Whether ``frame``'s message holds its whole payload parsed (nothing elided, the JSON
    decoded), so that it says what the payload said even once the payload is released."""
    message = frame.message
    return not frame.elided and not (isinstance(message, Malformed) and message.obj is None)


class PayloadReleased(LookupError):
    """What is asked for needs a payload that is not here; the message is its
    `release_note`, or ``why`` (a reading back that failed)."""

    def __init__(self, frame: FrameSeen, why: Optional[str] = None) -> None:
        super().__init__(why or release_note(frame) or "payload released from memory")


class PayloadBudget:
    """Keeps at most ``keep`` bytes of large payloads (`RELEASE_OVER` and up) in the flows it
    is shown, releasing the oldest beyond that. ``recording``: where the session records,
    which is what a released payload's note points to. (Frames whose payloads the recording
    holds come without them, `LeftToRecording`: none of those is counted.)"""

    def __init__(
        self,
        keep: int = DEFAULT_KEEP,
        recording: Optional[str] = None,
        *,
        release_over: int = RELEASE_OVER,
    ) -> None:
        self.keep = keep
        self.release_over = release_over
        self.marker = ReleasedPayload(keep, recording)
        self.kept = 0
        """Payload bytes of the large frames kept now."""
        self.released = 0
        """Frames whose payloads were released (gone from the TUI)."""
        self.released_bytes = 0
        # The large frames kept, oldest first, as (flow, is its response); and the ids of
        # those frames, so that a flow changed again (its answer came) is not counted twice.
        self._kept: deque[tuple[Flow, bool]] = deque()
        self._counted: set[int] = set()

    def note(self, flow: Flow, profile_for: Optional[Callable[[str], Profile]] = None) -> None:
        """Count the large frames ``flow`` holds that are not counted yet (a new flow, a
        request answered since). Given ``profile_for`` (a route's profile), each such frame
        becomes a copy whose message has its bulk elided (`without_bulk`): the budget counts
        the payload's bytes, and a message holding 500 KB of numbers parsed costs four times
        that, uncounted. The payload, kept, is what the views read whole."""
        for is_response in (False, True):
            frame = flow.response if is_response else flow.request
            if (
                frame is None
                or len(frame.payload) < self.release_over
                or id(frame) in self._counted
                or is_compact(frame)
            ):
                continue
            if profile_for is not None and not frame.redacted:
                # A redacted frame keeps its message whole, as the tap made it: a view is
                # written (`w`) with a redacted frame's message, not its payload.
                message, elided = without_bulk(frame, profile_for(frame.route))
                if message is not frame.message:
                    # A copy: the published frame may still be on its way to the recorder.
                    frame = dataclasses.replace(frame, message=message, elided=elided)
                    if is_response:
                        flow.response = frame
                    else:
                        flow.request = frame
            self._counted.add(id(frame))
            self._kept.append((flow, is_response))
            self.kept += len(frame.payload)

    def let_go(self, flows: set[int]) -> None:
        """Stop counting the large frames of the flows whose ids are ``flows``: the model
        let them go (`golem_proxy.tui.flow_bound`), and their bytes with them."""
        kept: deque[tuple[Flow, bool]] = deque()
        for flow, is_response in self._kept:
            if id(flow) not in flows:
                kept.append((flow, is_response))
                continue
            frame = flow.response if is_response else flow.request
            if frame is not None and id(frame) in self._counted:
                self._counted.discard(id(frame))
                self.kept -= len(frame.payload)
        self._kept = kept

    def enforce(self, profile_for: Optional[Callable[[str], Profile]] = None) -> int:
        """Release the oldest large payloads until at most ``keep`` bytes are kept. Returns
        how many were released now. Given ``profile_for`` (a route's profile), a released
        frame's message drops its bulk too (blobs, long arrays of numbers: `without_bulk`),
        else it keeps it."""
        count = 0
        while self.kept > self.keep and self._kept:
            flow, is_response = self._kept.popleft()
            frame = flow.response if is_response else flow.request
            if frame is None or id(frame) not in self._counted:  # pragma: no cover - defensive
                continue
            self._counted.discard(id(frame))
            size = len(frame.payload)
            self.kept -= size
            # A copy: the published frame may still be on its way to the recorder.
            message, elided = frame.message, frame.elided
            if profile_for is not None:
                # A redacted one's too: released, it is left out of a view written (`w`).
                message, elided = without_bulk(frame, profile_for(frame.route))
            kept = dataclasses.replace(frame, payload=self.marker, message=message, elided=elided)
            if is_response:
                flow.response = kept
            else:
                flow.request = kept
            self.released += 1
            self.released_bytes += size
            count += 1
        return count


class LeftToRecording:
    """Takes the large payloads the recording holds out of the events a live TUI is given, as
    they are published (`bridge.hub_sink`, on the session's thread): each such frame goes on
    as a copy whose payload is a `ReleasedPayload` carrying its place (`payload_places`), and
    the exchange that names it names that copy. The events waiting for the TUI's next batch
    (up to half a second of them while events stream, `pace.py`) then hold no payload: held
    there, sixteen answers of 16 MiB a batch had the session's thread fault ~8 MiB of fresh
    heap in for every answer (~10 ms of its CPU; ~4.9 us a page on this machine). The
    recorder is the hub's first sink, so a frame's place is noted before it comes here.

    Given the session's ``profile`` (and ``route_profiles``, the routes' own), such a frame's
    message is typed again with its bulk elided (`without_bulk`): the blobs the tap left
    whole (a frame under 1 MiB), and long arrays of numbers at any size. A live session of
    300 KB captures kept each blob in its message once the bytes had gone, and one of 500 KB
    mesh answers each answer's numbers, four times their text's size.

    A large frame the recording does not hold (no ``places``: the session does not record; or
    none noted for it) keeps its payload and goes on with its bulk elided all the same, here
    rather than on the screen's thread, so that the events waiting for the TUI's next batch
    do not hold the numbers parsed (without a recording, 300 answers of 500 KB of numbers
    peaked at 408 MiB when the TUI elided them as it counted them). A redacted one goes on as
    it is: a view writes a redacted frame from its message."""

    def __init__(
        self,
        places: Optional[PayloadPlaces],
        profile: Optional[Profile] = None,
        route_profiles: Optional[Mapping[str, Profile]] = None,
        *,
        release_over: int = RELEASE_OVER,
    ) -> None:
        self.places = places
        self.profile = profile
        self.route_profiles = route_profiles or {}
        self.release_over = release_over
        self.count = 0
        """Frames given without their payloads."""
        self.kept_whole = 0
        """Large frames given with their payloads and their bulk elided."""
        self._copies: dict[PlaceKey, FrameSeen] = {}
        """The copies without payloads whose exchange has not come yet (a request waiting
        for its answer), oldest first, at most `MOST_PLACES`."""
        self._whole_copies: dict[PlaceKey, FrameSeen] = {}
        """The same for copies that keep their payloads, at most `MOST_WHOLE_COPIES`: a
        request never answered keeps its copy here until newer ones push it out."""

    def __call__(self, event: Event) -> Event:
        if isinstance(event, FrameSeen):
            return self._frame(event)
        if isinstance(event, ExchangeCompleted) and (self._copies or self._whole_copies):
            request = self._copy_of(event.request)
            response = self._copy_of(event.response)
            if request is not event.request or response is not event.response:
                return dataclasses.replace(event, request=request, response=response)
        return event

    def _copy_of(self, frame: FrameSeen) -> FrameSeen:
        key = place_key(frame)
        return self._copies.pop(key, None) or self._whole_copies.pop(key, frame)

    def _frame(self, frame: FrameSeen) -> FrameSeen:
        payload = frame.payload
        if len(payload) < self.release_over or isinstance(payload, ReleasedPayload):
            return frame
        key = place_key(frame)
        place = self.places.take(key) if self.places is not None else None
        if place is not None and place.size != len(payload):  # not this frame's
            place = None
        message, elided = frame.message, frame.elided
        if self.profile is not None and (place is not None or not frame.redacted):
            profile = self.route_profiles.get(frame.route, self.profile)
            message, elided = without_bulk(frame, profile)
        if place is not None:
            marker = ReleasedPayload(0, place.path, place)
            copy = dataclasses.replace(frame, payload=marker, message=message, elided=elided)
            self.count += 1
            copies = self._copies
        elif message is not frame.message:
            copy = dataclasses.replace(frame, message=message, elided=elided)
            self.kept_whole += 1
            copies = self._whole_copies
        else:
            return frame
        if frame.expects_answer or frame.answers is not None:  # an exchange will name it
            copies[key] = copy
            while len(copies) > MOST_PLACES:
                del copies[next(iter(copies))]
            while copies is self._whole_copies and len(copies) > MOST_WHOLE_COPIES:
                del copies[next(iter(copies))]
        return copy


class LeftInFile:
    """Leaves the large payloads of a recording a view reads in the file
    (`golem_proxy.recording.payload_places.LeavesPayloads`, given to its reader): a frame of
    `RELEASE_OVER` bytes or more whose line holds its payload verbatim comes as a copy whose
    payload is a `ReleasedPayload` carrying its place in the file, and whose message is typed
    again with its bulk elided (`without_bulk`: its blobs, as the live tap types a frame over
    1 MiB, and its long arrays of numbers), which the message would otherwise hold again. One
    with no bulk is left whole: its view keeps it compact (its bytes, its message parsed again
    when read), which costs less than its message kept parsed. `tui FILE` and a TUI taking
    over a session then keep neither the bytes nor the parsed bulk of a recording's viewport
    captures and meshes; `payload_of` reads them back, as a live session's."""

    def __init__(
        self, path: str, descriptor: Optional[int] = None, *, smallest: int = RELEASE_OVER
    ) -> None:
        """``descriptor``: the file as the view opened it, to read back from (`PayloadPlaces.
        in_file`)."""
        self.places = PayloadPlaces.in_file(path, descriptor)
        self.smallest = smallest
        self.count = 0
        """Frames left in the file."""

    def __call__(
        self,
        frame: FrameSeen,
        profile: Profile,
        buffer: bytes,
        line_start: int,
        payload_end: int,
        offset: int,
    ) -> FrameSeen:
        payload = frame.payload
        payload_at = payload_end - len(payload)
        if (
            isinstance(payload, ReleasedPayload)
            or not 0 <= line_start < payload_at <= line_start + LONGEST_LINE_START
            or not buffer.startswith(LINE_END, payload_end)
            or not buffer.startswith(payload, payload_at)  # redacted: encoded again
        ):
            return frame
        message, elided = without_bulk(frame, profile)
        if not elided:
            # No bulk to take out of its message (long text, many names): whole, the view
            # makes it compact, its message parsed again from the payload when read.
            return frame
        start = buffer[line_start:payload_at]
        place = PayloadPlace(self.places, offset + payload_at, len(payload), start)
        self.count += 1
        marker = ReleasedPayload(0, self.places.path, place)
        return dataclasses.replace(frame, payload=marker, message=message, elided=elided)

"""What a live viewer keeps of a payload it let go: `ReleasedPayload`, which stands in a
frame's ``payload`` and says what is missing.

Apart from events.py because it is no event: the proxy never publishes one; a viewer puts it
in the copies of frames it keeps (`golem_proxy.tui.payloads`), and every reader of those
copies (the TUI, the filters) tells it apart.
"""

from __future__ import annotations

from typing import Optional

from .recording.payload_places import PayloadPlace

__all__ = ["ReleasedPayload"]


class ReleasedPayload(bytes):
    """What a live viewer keeps of a large frame's payload once it let the bytes go to stay
    within its memory budget (`golem_proxy.tui.payloads`): no bytes at all, but it says so.
    It stands in the ``payload`` of a copy of the frame the viewer keeps, never in an event
    as published; every reader of a viewer's payloads tells it apart from an empty payload
    (``isinstance(frame.payload, ReleasedPayload)``) and says what is missing.

    One instance serves every frame a viewer released over its budget: ``keep`` is the
    viewer's budget in bytes, ``recording`` where the session records (None: it does not, the
    bytes are gone). A frame whose payload the recording holds verbatim gets one of its own,
    with ``place``: where to read the bytes back (`golem_proxy.recording.payload_places`)."""

    keep: int
    recording: Optional[str]
    place: Optional[PayloadPlace]

    def __new__(
        cls, keep: int, recording: Optional[str], place: Optional[PayloadPlace] = None
    ) -> ReleasedPayload:
        released = super().__new__(cls, b"")
        released.keep = keep
        released.recording = recording
        released.place = place
        return released

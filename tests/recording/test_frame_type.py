"""A frame line's ``type`` names the kind of message, subclasses included (the TUI's compact
messages extend the core's, and a view saved from the TUI is written with them)."""

from __future__ import annotations

from golem_core.messages import Role
from golem_core.profiles import GOLEM
from golem_proxy.events import Direction, FrameSeen
from golem_proxy.recording.frame_lines import frame_type
from golem_proxy.tui.compact import Compactor

PAYLOADS = {
    "request": (Direction.C2S, b'{"id": "1", "method": "ping", "params": {}}'),
    "response": (Direction.S2C, b'{"id": "1", "result": {}, "error": null}'),
    "error": (Direction.S2C, b'{"id": null, "result": null, "error": {"code": 1, "message": "x"}}'),
    "malformed": (Direction.C2S, b'{"id": "1", "method": '),
}


def test_a_compact_message_has_the_type_of_the_message_it_extends() -> None:
    compactor = Compactor(GOLEM, None)
    for name, (direction, payload) in PAYLOADS.items():
        role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
        message = GOLEM.parse(payload, role)
        frame = FrameSeen(
            conn=1, route="main", direction=direction, index=0, t=0.0, size=len(payload),
            payload=payload, message=message,
        )  # fmt: skip
        assert frame_type(frame.message) == name
        compactor.compact(frame)
        assert (type(frame.message) is not type(message)) == (name != "malformed")
        assert frame_type(frame.message) == name

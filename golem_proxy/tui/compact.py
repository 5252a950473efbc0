"""Compact frames: what the TUI keeps of a frame read from a recording.

A recording of 500,000 exchanges is a million frames, and each parsed message is a tree of
dicts several times the size of its payload. The table shows none of it: a row needs the
method and the outcome, which the flow already carries. So a frame the TUI keeps holds
its payload bytes and a *compact* message: the same class (`Request`, `Response`, …), with
its method, whose ``id``, ``obj``, ``params`` and ``result`` are parsed again from the
payload when something reads them (the detail pane, a filter over bodies, copy-as-call,
export). An id is read on demand too: a GOLEM id is a UUID string, 85 bytes a flow where
nothing but the detail pane and an export read it. The payload is parsed by the profile
and with the role the recording's reader used, so what is read back is equal to what was
dropped.

A live session's flows are compacted the same way once settled, with the profile each route's
tap used (the live sources' ``route_profiles``): 100,000 small GOLEM flows cost 204 MiB
compact where they cost 351 MiB as the tap made them. Only frames whose payload is their
whole message are compacted: a live frame with long strings elided has a message that
differs from its payload, a frame whose payload the live TUI released has no bytes to parse
again, and a malformed one is kept as it came (rare, and its detail says what is wrong with
it). A live frame large enough for the payload budget to release (`golem_proxy.tui.payloads`)
is left whole too: a compact message is parsed from its payload, which must then stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

from golem_core.messages import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
    Role,
)
from golem_core.profiles import Profile

from ..events import Direction, FrameSeen
from ..released_payload import ReleasedPayload

__all__ = [
    "CompactErrorResponse",
    "CompactNotification",
    "CompactRequest",
    "CompactResponse",
    "Compactor",
    "Reparser",
    "compactor_for",
    "is_compact",
]


class Reparser:
    """Parses payloads of one profile and one direction again, remembering the last one: a
    filter or the detail pane reads several members of the same message in a row."""

    __slots__ = ("_last", "profile", "role")

    def __init__(self, profile: Profile, role: Role) -> None:
        self.profile = profile
        self.role = role
        # One (payload, message) tuple, replaced whole: read from the UI thread and from a
        # thread writing the view out, it is never seen half updated.
        self._last: tuple[bytes, Message] = (b"", Response(None, None, {}))

    def full(self, payload: bytes) -> Message:
        """The message ``payload`` parses to, as the reader parsed it."""
        last = self._last
        if last[0] is payload:
            return last[1]
        message = self.profile.parse(payload, self.role)
        self._last = (payload, message)
        return message


def _full(message: Any) -> Any:
    cls = type(message)
    reparser: Reparser = cls.reparser_at.__get__(message, cls)
    return reparser.full(cls.payload_at.__get__(message, cls))


def _parsed(member: str) -> Any:
    """A property reading ``member`` of the message parsed again from the payload."""
    return property(lambda message: getattr(_full(message), member))


# A compact message keeps its payload and its reparser in two slots of its class that
# properties stand in for (``obj``, and ``params`` or ``result``): no slot is added and none
# is left empty, 16 bytes a message.


def _compact_class(base: type, second: str, kept: str) -> Any:
    """The compact subclass of ``base``, which keeps ``kept``; ``id``, ``obj`` and ``second``
    (whose slots hold the payload and the reparser) are parsed again on demand (the ``id``
    slot is left empty)."""
    namespace = {
        "__doc__": f"A `{base.__name__}` that keeps {kept}; ``id``, ``{second}`` and ``obj`` "
        "are parsed again on demand.",
        "__slots__": (),
        "__module__": __name__,
        "payload_at": vars(base)["obj"],
        "reparser_at": vars(base)[second],
        second: _parsed(second),
        "obj": _parsed("obj"),
    }
    if "id" in vars(base).get("__slots__", ()):  # a notification has none
        namespace["id"] = _parsed("id")
    return type(f"Compact{base.__name__}", (base,), namespace)


CompactRequest = _compact_class(Request, "params", "its method")
CompactNotification = _compact_class(Notification, "params", "its method")
CompactResponse = _compact_class(Response, "result", "only its payload")


class CompactErrorResponse(ErrorResponse):
    """An `ErrorResponse` that keeps its id and error; ``obj`` is parsed on demand (one slot
    more: an error response has no second member to stand in for)."""

    __slots__ = ("_reparser",)
    payload_at: Any = vars(ErrorResponse)["obj"]
    reparser_at: Any = None  # set below, once the class has its slot

    obj = _parsed("obj")


CompactErrorResponse.reparser_at = vars(CompactErrorResponse)["_reparser"]

Setter = Callable[[Any, Any], None]


def _slot_setter(cls: type, name: str) -> Setter:
    # The slot's own setter: the message classes are frozen dataclasses, whose __setattr__
    # refuses, and object.__setattr__ is slower on this path (a million frames).
    for klass in cls.__mro__:
        descriptor = vars(klass).get(name)
        # A slot's member descriptor, not a compact class's property over it.
        if hasattr(descriptor, "__set__") and not isinstance(descriptor, property):
            return descriptor.__set__  # type: ignore[union-attr,no-any-return]
    raise TypeError(f"{cls.__name__} has no slot {name}")  # pragma: no cover


# For each message class: its compact class and the members it keeps.
_KEPT: dict[type, tuple[Any, tuple[str, ...]]] = {
    Request: (CompactRequest, ("method",)),
    Notification: (CompactNotification, ("method",)),
    Response: (CompactResponse, ()),
    ErrorResponse: (CompactErrorResponse, ("id", "error")),
}
_PLAN = {
    full: (
        compact,
        names,
        tuple(_slot_setter(compact, name) for name in names),
        compact.payload_at.__set__,
        compact.reparser_at.__set__,
    )
    for full, (compact, names) in _KEPT.items()
}
_COMPACT_CLASSES = tuple(compact for compact, _ in _KEPT.values())
_set_frame_message = _slot_setter(FrameSeen, "message")
_set_frame_index = _slot_setter(FrameSeen, "index")
_set_frame_answers = _slot_setter(FrameSeen, "answers")
_new = object.__new__


def is_compact(frame: FrameSeen) -> bool:
    """The frame's message is a compact one (parsed again on demand)."""
    return isinstance(frame.message, _COMPACT_CLASSES)


class Compactor:
    """Makes frames compact, parsing their payloads again with the profile of
    their route (``route_profiles``, else ``profile``) and the role their direction implies
    (as `golem_proxy.recording.reader` and the live tap parse them)."""

    def __init__(
        self,
        profile: Profile,
        route_profiles: Optional[Mapping[str, Profile]],
        *,
        compact_under: Optional[int] = None,
    ) -> None:
        """``compact_under``: frames whose payload is this large or larger are left whole
        (None: any size is compacted)."""
        self.profile = profile
        self.route_profiles = dict(route_profiles or {})
        self.compact_under = compact_under
        # By direction, then route: an Enum's hash is computed in Python, a str's is cached.
        self._reparsers: dict[bool, dict[str, Reparser]] = {True: {}, False: {}}

    def _reparser(self, route: str, direction: Direction) -> Reparser:
        asked = direction is Direction.C2S
        by_route = self._reparsers[asked]
        found = by_route.get(route)
        if found is None:
            profile = self.route_profiles.get(route, self.profile)
            found = by_route[route] = Reparser(profile, Role.REQUEST if asked else Role.RESPONSE)
        return found

    def compact(self, frame: FrameSeen) -> None:
        """Give ``frame`` a compact message, in place, unless it cannot be compacted
        (elided, malformed, at least ``compact_under`` bytes) or already is.

        In place, although events are frozen: the compact message is equal to the one it
        replaces, member for member, and nothing else reads it any more. A recording's
        reader hands each frame over and has no further use for it once its exchange is
        read; a live session's recorder has encoded the frame before the TUI is handed it
        (`EventHub.attach_sink` with ``first``), and the tap pairs answers with the message
        it parsed, not with the frame's. A copy would cost a second frame and its
        construction on every flow."""
        message = frame.message
        plan = _PLAN.get(type(message))  # None for a compact class too
        payload = frame.payload
        if (
            plan is None
            or frame.elided
            or isinstance(payload, ReleasedPayload)
            or (self.compact_under is not None and len(payload) >= self.compact_under)
        ):
            # A released payload (`golem_proxy.tui.payloads`) holds no bytes to parse again.
            return
        cls, names, setters, set_payload, set_reparser = plan
        compact: Message = _new(cls)
        for name, setter in zip(names, setters):
            setter(compact, getattr(message, name))
        set_payload(compact, frame.payload)
        set_reparser(compact, self._reparser(frame.route, frame.direction))
        _set_frame_message(frame, compact)

    def compact_flow(self, request: Optional[FrameSeen], response: Optional[FrameSeen]) -> None:
        """`compact` a settled flow's frames; the response's frame index and the index it
        answers become the request's own object when they are equal (one int a flow, not
        three)."""
        if request is not None:
            self.compact(request)
        if response is None:
            return
        self.compact(response)
        if request is None:
            return
        index = response.index
        if index is not request.index and index == request.index:
            _set_frame_index(response, request.index)
        answers = response.answers
        if answers is not request.index and answers == request.index:
            _set_frame_answers(response, request.index)


def compactor_for(
    source: object, profile: Profile, release_over: Optional[int] = None
) -> Optional[Compactor]:
    """A compactor for the frames of ``source`` when it says how each route's frames were
    parsed (``route_profiles``: a recording, a live session), else None: its frames are
    kept as they came. ``release_over``: the size from which a payload budget may release a
    payload (a live session's), whose frames are then left whole."""
    route_profiles: Optional[Mapping[str, Profile]] = getattr(source, "route_profiles", None)
    if route_profiles is None:
        return None
    return Compactor(profile, route_profiles, compact_under=release_over)

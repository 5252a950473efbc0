"""A live plugin's answers redacted as the recording they are checked against was: a trace
recorded with ``--redact`` names its rules in its header, and its answers hold ``«redacted»``
where those rules found a value. `verify` compares a live answer only once the same rules
(and the same scrub of the values they replaced before on the connection: `FrameRedaction`)
have gone over it, so a redacted path is no difference, and ``verify --update`` writes
nothing into the recording that the rules keep out of it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from golem_core.messages import Role
from golem_core.profiles import Profile

from ..live.frame_redaction import FrameRedaction
from ..live.redact import Redactor

__all__ = ["LiveRedaction"]


class LiveRedaction:
    """The recording's rules, and the values they replaced on each route's live connection
    (verify keeps one per route)."""

    def __init__(self, profile: Profile, rules: Iterable[str]) -> None:
        self.profile = profile
        self.rules = tuple(rules)
        self.redactor: Optional[Redactor] = Redactor(list(self.rules)) if self.rules else None
        self._routes: dict[str, FrameRedaction] = {}

    def __bool__(self) -> bool:
        return self.redactor is not None

    def answer(
        self, route: str, payload: bytes, method: Optional[str]
    ) -> tuple[bytes, tuple[str, ...]]:
        """``payload``, a live answer to ``method`` on ``route``, as the recording would hold
        it, and the rules that replaced something in it (``echo`` among them)."""
        if self.redactor is None:
            return payload, ()
        redaction = self._routes.get(route)
        if redaction is None:
            redaction = self._routes[route] = FrameRedaction(self.profile, self.redactor)
        message = self.profile.parse(payload, Role.RESPONSE)
        redacted = redaction.frame(payload, message, Role.RESPONSE, method)
        return redacted.payload, redacted.redacted

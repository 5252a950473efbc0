"""One connection's redaction of whole frames (``--redact``): the rules applied to a frame's
message, the string values they replaced remembered (the session's `Echoes`, kept by its
`Redactor`) and replaced wherever they recur in later frames, of this connection or another.

The tap redacts what it publishes with one (`tap_frames`). The intercept engine holds frames
in the forwarding process, before any tap sees them (and the tap may run in an observing
process of its own), so it redacts with one of its own, fed with the same frames, what it
shows and records of a held frame (`intercept`): the same rules, the same scrub.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from golem_core.messages import Malformed, MalformedKind, Message, Role
from golem_core.profiles import Profile

from .redact import REDACTED, Echoes, Redactor, worth_chasing
from .redact_names import kept_from_echoes, spared_by_rules
from .tap_parse import encode_redacted

__all__ = ["FrameRedaction", "RedactedFrame", "of_any_method", "values_replaced"]


@dataclass(frozen=True)
class RedactedFrame:
    """A frame as redaction leaves it: its ``payload`` and ``message``, the rules that
    replaced something in it (and ``echo`` when a value redacted before was found there), and
    what of its strings the message still leaves out (``elided``: none once it was
    redacted)."""

    payload: bytes
    message: Message
    redacted: tuple[str, ...] = ()
    elided: int = 0
    learned: tuple[str, ...] = ()
    """The string values the rules replaced in the frame as it came, which the connection's
    redaction now hides where they come back (`worth_chasing`): what the tap is handed of a
    frame not recorded as it came (`Connection.unrecorded`)."""


class FrameRedaction:
    """The redaction rules of a session, applied to one connection's frames."""

    def __init__(self, profile: Profile, redactor: Optional[Redactor]) -> None:
        self.profile = profile
        self.redactor = redactor
        self.echoes = redactor.echoes if redactor is not None else Echoes()
        """Values the session's redaction replaced, hidden where they come back."""

    def __bool__(self) -> bool:
        return bool(self.redactor)

    def frame(
        self,
        payload: bytes,
        message: Message,
        role: Role,
        method: Optional[str],
        elided: int = 0,
    ) -> RedactedFrame:
        """``payload`` (typed as ``message``, of ``role``, with ``elided`` characters left
        out of it) redacted by the rules for ``method`` (a response's: its request's) and
        scrubbed of the values redacted before; the values the rules replace are remembered
        for the frames after it. Without rules, or when nothing was replaced, the frame comes
        back as it is."""
        if not self.redactor:
            return RedactedFrame(payload, message, (), elided)
        echoes = self.echoes
        redacted: tuple[str, ...] = ()
        # A malformed message is redacted too where it was JSON (a GOLEM request whose id is
        # a float, or missing, carried its secrets to the disk): only bytes that decode to
        # nothing cannot be.
        if message.obj is not None:
            full = self.profile.parse(payload, role) if elided else message
            replaced: list[str] = []
            spared = spared_by_rules(full.obj, method, self.profile.tool_layer)
            unknown = of_any_method(message, role, method)
            obj, redacted = self.redactor.apply(
                full.obj, method, replaced, spared, any_method=unknown
            )
            learned = worth_chasing(replaced)
            echoes.remember(learned)
            if echoes and echoes.might_be_in(payload):
                obj, echoed = echoes.scrub(obj, kept_from_echoes(obj, spared))
                if echoed:
                    redacted = (*redacted, "echo")
            if redacted:
                # Typed from the redacted object, not its bytes parsed again: the same message
                # (JSON of it reads back as it is), without holding a second parse of the frame.
                return RedactedFrame(
                    encode_redacted(self.profile, obj),
                    self.profile.parse_decoded(obj, role),
                    redacted,
                    learned=learned,
                )
        elif echoes and isinstance(message, Malformed):
            # Bytes that decode to nothing: no rule finds its path in them, but a value
            # redacted before is still found where its UTF-8 recurs (not where escaped).
            scrubbed = echoes.scrub_bytes(payload)
            if scrubbed is not payload:
                payload, message = self._still_malformed(scrubbed, message, role)
                return RedactedFrame(payload, message, ("echo",))
        return RedactedFrame(payload, message, (), elided)

    def _still_malformed(
        self, scrubbed: bytes, message: Malformed, role: Role
    ) -> tuple[bytes, Message]:
        """Bytes that decoded to nothing, an echo scrubbed out of them, and their message: as
        malformed as they were, or, where the scrub mended them (the value carried the
        fault, an unescaped quote, say), nothing of them but the placeholder, of the same
        kind (they would read as a request that never crossed the wire)."""
        retyped = self.profile.parse(scrubbed, role)
        if isinstance(retyped, Malformed) and retyped.kind is message.kind:
            return scrubbed, retyped
        placeholder = REDACTED.encode()
        if message.kind is MalformedKind.INVALID_UTF8:
            placeholder = b"\xff" + placeholder
        return placeholder, self.profile.parse(placeholder, role)


def values_replaced(
    profile: Profile,
    redactor: Redactor,
    payload: bytes,
    message: Message,
    role: Role,
    method: Optional[str],
    elided: int = 0,
) -> tuple[str, ...]:
    """The string values ``redactor``'s rules for ``method`` replace in ``payload`` (typed
    ``message``, of ``role``, with ``elided`` characters left out of it), as
    `FrameRedaction.frame` remembers them (`RedactedFrame.learned`), found without redacting
    the frame. What was elided is parsed whole only where a rule finds its path in what was
    not: a long blob no rule names costs nothing more."""
    if message.obj is None:
        return ()
    unknown = of_any_method(message, role, method)
    if elided:
        spared = spared_by_rules(message.obj, method, profile.tool_layer)
        if not redactor.apply(message.obj, method, None, spared, any_method=unknown)[1]:
            return ()
        message = profile.parse(payload, role)
        if message.obj is None:
            return ()
    replaced: list[str] = []
    spared = spared_by_rules(message.obj, method, profile.tool_layer)
    redactor.apply(message.obj, method, replaced, spared, any_method=unknown)
    return worth_chasing(replaced)


def of_any_method(message: Message, role: Role, method: Optional[str]) -> bool:
    """Whether ``message`` is an answer whose request is unknown (unpaired: its request not
    seen, let go, or of no method): it may be the answer of any method, so every rule
    applies to it, those scoped to a method too, and no name in it is spared
    (`spared_by_rules` knows none without a method). Hiding a value it did not need to is
    the safe side: a rule scoped to ``tools/list`` had left an unpaired listing in clear."""
    return method is None and role is Role.RESPONSE and message.role is not Role.REQUEST

"""Replaying a trace recorded with ``--redact``: its requests hold ``«redacted»`` where a value
was, and a live client sends the value itself.

A stand-in sees the GOLEM layer only, and many of its placeholders were put there by no rule
it could apply: an MCP tool call's argument was redacted on the MCP hop, and the GOLEM request
it became holds it as an echo (`golem_proxy.live.redact.Echoes`). So a recorded placeholder is
a wildcard: it matches whatever the live request carries at its place (`wildcard_match`),
and the live values it stood for are secrets from then on. `ReplayRedaction` applies the
trace's own rules to each live request and hides every such value wherever it comes back, in
what the replay prints (a miss's explanation, its report) and in what it records of the live
plugin (`--record-new`, the pytest plugin's record modes): a secret the recording kept out of
its file is kept out of everything made from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Optional

from golem_core.messages import Message, Role
from golem_core.profiles import Profile

from ..live.frame_redaction import FrameRedaction, RedactedFrame
from ..live.redact import REDACTED, REDACTED_ESCAPED, Redactor, strings_in
from .matching import canonical_dumps

__all__ = ["ReplayRedaction", "holds_placeholder", "wildcard_match"]

_PLACEHOLDERS = (REDACTED, REDACTED_ESCAPED, "\\u00ABredacted\\u00BB")
"""The placeholder as it is, and as an ASCII-only JSON writer escapes it inside a text (in
either case)."""
_PLACEHOLDER_BYTES = tuple(form.encode() for form in _PLACEHOLDERS)
_PLACEHOLDER_RE = "|".join(re.escape(form) for form in _PLACEHOLDERS)


def holds_placeholder(value: Any) -> bool:
    """Whether ``value`` (a string, or a payload's bytes) holds the redaction placeholder."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return any(form in raw for form in _PLACEHOLDER_BYTES)
    return isinstance(value, str) and any(form in value for form in _PLACEHOLDERS)


def wildcard_match(recorded: Any, live: Any) -> Optional[list[str]]:
    """The live strings that stand where ``recorded`` holds the placeholder, when ``live`` is
    ``recorded`` with any value there (a value the rules replaced whole, of any type; a part
    of a string an echo replaced, of one character or more); None when it is not. Numbers
    compare as JSON numbers (``1`` and ``1.0`` alike)."""
    found: list[str] = []
    stack: list[tuple[Any, Any]] = [(recorded, live)]
    while stack:
        old, new = stack.pop()
        if isinstance(old, str) and holds_placeholder(old):
            if old in _PLACEHOLDERS:
                found.extend(strings_in([new]))
                continue
            if not isinstance(new, str):
                return None
            parts = re.split(f"(?:{_PLACEHOLDER_RE})", old)
            pattern = "(.+?)".join(re.escape(part) for part in parts)
            matched = re.fullmatch(pattern, new, re.DOTALL)
            if matched is None:
                return None
            found.extend(matched.groups())
        elif isinstance(old, dict):
            if not isinstance(new, dict) or old.keys() != new.keys():
                return None
            stack.extend((value, new[key]) for key, value in old.items())
        elif isinstance(old, list):
            if not isinstance(new, list) or len(old) != len(new):
                return None
            stack.extend(zip(old, new))
        elif old is not new and canonical_dumps([old]) != canonical_dumps([new]):
            return None  # in a list: `canonical_dumps` reads ``1.0`` as ``1`` before a ``]``
    return found


def _params(obj: Any) -> Any:
    """A request object's params, ``{}`` where it has none that are an object (as the plugin
    reads them)."""
    params = obj.get("params") if isinstance(obj, dict) else None
    return params if isinstance(params, dict) else {}


class ReplayRedaction:
    """The trace's ``--redact`` rules, applied to a replay's live requests, and the live
    values they and the placeholders matched stood for, hidden wherever they recur (one per
    replay: every connection and route shares the secrets, as the recorder's do)."""

    def __init__(self, profile: Profile, rules: Iterable[str]) -> None:
        self.rules = tuple(rules)
        self._frames = FrameRedaction(profile, Redactor(list(self.rules)) if self.rules else None)

    def __bool__(self) -> bool:
        """Whether the trace was recorded with ``--redact`` (else nothing here applies)."""
        return bool(self.rules)

    def live_params(self, obj: Any, method: str) -> tuple[Any, Any, bool]:
        """The params of the live request ``obj`` as the recorder would have written them
        (the rules for ``method`` applied, the values known to be secret replaced), the
        same with the rules applied only (for `wildcard_match`: a value learned as secret
        may also be one the recording holds in clear elsewhere), and whether the rules or
        the secrets replaced anything. The values the rules replaced are secrets from now
        on."""
        redactor = self._frames.redactor
        if redactor is None or not isinstance(obj, dict):
            params = _params(obj)
            return params, params, False
        replaced: list[str] = []
        ruled, matched = redactor.apply(obj, method, replaced)
        self.learn(replaced)
        echoes = self._frames.echoes
        scrubbed, echoed = echoes.scrub(ruled) if echoes else (ruled, False)
        return _params(scrubbed), _params(ruled), bool(matched) or echoed

    def learn(self, values: Iterable[str]) -> None:
        """Hide ``values`` (live values a placeholder or a rule stood for) from now on."""
        self._frames.echoes.remember(values)

    def text(self, text: str) -> str:
        """``text`` (a message the replay prints or sends) with every known secret replaced."""
        return str(self.scrub(text))

    def scrub(self, value: Any) -> Any:
        """``value`` (JSON: a miss's text, the params it quotes) with every known secret
        replaced in its strings; ``value`` itself is never modified."""
        echoes = self._frames.echoes
        if not echoes:
            return value
        scrubbed, _ = echoes.scrub(value)
        return scrubbed

    def frame(
        self, payload: bytes, message: Message, role: Role, method: Optional[str]
    ) -> RedactedFrame:
        """A frame fetched from the live plugin as the trace's recorder would have written it:
        the rules applied, known secrets replaced (what it replaces is learned too)."""
        return self._frames.frame(payload, message, role, method)

"""Redaction: replace values at given paths of a message before anything reaches disk.

A path is dotted from the message object: ``params.code``, ``result.image``,
``params.points.0``; a ``*`` segment matches any key or index; a ``METHOD:`` prefix limits the
rule to one method (``scripting.execute_python:params.code``).

A redacted value often comes back: the plugin echoes a layer name in its error message
(``Layer 'SECRET' does not exist.``), another connection lists it (the MCP server reconnects
after a reset; the Grasshopper socket is a connection of its own), the MCP hop carries the
tool call's arguments the GOLEM request was made of. `Echoes` remembers the string values the
rules redacted in the session, on every connection and route a `Redactor` serves, and replaces
them wherever they recur in a later frame's strings (keys too).
Numbers, booleans and strings under four characters are not chased: replacing every ``1`` or
``"a"`` in a session would say more than it hides.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Optional

from . import redact_paths as paths
from .redact_paths import REDACTED, Place, strings_in

__all__ = [
    "REDACTED",
    "REDACTED_ESCAPED",
    "Echoes",
    "Redactor",
    "parse_rule",
    "strings_in",
    "worth_chasing",
]

MIN_ECHO = 4
"""Redacted strings shorter than this are not searched for elsewhere."""
MAX_ECHOES = 256
"""Remembered values per connection (the oldest are forgotten past this)."""

_REDACTED_BYTES = REDACTED.encode()
REDACTED_ESCAPED = json.dumps(REDACTED)[1:-1]
"""`REDACTED` as an ASCII-only JSON writer puts it in a string (``\u00abredacted\u00bb``)."""
_AS_THE_TEXT = ""
"""The replacement of a form that JSON writes alike whether it escapes non-ASCII or not (an
ASCII value with a quote or a backslash): `REDACTED` written as the text it is found in
writes non-ASCII (`_escapes_non_ascii`)."""
_ESCAPE = r"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})"
_ESCAPED_NON_ASCII = re.compile(_ESCAPE)
"""A non-ASCII character written as a ``\\uXXXX`` escape: the text's writer escapes them."""


@dataclass(frozen=True)
class RedactRule:
    text: str
    method: Optional[str]
    segments: tuple[str, ...]


def parse_rule(text: str) -> RedactRule:
    """Parse one ``[METHOD:]a.b.c`` rule. Raises ValueError for an empty path."""
    method: Optional[str] = None
    path = text
    if ":" in text:
        method, _, path = text.partition(":")
    segments = tuple(part for part in path.split(".") if part)
    if not segments:
        raise ValueError(f"redaction rule {text!r} has no path")
    return RedactRule(text, method or None, segments)


class Redactor:
    """Applies redaction rules to message objects, and keeps the values they replaced in the
    session (`echoes`): one is made per session and process, and serves every connection."""

    def __init__(self, rules: list[str]) -> None:
        self.rules = [parse_rule(rule) for rule in rules]
        self.echoes = Echoes()
        """The values the rules replaced on any connection, hidden where any frame after
        repeats them: a secret is one on every connection of the session."""

    def __bool__(self) -> bool:
        return bool(self.rules)

    def apply(
        self,
        obj: Any,
        method: Optional[str],
        found: Optional[list[str]] = None,
        spared: Collection[Place] = (),
        *,
        any_method: bool = False,
    ) -> tuple[Any, tuple[str, ...]]:
        """Return ``(redacted copy, rules that matched)``; the input is never modified. When
        nothing matches, the same object and ``()`` come back. The string values replaced
        are appended to ``found`` when it is given. A rule for every method (no ``METHOD:``)
        leaves the ``spared`` places as they are (the tool an MCP call names: the protocol's
        name for what is called, not a value of the call); a rule scoped to the method
        replaces them too. With ``any_method`` (an answer whose request is unknown: it may
        be any method's), every rule applies, those scoped to a method too."""
        matched: list[str] = []
        result = obj
        for rule in self.rules:
            if rule.method is not None and rule.method != method and not any_method:
                continue
            if not paths.has_path(result, rule.segments):
                continue
            if rule.method is None and spared:
                found_at = [p for p in paths.places(result, rule.segments) if p not in spared]
                if not found_at:
                    continue
                if found is not None:
                    found.extend(strings_in([paths.at(result, p) for p in found_at]))
                result = paths.replaced_at(result, found_at)
            else:
                if found is not None:
                    found.extend(strings_in(paths.values(result, rule.segments)))
                result = paths.redacted(result, rule.segments)
            matched.append(rule.text)
        return result, tuple(matched)


def worth_chasing(values: Iterable[str]) -> tuple[str, ...]:
    """Of the string values a redaction replaced, those `Echoes.remember` keeps: each once, in
    the order last seen, long enough to look for (`MIN_ECHO`), the last `MAX_ECHOES` only."""
    kept: dict[str, None] = {}  # insertion-ordered set
    for value in values:
        if len(value) >= MIN_ECHO and value != REDACTED:
            kept.pop(value, None)
            kept[value] = None
    return tuple(kept)[-MAX_ECHOES:]


class Echoes:
    """Redacted string values, to be replaced where they recur (the last `MAX_ECHOES`).

    A value recurs as it is, or written into a JSON text another string holds (an MCP tool's
    result is the plugin's answer as JSON text: ``json.dumps`` escapes every non-ASCII
    character, a quote, a newline): each value is looked for in those forms too, and each
    form replaced by `REDACTED` written the same way, so the text stays the JSON it was."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[tuple[str, str], ...]] = {}  # insertion-ordered
        self._needles: dict[str, tuple[bytes, ...]] = {}
        """Each value's forms as UTF-8, encoded once: `might_be_in` looks for them in every
        frame redacted."""
        self._by_length: Optional[list[tuple[str, str]]] = None
        self.on_new: Optional[Callable[[list[str]], None]] = None
        """Called with the values `remember` made the newest (those it did not hold, and those
        it held that were not the newest already), in the observing process of ``--observer
        child-process``: the forwarding process keeps them, in the same order, for the process
        that replaces this one (`Acknowledger.learned`, `HeldEchoes`). Told once only, a value
        this process kept because it recurs all the time fell out of the forwarding process's
        last `MAX_ECHOES` behind values seen once since, and recorded in clear after a
        restart."""

    def remember(self, values: Iterable[str]) -> None:
        new: list[str] = []
        for value in worth_chasing(values):
            newest = next(reversed(self._values), None) if self._values else None
            forms = self._values.pop(value, None)
            if value != newest:
                new.append(value)
            if forms is None:  # else held again: the newest now, its forms as they were
                forms = _forms(value)
                self._needles[value] = tuple(
                    form.encode("utf-8", "surrogatepass") for form, _ in forms
                )
            self._values[value] = forms
        while len(self._values) > MAX_ECHOES:
            oldest = next(iter(self._values))
            del self._values[oldest], self._needles[oldest]
        self._by_length = None
        if new and self.on_new is not None:
            self.on_new(new)

    def __bool__(self) -> bool:
        return bool(self._values)

    def values(self) -> tuple[str, ...]:
        """The values held, oldest first."""
        return tuple(self._values)

    def _forms_by_length(self) -> list[tuple[str, str]]:
        """Every form of every value with its replacement, longer first: no partial hits."""
        if self._by_length is None:
            pairs = {form: new for forms in self._values.values() for form, new in forms}
            self._by_length = sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True)
        return self._by_length

    def might_be_in(self, payload: bytes) -> bool:
        """A cheap test before parsing: does any remembered value appear in ``payload``, in
        one of its forms, or might it in a way of writing JSON other than ``json``'s?"""
        for value, needles in self._needles.items():
            for needle in needles:
                if needle in payload:
                    return True
            if not value.isascii() or '"' in value or "\\" in value or not value.isprintable():
                return True  # another encoder may escape it otherwise: the walk decides
        return False

    def scrub(self, obj: Any, kept: Collection[Place] = ()) -> tuple[Any, bool]:
        """``obj`` with every remembered value replaced inside its strings (keys too), in each
        of its forms; whether any was. The ``kept`` places are left as they are, and the keys
        on the way to them (a message's method, the tool an MCP call names: a value hidden
        elsewhere may be a word of them, a layer named ``create_layer``). ``obj`` is never
        modified: the containers on the way to a string replaced are copied, the rest shared
        (a copy of every container cost a large frame its size again)."""
        pairs = self._forms_by_length()

        def clean(text: str) -> str:
            escapes = None  # decided once, before a replacement adds non-ASCII to the text
            for form, new in pairs:
                if form in text:
                    if new == _AS_THE_TEXT:
                        if escapes is None:
                            escapes = _escapes_non_ascii(text)
                        new = REDACTED_ESCAPED if escapes else REDACTED
                    text = text.replace(form, new)
            return text

        return _rebuilt(obj, clean, kept)

    def scrub_bytes(self, payload: bytes) -> bytes:
        """``payload`` with every remembered value's forms replaced in UTF-8, for bytes that
        decode to nothing (no walk of strings can find them there); the same object when
        none is."""
        escapes = None
        for form, new in self._forms_by_length():
            raw = form.encode("utf-8", "surrogatepass")
            if raw in payload:
                if new == _AS_THE_TEXT:
                    if escapes is None:
                        # The bytes that do not decode say nothing of how the rest was written.
                        escapes = _escapes_non_ascii(payload.decode("utf-8", "ignore"))
                    new = REDACTED_ESCAPED if escapes else REDACTED
                payload = payload.replace(raw, new.encode("utf-8", "surrogatepass"))
        return payload

    def mask_bytes(self, raw: bytes) -> bytes:
        """``raw`` with every remembered value's forms overwritten by as many ``*``: for
        bytes no frame was decoded from, counted by their length (a gap's, a stream's
        offsets); the same object when none is found. These bytes are a frame cut short or
        a piece of one, so a value they cut is masked too: the start of a form at their end,
        its end at their start (all but its first or last byte: one byte says nothing)."""
        forms = [form.encode("utf-8", "surrogatepass") for form, _ in self._forms_by_length()]
        for found in forms:
            if found in raw:
                raw = raw.replace(found, b"*" * len(found))
        tail = head = 0
        for found in forms:
            for size in range(min(len(found) - 1, len(raw)), max(tail, 1), -1):
                if raw.endswith(found[:size]):
                    tail = size
                    break
            for size in range(min(len(found) - 1, len(raw)), max(head, 1), -1):
                if raw.startswith(found[-size:]):
                    head = size
                    break
        if tail:
            raw = raw[: len(raw) - tail] + b"*" * tail
        if head:
            raw = b"*" * head + raw[head:]
        return raw


def _forms(value: str) -> tuple[tuple[str, str], ...]:
    """``value`` as it is and as JSON writes it inside a string (ASCII-escaped, and not), each
    with what replaces it: `REDACTED` written the same way. An ASCII value with a quote or
    a backslash is written alike by both writers: which wrote the text it is found in, the
    text says (`_AS_THE_TEXT`); the ASCII-escaped placeholder in a text whose writer does
    not escape was a text that differs from the server's own once redacted alike."""
    escaped = json.dumps(value)[1:-1]
    plain = json.dumps(value, ensure_ascii=False)[1:-1]
    forms = {value: REDACTED}
    if escaped == plain:
        forms.setdefault(plain, _AS_THE_TEXT)
    else:
        forms.setdefault(escaped, REDACTED_ESCAPED)
        forms.setdefault(plain, REDACTED)
    return tuple(forms.items())


def _escapes_non_ascii(text: str) -> bool:
    """Whether the JSON ``text`` was written escaping non-ASCII characters: it holds one
    escaped, and none as it is. A text that shows neither gets `REDACTED` as it is, valid
    JSON either way, and what a writer that does not escape (the real server's) writes."""
    return text.isascii() and _ESCAPED_NON_ASCII.search(text) is not None


_END = object()


class _Level:
    """A container being walked by `_rebuilt`: its children so far, copied (``out``) once one
    of them changed; its ``place`` when a kept place may be below it (else None)."""

    __slots__ = ("children", "done", "key", "key_changed", "node", "out", "place")

    def __init__(self, node: Any, place: Optional[Place] = None) -> None:
        self.node = node
        self.place = place
        self.children = iter(node.items()) if isinstance(node, dict) else iter(node)
        self.done = 0
        self.out: Any = None
        self.key: Any = None  # a dict's (cleaned) key of the child walked below
        self.key_changed = False

    def put(self, key: Any, value: Any, changed: bool) -> None:
        """The next child, ``key`` its dict key (cleaned); ``changed``: it or its key was."""
        if changed and self.out is None:
            node = self.node
            if isinstance(node, dict):
                self.out = dict(itertools.islice(node.items(), self.done))
            else:
                self.out = node[: self.done]
        if self.out is not None:
            if isinstance(self.out, dict):
                self.out[key] = value
            else:
                self.out.append(value)
        self.done += 1


def _rebuilt(
    obj: Any, clean: Callable[[str], str], kept: Collection[Place] = ()
) -> tuple[Any, bool]:
    """``obj`` with ``clean`` applied to its strings and keys but the ``kept`` places and the
    keys on the way to them, and whether it changed any: without recursion, since a message
    nests as deep as its peer likes (a recursive walk gave up past ~500 levels, and the echo
    was recorded as it came)."""
    if isinstance(obj, str):
        text = clean(obj)
        return text, text is not obj
    if not isinstance(obj, (dict, list)):
        return obj, False
    on_the_way = {place[:end] for place in kept for end in range(1, len(place))}
    stack = [_Level(obj, () if kept else None)]
    while True:
        level = stack[-1]
        child: Any = next(level.children, _END)
        if child is _END:
            stack.pop()
            result = level.node if level.out is None else level.out
            if not stack:
                return result, level.out is not None
            parent = stack[-1]
            parent.put(parent.key, result, level.out is not None or parent.key_changed)
            continue
        key: Any = None
        key_changed = False
        place: Optional[Place] = None
        if isinstance(level.node, dict):
            key, child = child
            if level.place is not None:
                place = (*level.place, key)
        elif level.place is not None:
            place = (*level.place, level.done)
        if place is not None and place in kept:
            level.put(key, child, False)
            continue
        if place is not None and place not in on_the_way:
            place = None  # nothing kept below: the walk no longer follows where it is
        if isinstance(key, str) and place is None:
            cleaned = clean(key)
            key_changed, key = cleaned is not key, cleaned
        if isinstance(child, (dict, list)) and child:
            level.key, level.key_changed = key, key_changed
            stack.append(_Level(child, place))
        elif isinstance(child, str):
            text = clean(child)
            level.put(key, text, key_changed or text is not child)
        else:
            level.put(key, child, key_changed)

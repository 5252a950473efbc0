"""Guarding a recording's line before it is parsed: its nesting depth and the memory parsing it
would take, estimated from its structural characters (`golem_proxy.json_cost`: a line of
``[[],…]`` costs ~35 times its bytes once parsed), then the parse itself. A recording may
come from anyone: every problem is a `RecordingError`."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, NoReturn, Optional

from ..json_cost import outside_strings, parse_cost
from ..json_levels import strict_json_misfit
from .schema import DEFAULT_LINE_BUDGET, MAX_DEPTH, RecordingError

__all__ = [
    "NOT_ONE_VALUE",
    "OverBudget",
    "check_line",
    "decode_json",
    "decode_payload",
    "has_brackets",
    "not_one_value",
    "strictly_unreadable",
    "unreadable_by_bytes",
]


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class OverBudget(RecordingError):
    """A line whose parse would cost more than the budget (`check_line`): a frame line may
    still be read without parsing its payload (`frame_reading.event_object`)."""


def check_line(line: bytes, *, budget: int = DEFAULT_LINE_BUDGET, depth: int = MAX_DEPTH) -> None:
    """Refuse a line whose parse would cost more than ``budget`` bytes (`OverBudget`) or nest
    deeper than ``depth``, judged without parsing it. Raises RecordingError."""
    cost, opens = parse_cost(line, budget)
    if cost > budget:
        raise OverBudget(
            f"too large to parse: about {cost >> 20} MiB once parsed "
            f"(limit {budget >> 20} MiB; {opens} arrays and objects in {len(line)} bytes)"
        )
    if opens > depth and _deeper_than(line, depth):
        raise RecordingError(f"JSON nested too deep (more than {depth} levels)")


def _deeper_than(line: bytes, depth: int) -> bool:
    # Brackets inside strings do not count; what is left is peeled one level per pass, so a
    # wide structure goes in a few passes and a deep one stops after ``depth``.
    skeleton = _brackets_outside_strings(line)
    skeleton = skeleton.replace(b"{", b"[").replace(b"}", b"]")
    # A run of ``depth + 1`` opening brackets is that deep already: found in one linear search,
    # where peeling ``[[[…]]]`` a level per pass would cost ``depth`` passes.
    run = b"[" * (depth + 1)
    for _ in range(depth):
        if run in skeleton:
            return True
        shorter = skeleton.replace(b"[]", b"")
        if len(shorter) == len(skeleton):
            return False  # empty, or unbalanced: json reports that
        skeleton = shorter
    return bool(skeleton)


def strictly_unreadable(payload: bytes, obj: Any, skeleton: bool = False) -> str:
    """Why a frame's ``payload`` that a peer's JSON reads (Python's: NaN, ``Infinity``,
    nesting to its recursion limit), decoded as ``obj``, would make its line one the reader
    refuses, were it written verbatim; "" when it would not. The writer stores such a payload
    raw instead, so a recording is never one its own reader cannot open: a plugin's
    ``json.dumps`` writes NaN for a float that is not a number. (A number past a float's
    range, ``1e999``, the reader takes, as infinity: stored raw too, since no JSON output can
    say it.) ``skeleton``: ``obj`` has the payload's bulk strings elided (they nest nothing),
    and is walked at once, as it is for a payload of `_SEARCH_UP_TO` or more; otherwise the
    payload's bytes are searched first for what could be either (brackets enough, a
    constant's name, a large exponent), and ``obj`` walked only then: a small frame costs a
    few searches, not a walk."""
    depth = MAX_DEPTH - 1  # the line's own object is one level more
    if (
        not skeleton
        and len(payload) < _SEARCH_UP_TO
        and not (
            has_brackets(payload, depth + 1)
            or b"NaN" in payload
            or b"Infinity" in payload
            or _LARGE_EXPONENT.search(payload)
        )
    ):
        return ""
    misfit = strict_json_misfit(obj, depth)
    if misfit == "deeper":
        return f"payload nested deeper than {depth} levels"
    if misfit:
        return "payload has a number that is not finite (NaN, Infinity), which JSON has not"
    return ""


_LARGE_EXPONENT = re.compile(rb"[eE]\+?0*[1-9][0-9]{2,}(?=[\s,}\]]|\Z)")
"""An exponent of three digits or more, where a number token ends (JSON ends one only before
a comma, a closing bracket, white space or the end): where a number may be past a float's
range. Hex in a string (a UUID's ``550e8400-``) is not one; a string holding ``1e400,`` still
is, and only costs the walk."""
_SEARCH_UP_TO = 64 * 1024
"""A payload this long or longer is not searched first: its decoded value is walked at once.
The search for an exponent runs at ~200 MB/s (80 ms for 16 MiB of text), where the walk
costs what the value holds (a long string is one value)."""


NOT_ONE_VALUE = "a payload kept unparsed is not one JSON value"


def not_one_value(payload: bytes) -> str:
    """What keeps ``payload`` from being one JSON object or array nested no deeper than a
    line may hold, judged from its brackets outside strings (a payload kept unparsed, too
    large to parse: a line whose ``msg`` is not its last member, or that holds two, or a
    payload nested 100,000 deep, is refused as a parse would refuse it); "" when nothing
    does. Linear in its size, in C: a regex and a few passes of `bytes.replace`."""
    text = payload.strip(b" \t\r\n")
    pair = {b"{": b"}", b"[": b"]"}.get(text[:1])
    if pair is None or not text.endswith(pair):
        return "a payload kept unparsed is not a JSON object or array"
    skeleton = _brackets_outside_strings(text)
    inner = skeleton.replace(b"{", b"[").replace(b"}", b"]")[1:-1]
    run = b"[" * (MAX_DEPTH - 1)
    while inner:
        if run in inner:
            return f"JSON nested too deep (more than {MAX_DEPTH} levels)"
        shorter = inner.replace(b"[]", b"")
        if len(shorter) == len(inner):
            return NOT_ONE_VALUE
        inner = shorter
    return ""


def _brackets_outside_strings(text: bytes) -> bytes:
    """``text``'s brackets that are not inside its strings, in order."""
    return outside_strings(text, _NOT_BRACKETS)


def unreadable_by_bytes(payload: bytes) -> str:
    """`strictly_unreadable` judged from a payload's bytes alone, for a frame whose message is
    a skeleton, which cannot say: nested deeper than a line may hold, or holding a token of
    a number JSON has not (``NaN``, ``Infinity``, a large exponent), maybe only inside a
    string: stored raw all the same, which loses nothing."""
    depth = MAX_DEPTH - 1
    if has_brackets(payload, depth + 1) and _deeper_than(payload, depth):
        return f"payload nested deeper than {depth} levels"
    if _nonfinite_token(payload):
        return "payload may hold a number that is not finite (NaN, Infinity), which JSON has not"
    return ""


def _nonfinite_token(payload: bytes) -> bool:
    """Whether ``payload`` holds what could be a number JSON has not: a constant's name, or
    an exponent large enough (maybe only inside a string)."""
    return b"NaN" in payload or b"Infinity" in payload or bool(_LARGE_EXPONENT.search(payload))


def has_brackets(data: Any, count: int, start: int = 0, end: Optional[int] = None) -> bool:
    """Whether ``data[start:end]`` (bytes, or a map of a file) holds at least ``count``
    opening brackets (``{`` and ``[``): found one by one, where counting them would read a
    long payload whole, twice."""
    end = len(data) if end is None else end
    if end - start < count:  # too short to hold them: most frames, at no search at all
        return False
    for bracket in (b"{", b"["):
        at = data.find(bracket, start, end)
        while at >= 0:
            count -= 1
            if not count:
                return True
            at = data.find(bracket, at + 1, end)
    return False


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


# The reader's hot path: one shared decoder, and no encoding detection (lines are UTF-8).
_decode = json.JSONDecoder(parse_constant=_no_constant).decode


def decode_json(line: bytes) -> Any:
    """Parse one checked line. Raises RecordingError for invalid UTF-8 or JSON."""
    return _decoded(line, _decode)


# A payload is what a peer sent, read as the peers read it (Python's JSON).
_decode_payload = json.JSONDecoder().decode


def decode_payload(payload: bytes) -> Any:
    """Parse a frame's checked payload as the tap read it, with the peers' JSON: NaN and
    the infinities too (a plugin's ``json.dumps`` writes NaN for a float that is not a
    number; recordings written before such payloads were stored raw hold them verbatim).
    The members of a line stay strict JSON. Raises RecordingError as `decode_json` does."""
    return _decoded(payload, _decode_payload)


def _decoded(line: bytes, decode: Callable[[str], Any]) -> Any:
    try:
        return decode(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordingError(f"not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        raise RecordingError(f"not JSON: {exc}") from None
    except RecursionError:  # a depth the check let through on a small stack
        raise RecordingError("JSON nested too deep") from None

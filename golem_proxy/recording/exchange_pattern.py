"""The fast reader's pattern: one regex that takes a whole exchange (request frame line,
response frame line, exchange line) as `RecordingWriter` writes it for a sequential client,
strictly enough that every line it takes is valid JSON with members of the right type and
range, so that the events built from it are those the exact reader (`line_events`) builds.

Strict means: numbers in JSON's own grammar (no leading zeros) and within the reader's ranges
(whole numbers below 2**53, times from 0 to within 1e12 seconds), names and ids of printable ASCII
without escapes (so every byte outside the payload is valid UTF-8 and means what it reads),
and no optional member the exact reader would act on (``tool_calls``, ``redacted``, ``raw``,
``orphan``). The payload itself is checked by parsing it. Anything else is left to the exact
reader, line by line.
"""

from __future__ import annotations

import re

from .schema import EXCHANGE_MEMBERS, FRAME_MEMBERS, MSG_KEY

__all__ = ["EXCHANGE", "Groups"]

_INT = rb"(?:0|[1-9]\d{0,14})"
"""A whole number from 0 to below 2**53, as JSON writes it."""
_TIME = rb"(?:[1-9]\d{0,11}|0)(?:\.\d{1,20})?(?:[eE]-\d{1,3})?"
"""A number of seconds from 0 to within 1e12 (a float's repr: ``0.25``, ``5e-05``); a sign is
left to the exact reader (it refuses a negative time)."""
_NUMBER = rb"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?"
_TEXT = rb"[ !#-\[\]-~]*"
"""Printable ASCII without a quote or a backslash: a JSON string's text as it stands."""
_ID = rb'(?:,"id":(?:"' + _TEXT + rb'"|-?' + _INT + rb"))?"
_METHOD = rb'(?:,"method":"' + _TEXT + rb'")?'
_PAYLOAD = MSG_KEY + rb"([^\n]*)\}\r?"
"""The payload runs to the line's last closing brace, as the exact reader slices it."""


class Groups:
    """The pattern's group numbers."""

    REQUEST_SEQ = 1
    REQUEST_T = 2
    CONN = 3
    ROUTE = 4
    REQUEST_N = 5
    REQUEST_SIZE = 6
    REQUEST_PAYLOAD = 7
    RESPONSE_SEQ = 8
    RESPONSE_T = 9
    RESPONSE_N = 10
    RESPONSE_SIZE = 11
    RESPONSE_PAYLOAD = 12
    EXCHANGE_SEQ = 13


def _head(t: bytes = b"(" + _TIME + b")") -> bytes:
    return rb'\n\{"seq":(' + _INT + rb'),"t":' + t + rb',"kind":'


assert FRAME_MEMBERS[3:] == ("conn", "route", "dir", "n", "size", "type")
_EXCHANGE_LAYOUT = ("conn", "route", "req", "resp", "method", "status", "latency", "outcome")
assert EXCHANGE_MEMBERS[3:] == _EXCHANGE_LAYOUT

EXCHANGE = re.compile(
    # The request: a frame the tap holds until its answer comes.
    _head()
    + rb'"frame","conn":(' + _INT + rb'),"route":"(' + _TEXT + rb')","dir":"c2s"'
    + rb',"n":(' + _INT + rb'),"size":(' + _INT + rb'),"type":"\w+"'
    + _ID + _METHOD + rb',"expects_answer":true' + _PAYLOAD
    # Its answer, on the same connection and route.
    + _head()
    + rb'"frame","conn":\3,"route":"\4","dir":"s2c"'
    + rb',"n":(' + _INT + rb'),"size":(' + _INT + rb'),"type":"\w+"'
    + _ID + _METHOD + rb',"answers":\5' + _PAYLOAD
    # The exchange line naming both.
    + _head(_TIME)
    + rb'"exchange","conn":\3,"route":"\4","req":\5,"resp":\10'
    + rb',"method":(?:null|"' + _TEXT + rb'"),"status":"' + _TEXT + rb'"'
    + rb',"latency":' + _NUMBER + rb',"outcome":"\w+"\}\r?(?=\n)'
)  # fmt: skip
assert EXCHANGE.groups == Groups.EXCHANGE_SEQ, "the group numbers follow the pattern"

"""The fast scanner's pattern: one regex that takes apart the frame and exchange lines
`RecordingWriter` writes, built from the member lists in `schema`, the same lists the writer
follows (a test pins that), so a change to a line's members changes both."""

from __future__ import annotations

import re
from collections.abc import Mapping

from .schema import KIND_MEMBERS, MSG_KEY

__all__ = ["C2S", "LINE", "S2C"]

# What matches one member's value on the fast path: only what the reader accepts, so that a
# line the pattern takes is one the reader would read the same way (its payload aside, which the
# scanner checks as it takes it). Numbers are JSON numbers (no leading zeros) bounded so that every
# value is finite and within range: whole numbers under 10**15 (`MAX_INT` is 2**53), times from
# 0 to under 10**12 seconds (a sign is left to the reader, which refuses a negative time). Names
# are printable ASCII without escapes, so that no invalid UTF-8 or control character gets by.
# Anything else falls to the slow path, where the reader's checks refuse it
# with a message or read it.
_INT = rb"(?:0|[1-9]\d{0,14})"
_TIME = rb"(?:0|[1-9]\d{0,11})(?:\.\d{1,17})?(?:[eE]-\d{1,2})?"
_TEXT = rb"[ !#-\[\]-~]*"
_NAME = rb'"' + _TEXT + rb'"'
_DEFAULTS: Mapping[str, bytes] = {
    "seq": _INT,
    "t": _TIME,
    "conn": _INT,
    "route": _NAME,
    "dir": rb'"(?:c2s|s2c)"',
    "n": _INT,
    "size": _INT,
    "type": rb'"\w+"',
    "req": _INT,
    "resp": _INT,
}


def _members(kind: str, first: str, last: str, **values: bytes) -> bytes:
    """``"first":…,…,"last":…``: the members of a ``kind`` line from ``first`` to ``last``
    in the writer's order, each matched by ``values[name]`` or its default pattern."""
    names = KIND_MEMBERS[kind]
    chosen = names[names.index(first) : names.index(last) + 1]
    return b",".join(b'"%s":%s' % (n.encode(), values.get(n, _DEFAULTS[n])) for n in chosen)


def _line_start(kind: bytes, t: bytes) -> bytes:
    return b"\\n\\{" + _members("frame", "seq", "t", t=t) + b',"kind":"' + kind + b'",'


# An id is a string of the same printable ASCII as a name (an escaped one is read the slow way)
# or a JSON integer.
_ID = rb'(?:,"id":(?:"' + _TEXT + rb'"|-?(?:0|[1-9]\d{0,15})))?'
_METHOD = rb'(?:,"method":"(' + _TEXT + rb')")?'
# A frame's MCP attribution (`golem-proxy mcp`): the list of tool calls in the writer's layout.
# Then the tap's pairing decision (format version 2), which the scanner does not need.
_TOOL_CALL = (
    rb'\{"conn":' + _INT + rb',"n":' + _INT + rb',"id":(?:"' + _TEXT + rb'"|-?(?:0|[1-9]\d{0,15}))'
    rb',"tool":"' + _TEXT + rb'"\}'
)


def _tool_calls(answers: bytes = _INT) -> bytes:
    """A frame's tool calls and pairing members, its ``answers`` matched by ``answers``."""
    pairing = rb'(?:,"expects_answer":true)?(?:,"answers":' + answers + rb')?(?:,"orphan":true)?'
    # One call at most: a list of several (overlapping calls) is read the reader's way,
    # which refuses a call named twice.
    calls = rb'(?:,"tool_calls":\[(?:' + _TOOL_CALL + rb")?\])?"
    return calls + pairing


_TOOL_CALLS = _tool_calls()
# The rest of a frame line after ``"msg":``: the payload (up to the line's last closing brace,
# as the reader slices it), then that brace.
_PAYLOAD = rb"([^\n]*)\}\r?"
_GROUP_NAME = rb'"(' + _TEXT + rb')"'
# The rest of an exchange line after its frame numbers, in the writer's layout.
_EXCHANGE_TAIL = (
    rb'"method":(?:null|"'
    + _TEXT
    + rb'"),"status":"'
    + _TEXT
    + rb'","latency":'
    + _TIME
    + rb',"outcome":"[a-z-]{1,32}"\}\r?'
)

# One pass over the file finds every frame and exchange line in the layout RecordingWriter
# writes. The literal ``\n{"seq":`` prefix lets the regex engine skip payload bytes quickly.
#
# The first alternative takes a whole exchange at once when its three lines follow each other
# (request frame, response frame, exchange line of the same connection: what a sequential
# client such as GOLEM's produces); the backreferences make sure they belong together. Other
# lines are taken one at a time: a frame's ``"conn":…,"route":…,"dir":…,"n":…`` text is its
# pairing key as it stands, and an exchange line rebuilds the same text from its conn, route
# and frame numbers, so pairing costs no parsing.
#
# Every alternative runs to the end of its last line, so a line the pattern did not take shows
# as a match that does not start where the previous one ended.
#
# Groups: 1 t. Whole exchange: 2 conn, 3 route, 4 request n, 5 type, 6 method, 7 request
# payload, 8 response t, 9 response n, 10 response payload. Frame: 11 key, 12 route, 13 type,
# 14 method, 15 payload. Exchange: 16 conn and route, 17 req, 18 resp.
LINE = re.compile(
    b"\\n\\{"
    + _members("frame", "seq", "t", t=b"(" + _TIME + b")")
    + b',"kind":"(?:'
    # a whole exchange: request frame, response frame, exchange line
    + b'frame",'
    + _members(
        "frame",
        "conn",
        "type",
        conn=b"(" + _INT + b")",
        route=_GROUP_NAME,
        dir=b'"c2s"',
        n=b"(" + _INT + b")",
        type=rb'"(\w+)"',
    )
    + _ID
    + _METHOD
    + _TOOL_CALLS
    + MSG_KEY
    + _PAYLOAD
    + _line_start(b"frame", b"(" + _TIME + b")")
    + _members(
        "frame", "conn", "type", conn=rb"\2", route=rb'"\3"', dir=b'"s2c"', n=b"(" + _INT + b")"
    )
    + _ID
    # An answer that says it answers another request is no whole exchange with this one: its
    # lines are taken one at a time, and paired as the reader pairs them (`answers` decides).
    + _tool_calls(answers=rb"\4")
    + MSG_KEY
    + _PAYLOAD
    + _line_start(b"exchange", _TIME)
    + _members("exchange", "conn", "resp", conn=rb"\2", route=rb'"\3"', req=rb"\4", resp=rb"\9")
    + b","
    + _EXCHANGE_TAIL
    # one frame
    + b'|frame",('
    + _members("frame", "conn", "n", route=_GROUP_NAME)
    + b"),"
    + _members("frame", "size", "type", type=rb'"(\w+)"')
    + _ID
    + _METHOD
    + _TOOL_CALLS
    + MSG_KEY
    + _PAYLOAD
    # one exchange line
    + b'|exchange",('
    + _members("exchange", "conn", "route")
    + b"),"
    + _members("exchange", "req", "resp", req=b"(" + _INT + b")", resp=b"(" + _INT + b")")
    + b","
    + _EXCHANGE_TAIL
    + b")"
)
assert LINE.groups == 18, "the scanner's group numbers follow the pattern"
# The text between a frame's route and its number, per direction (see the pairing key).
C2S = b',"dir":"c2s","n":'
S2C = b',"dir":"s2c","n":'
assert _members("frame", "dir", "n", dir=b'"c2s"', n=b"") == C2S[1:]

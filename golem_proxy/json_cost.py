"""What a JSON text would hold once parsed, judged from its bytes before it is: the one
estimate the live tap (`golem_proxy.live.tap_parse`: a frame over ``--observe-parse-limit``
is not parsed) and the recording's readers (`golem_proxy.recording.line_guard`: a line over
the budget is not parsed) both go by. A text costs what its structural characters make:
30 MiB of ``[[],…]`` holds ~1.1 GiB once parsed, 30 MiB of base64 in one string ~90 MiB.

The weights were measured with CPython, with tracemalloc on 2 MB texts of one shape each
and with the process's peak on 28 MiB ones: an array is its object, its slots and its slot
in its parent (88 bytes), an object a dict of a few keys (200), a string its object (56), a
key little (8: a parse makes one string of a key however often it recurs), a number with a
``.`` or an exponent its float (24), an element (a comma) its slot (16); and the text itself,
its decoded copy and its strings' characters, 3 bytes a byte, up to 9 with a character past
U+FFFF. The estimate is no less than what a parse holds for arrays, objects, strings and
floats (real/estimated 0.35-0.94 over 16 shapes, from ``[[],…]`` and ``[{},…]`` to meshes,
masks, GOLEM points and MCP text contents). Two shapes cost more, ~10 bytes a byte at most:
integers past 256 (1.5 times the estimate) and an object of distinct keys (2 times).

The readers' estimate is the larger of that and an older, coarser one (a container 64, an
element 32, the text 2 a byte), which charges every element a number's object: so 30 MB of
``[1,1,…]`` is over their budget (514 MiB) and read from its skeleton, as recordings say."""

from __future__ import annotations

import re
from typing import Optional

__all__ = [
    "JSON_STRING",
    "MOST_PER_BYTE",
    "STRING_OR_REST",
    "WINDOW",
    "most_held",
    "outside_strings",
    "parse_cost",
    "parse_holds",
]

JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A JSON string, unrolled so that the regex engine runs through plain characters in one step
(an alternation per character cost 6 s and 3 GB over a 30 MB string)."""
STRING_OR_REST = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
"""A JSON string, or one that never closes with the rest of the text: what a pass through a
text's strings takes (replay's GUID mapping), so that it never tries again from each quote
past one that does not close. With `JSON_STRING` a quote that never closes, followed by
escaped quotes, cost a pass to the end per quote: 40,000 of them 12 s."""

_ARRAY, _OBJECT, _STRING, _KEY, _NUMBER, _ELEMENT = 88, 200, 56, 8, 24, 16
_CONTAINER, _COMMA, _COARSE_TEXT = 64, 32, 2
"""The older estimate's weights: a container, an element, a byte of the text."""
_WIDEST_BYTE = 1 + 2 * 4
"""What a byte of text costs at most: itself, and a character of 4 bytes twice (the decoded
text, and a string's)."""

MOST_PER_BYTE = _WIDEST_BYTE + _OBJECT
"""The most either estimate charges a byte: a bound from a length alone."""


def most_held(size: int, in_strings: int = 0) -> int:
    """The most either estimate can say of a text of ``size`` bytes, ``in_strings`` of them
    known to be inside strings (opaque ones, elided): a bound from lengths alone."""
    return _WIDEST_BYTE * size + _OBJECT * max(0, size - in_strings)


WINDOW = 1024 * 1024
"""How much of a text `outside_strings` takes its strings out of at a time."""

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_BACKSLASHES = re.compile(rb"\\*")
_PLAIN_STRING = re.compile(rb'"[^"]*(?:"|\Z)')
"""A string once its escapes are out: a quote, up to the next or the end."""
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b"[{,:.eE")
_TWO_BYTE_CHARACTERS = re.compile(rb"[\xc4-\xef]")
"""A lead byte of a character past U+00FF: a text holding one decodes to 2 bytes a character."""
_FOUR_BYTE_CHARACTERS = re.compile(rb"[\xf0-\xf4]")


def parse_holds(text: bytes, over: Optional[int] = None) -> int:
    """What parsing ``text`` would hold, in bytes (the weights above). Counted over the whole
    text first; when that is more than ``over``, its structure again outside its strings (a
    string of ``[[[…`` or a CSV text is no structure)."""
    width = _width(text)
    strings, keys = _strings_and_keys(text)
    held = _held(len(text), width, strings, keys, _structure(text))
    if over is not None and held > over:
        outside = outside_strings(text, _NOT_STRUCTURE)
        held = _held(len(text), width, strings, outside.count(b":"), _structure(outside))
    return held


def parse_cost(text: bytes, over: Optional[int] = None) -> tuple[int, int]:
    """What parsing ``text`` would cost a reader, in bytes, and how many arrays and objects it
    opens: the larger of `parse_holds` and the older estimate, which charges every element a
    number's object (30 MB of ``[1,1,…]`` is 514 MiB by it: the readers' budget was set by
    it). Counted over the whole text first; when that is more than ``over``, again outside
    its strings. A text too short to cost ``over`` by `parse_holds` (`most_held`) is counted
    by the older estimate alone."""
    size = len(text)
    detailed = over is None or most_held(size) > over
    structure = _structure(text)
    cost = _coarse(size, structure)
    if detailed:
        width = _width(text)
        strings, keys = _strings_and_keys(text)
        cost = max(cost, _held(size, width, strings, keys, structure))
    if over is not None and cost > over:
        outside = outside_strings(text, _NOT_STRUCTURE)
        structure = _structure(outside)
        cost = _coarse(size, structure)
        if detailed:
            cost = max(cost, _held(size, width, strings, outside.count(b":"), structure))
    return cost, structure[0] + structure[1]


def _structure(text: bytes) -> tuple[int, int, int, int]:
    """Its arrays, objects, elements (commas) and numbers (``.``, ``e`` and ``E``, which
    ``true`` and ``false`` have too: a few bytes too many each)."""
    numbers = text.count(b".") + text.count(b"e") + text.count(b"E")
    return text.count(b"["), text.count(b"{"), text.count(b","), numbers


def _strings_and_keys(text: bytes) -> tuple[int, int]:
    """How many strings (not counting a quote escaped inside one) and, among them, keys."""
    quotes = text.count(b'"') - text.count(b'\\"')
    keys = text.count(b'":')
    return max(0, quotes // 2 - keys), keys


def _width(text: bytes) -> int:
    """Bytes a character of ``text`` decoded (`str`) takes: 1, 2 or 4."""
    if text.isascii():
        return 1
    if _FOUR_BYTE_CHARACTERS.search(text):
        return 4
    return 2 if _TWO_BYTE_CHARACTERS.search(text) else 1


def _held(size: int, width: int, strings: int, keys: int, structure: tuple[int, ...]) -> int:
    arrays, objects, commas, numbers = structure
    held = (1 + 2 * width) * size + _STRING * strings + _KEY * keys + _NUMBER * numbers
    return held + _ARRAY * arrays + _OBJECT * objects + _ELEMENT * commas


def _coarse(size: int, structure: tuple[int, ...]) -> int:
    arrays, objects, commas, _ = structure
    return _COARSE_TEXT * size + _CONTAINER * (arrays + objects) + _COMMA * commas


def outside_strings(text: bytes, delete: bytes) -> bytes:
    """What is outside ``text``'s strings, in order, less the bytes ``delete`` lists: a
    window of the text at a time (`WINDOW`), so in bounded memory and at the regex engine's
    speed however many strings it holds. Escapes are taken out first (a backslash and the
    byte after it: a window never ends inside a run of backslashes, so never inside an
    escape); then a string is a quote to the next, and a window begins inside one when the
    windows before held an odd number of quotes."""
    kept = bytearray()
    inside = False
    start, size = 0, len(text)
    while start < size:
        end = min(start + WINDOW, size)
        if text[end - 1] == 0x5C:  # a backslash: the run, and the byte it may escape
            end = min(_BACKSLASHES.match(text, end).end() + 1, size)  # type: ignore[union-attr]
        window = _ESCAPE.sub(b"", text[start:end])
        quotes = window.count(b'"')
        if inside:
            window = b'"' + window
        kept += _PLAIN_STRING.sub(b"", window).translate(None, delete)
        inside = inside != (quotes % 2 == 1)
        start = end
    return bytes(kept)

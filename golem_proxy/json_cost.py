"""What a JSON text would hold once parsed, judged from its bytes before it is: the one
estimate the live tap (`golem_proxy.live.tap_parse`: a frame over ``--observe-parse-limit``
is not parsed) and the recording's readers (`golem_proxy.recording.line_guard`: a line over
the budget is not parsed) both go by. A text costs what its structural characters make:
30 MiB of ``[[],…]`` holds ~1.1 GiB once parsed, 30 MiB of base64 in one string ~90 MiB.

The weights were measured with CPython, with tracemalloc on 2 MB texts of one shape each
(arrays of ``[]``, ``{}``, ``[[1]]``, ``{"a":1}``, ``"ab"``, objects of three strings:
real/estimated 0.36-0.97) and with the process's peak on 28 MiB ones. An array is its object,
its slots and its slot in its parent (88 bytes), an object a dict of a few keys (200), a
string its object (56: 28 a quote), an element (a comma) its slot and a small number (16),
and the text 3 bytes a byte (itself, its decoded copy, its strings' characters). A number's
own object is left out: an array of ``1e1`` holds 1.7 times the estimate, ~10 bytes a byte.
The readers' estimate is the larger of that and an older, coarser one (a container 64, an
element 32, the text 2 a byte), which counts a number's object: so 30 MB of ``[1,1,…]`` is
over their budget (514 MiB) and read from its skeleton, as recordings already say."""

from __future__ import annotations

import re
from typing import Optional

__all__ = [
    "JSON_STRING",
    "MANY_QUOTES",
    "MOST_PER_BYTE",
    "most_held",
    "outside_strings",
    "parse_cost",
    "parse_holds",
]

JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A JSON string, unrolled so that the regex engine runs through plain characters in one step
(an alternation per character cost 6 s and 3 GB over a 30 MB string)."""

MANY_QUOTES = 1_000_000
"""Past this many quotes, a text's strings are taken out one by one (`outside_strings`), not
with one `re.sub`, which holds a piece for each (34 MB of ``{"a":[],…}`` peaked at 1.1 GiB)."""

_ARRAY, _OBJECT, _QUOTE, _ELEMENT, _TEXT = 88, 200, 28, 16, 3
_CONTAINER, _COMMA, _COARSE_TEXT = 64, 32, 2
"""The older estimate's weights: a container, an element, a byte of the text."""

MOST_PER_BYTE = _TEXT + _OBJECT
"""The most either estimate charges a byte: a bound from a length alone."""


def most_held(size: int, in_strings: int = 0) -> int:
    """The most either estimate can say of a text of ``size`` bytes, ``in_strings`` of them
    known to be inside strings (opaque ones, elided): a bound from lengths alone."""
    return _TEXT * size + _OBJECT * max(0, size - in_strings)


_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b"[{,")


def parse_holds(text: bytes, over: Optional[int] = None) -> int:
    """What parsing ``text`` would hold, in bytes (the weights above). Counted over the whole
    text first; when that is more than ``over``, its brackets and commas again outside its
    strings (a string of ``[[[…`` is no structure; its quotes still count), unless it has
    more than `MANY_QUOTES`: taking that many strings out costs a second a million, which
    the live tap does not spend (the whole text's count stands)."""
    quotes = text.count(b'"')
    held = _held(len(text), quotes, *_structure(text))
    if over is not None and held > over and quotes <= MANY_QUOTES:
        held = _held(len(text), quotes, *_structure(outside_strings(text, _NOT_STRUCTURE)))
    return held


def parse_cost(text: bytes, over: Optional[int] = None) -> tuple[int, int]:
    """What parsing ``text`` would cost a reader, in bytes: the larger of `parse_holds` and
    the older estimate; and how many arrays and objects it opens. Counted over the whole
    text first; when that is more than ``over``, again outside its strings, however many
    (a reader may take the time; the live tap does not, `parse_holds`)."""
    quotes = text.count(b'"')
    cost, opens = _cost(len(text), quotes, *_structure(text))
    if over is not None and cost > over:
        outside = outside_strings(text, _NOT_STRUCTURE)
        cost, opens = _cost(len(text), quotes, *_structure(outside))
    return cost, opens


def _structure(text: bytes) -> tuple[int, int, int]:
    # Three counts (~4 ms each for 16 MiB): keeping the structural characters with one
    # `translate` first costs as much for a text and twice as much for a mesh.
    return text.count(b"["), text.count(b"{"), text.count(b",")


def _held(size: int, quotes: int, arrays: int, objects: int, commas: int) -> int:
    structure = _ARRAY * arrays + _OBJECT * objects + _ELEMENT * commas + _QUOTE * quotes
    return _TEXT * size + structure


def _cost(size: int, quotes: int, arrays: int, objects: int, commas: int) -> tuple[int, int]:
    opens = arrays + objects
    coarse = _COARSE_TEXT * size + _CONTAINER * opens + _COMMA * commas
    return max(coarse, _held(size, quotes, arrays, objects, commas)), opens


def outside_strings(text: bytes, delete: bytes) -> bytes:
    """What is outside ``text``'s strings, in order, less the bytes ``delete`` lists: with one
    `re.sub`, or string by string past `MANY_QUOTES` quotes (a Python step each: ~1 s a
    million strings, in bounded memory)."""
    if text.count(b'"') <= MANY_QUOTES:
        return JSON_STRING.sub(b"", text).translate(None, delete)
    kept = bytearray()
    outside = 0
    for string in JSON_STRING.finditer(text):
        kept += text[outside : string.start()].translate(None, delete)
        outside = string.end()
    kept += text[outside:].translate(None, delete)
    return bytes(kept)

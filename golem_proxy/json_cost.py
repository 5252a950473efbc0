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
masks, GOLEM points and MCP text contents). Hand-made texts can cost more, up to ~2.7 times
the estimate and ~16 bytes a byte: integers past 256 (1.5 times), an object of distinct keys,
``\\u`` escapes of characters past U+FFFF in an ASCII text, ``":`` inside strings.

The readers' estimate is the larger of that and an older, coarser one (a container 64, an
element 32, the text 2 a byte), which charges every element a number's object: so 30 MB of
``[1,1,…]`` is over their budget (514 MiB) and read from its skeleton, as recordings say."""

from __future__ import annotations

import re
from typing import Optional

__all__ = [
    "JSON_STRING",
    "MOST_PER_BYTE",
    "RECOUNT_OVER",
    "STRING_OR_REST",
    "WINDOW",
    "char_width",
    "count_byte",
    "message_holds",
    "most_held",
    "outside_strings",
    "parse_cost",
    "parse_holds",
    "structure_holds",
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


WINDOW = 256 * 1024
"""How much of a text `outside_strings` takes its strings out of at a time: a window dense
with quotes holds ~45 bytes a byte while its strings are taken out."""

_PLAIN_STRING = re.compile(rb'"[^"]*(?:"|\Z)')
"""A string once its escapes are out: a quote, up to the next or the end."""
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b"[{,:.eE")
_TWO_BYTE_CHARACTERS = re.compile(rb"[\xc4-\xef]")
"""A lead byte of a character past U+00FF: a text holding one decodes to 2 bytes a character."""
_FOUR_BYTE_CHARACTERS = re.compile(rb"[\xf0-\xf4]")


def structure_holds(text: bytes) -> int:
    """What the arrays, objects, strings and elements of ``text`` parsed hold beside its
    characters (numbers left out), from four counts: what a request kept waiting for its
    answer is charged for its message (`golem_proxy.live.tap_pairing`). In a text of more
    than `RECOUNT_OVER` whose count is more than twice its size, the brackets and commas are
    counted again outside its strings (JSON passed as a string is text, not structure)."""
    strings = _strings(text)
    held = _structure_held(_containers(text), strings)
    if len(text) > RECOUNT_OVER and held > 2 * len(text):
        held = _structure_held(_containers(outside_strings(text, _NOT_STRUCTURE)), strings)
    return held


RECOUNT_OVER = 64 * 1024
"""A text this long or shorter is charged its structure as counted over all of it: at most
~13 MiB for one of brackets inside a string."""


def _structure_held(containers: Containers, strings: int) -> int:
    arrays, objects, commas = containers
    return _ARRAY * arrays + _OBJECT * objects + _ELEMENT * commas + _STRING * strings


def message_holds(payload: bytes, elided: int = 0) -> int:
    """What a frame's parsed message holds beside its bytes, as a frame kept waiting is charged
    for it (a request for its answer, live: `golem_proxy.live.tap_pairing`; a request or a pair
    for a later line, in a recording's reader: `golem_proxy.recording.held_frames`): its
    strings' characters, but for the ``elided`` bytes, at their width, and its structure
    (`structure_holds`)."""
    return (len(payload) - elided) * char_width(payload) + structure_holds(payload)


def parse_holds(text: bytes, over: Optional[int] = None) -> int:
    """What parsing ``text`` would hold, in bytes (the weights above). Counted over the whole
    text first; when that is more than ``over``, its structure again outside its strings (a
    string of ``[[[…`` or a CSV text is no structure). With ``over``, a text that a quick
    bound (`_bound`, from four counts) finds within it is given that bound."""
    return _estimate(text, over)[0]


def parse_cost(text: bytes, over: Optional[int] = None) -> tuple[int, int]:
    """What parsing ``text`` would cost a reader, in bytes, and how many arrays and objects it
    opens: the larger of `parse_holds` and the older estimate, which charges every element a
    number's object (30 MB of ``[1,1,…]`` is 514 MiB by it: the readers' budget was set by
    it). Counted over the whole text first; when that is more than ``over``, again outside
    its strings. A text too short to cost ``over`` by `parse_holds` (`most_held`) is counted
    by the older estimate alone, in three counts: what it is given then is only known to be
    within ``over``."""
    size = len(text)
    containers = _containers(text)
    held, outside = 0, None
    if over is None or most_held(size) > over:
        held, outside = _estimate(text, over, containers)
    if over is not None and outside is None and max(_coarse(size, containers), held) > over:
        outside = _containers(outside_strings(text, _NOT_STRUCTURE))
    if outside is not None:
        containers = outside
    return max(_coarse(size, containers), held), containers[0] + containers[1]


Containers = tuple[int, int, int]
"""A text's arrays, objects and elements (commas)."""


def _estimate(
    text: bytes, over: Optional[int], containers: Optional[Containers] = None
) -> tuple[int, Optional[Containers]]:
    """`parse_holds`, and the text's containers outside its strings when it counted them."""
    size = len(text)
    if containers is None:
        containers = _containers(text)
    width = char_width(text)
    if over is not None:
        bound = _bound(size, width, containers, count_byte(text, b":"))
        if bound <= over:
            return bound, None
    strings = _strings(text)
    held = _held(size, width, strings, text.count(b'":'), containers, _numbers(text))
    if over is None or held <= over:
        return held, None
    outside = outside_strings(text, _NOT_STRUCTURE)
    containers = _containers(outside)
    keys = outside.count(b":")  # every colon outside strings follows a key
    return _held(size, width, strings, keys, containers, _numbers(outside)), containers


def _containers(text: bytes) -> Containers:
    # Three counts (~4 ms each for 16 MiB, ~0.3 in a blob: `count_byte`): keeping the
    # structural characters with one `translate` first costs as much for a text and twice as
    # much for a mesh.
    if len(text) < _SCANNED_FROM:
        return text.count(b"["), text.count(b"{"), text.count(b",")
    return count_byte(text, b"["), count_byte(text, b"{"), count_byte(text, b",")


def _numbers(text: bytes) -> int:
    """Floats, as ``.``, ``e`` and ``E`` (which ``true`` and ``false`` have too: a few
    bytes too many each; inside strings many, until they are counted outside them)."""
    return count_byte(text, b".") + count_byte(text, b"e") + count_byte(text, b"E")


def _strings(text: bytes) -> int:
    """How many strings, keys among them (not counting a quote escaped inside one)."""
    if len(text) < _SCANNED_FROM:
        quotes = text.count(b'"')
    else:
        quotes = count_byte(text, b'"')
        if b"\\" not in text:  # one `memchr` pass: the counts below take 9-12 ms a 16 MiB
            return quotes // 2
    # ``\\"`` ends a string after an escaped backslash: its quote counts.
    return (quotes - text.count(b'\\"') + text.count(b'\\\\"')) // 2


_SPARSE = 16
"""Occurrences `count_byte` finds one at a time before it counts the rest."""
_SCANNED_FROM = 64 * 1024
"""A text shorter than this is counted at once: the finds' steps would cost more."""


def count_byte(text: bytes, byte: bytes) -> int:
    """``text.count(byte)``, in the time of one `memchr` pass where ``byte`` is rare (in a
    16 MiB blob, ~0.3 ms against ``count``'s 4: ``count`` looks at every byte, ``find`` at
    a machine word or a vector a step). A text under `_SCANNED_FROM` is counted at once."""
    if len(text) < _SCANNED_FROM:
        return text.count(byte)
    found, at = 0, text.find(byte)
    while at >= 0:
        found += 1
        if found > _SPARSE:  # dense: one count for the rest
            return found - 1 + text.count(byte, at)
        at = text.find(byte, at + 1)
    return found


def char_width(text: bytes) -> int:
    """Bytes a character of ``text`` decoded (`str`) takes: 1, 2 or 4."""
    if text.isascii():
        return 1
    if _FOUR_BYTE_CHARACTERS.search(text):
        return 4
    return 2 if _TWO_BYTE_CHARACTERS.search(text) else 1


def _bound(size: int, width: int, containers: Containers, colons: int) -> int:
    """No less than `_held` once counted outside strings, for a JSON text, from three counts
    fewer: a key or a value follows a bracket or a comma (or is the whole text) and costs at
    most a string's (a float with an exponent two markers' worth), and a member's value
    follows its key, whose string the bound charges as a string (a key's charge on top is
    its colon's, any colon). A text that is no JSON may hold more: a parse stops at its
    first fault, and this covers what comes before it."""
    arrays, objects, commas = containers
    tokens = arrays + objects + commas + 1
    held = (1 + 2 * width) * size + _STRING * tokens + _KEY * colons
    return held + _ARRAY * arrays + _OBJECT * objects + _ELEMENT * commas


def _held(
    size: int, width: int, strings: int, keys: int, containers: Containers, numbers: int
) -> int:
    """``strings`` of which ``keys`` are keys (at most all of them)."""
    arrays, objects, commas = containers
    keys = min(keys, strings)
    held = (1 + 2 * width) * size + _STRING * (strings - keys) + _KEY * keys
    return held + _NUMBER * numbers + _ARRAY * arrays + _OBJECT * objects + _ELEMENT * commas


def _coarse(size: int, containers: Containers) -> int:
    arrays, objects, commas = containers
    return _COARSE_TEXT * size + _CONTAINER * (arrays + objects) + _COMMA * commas


def outside_strings(text: bytes, delete: bytes) -> bytes:
    """What is outside ``text``'s strings, in order, less the bytes ``delete`` lists: a
    window of the text at a time (`WINDOW`, one byte more when it ends inside an escape), in
    bounded memory and at C speed however many strings, escapes or backslashes it holds.
    In a window the escapes that move a string's end are taken out first (``\\\\``, then
    ``\\"``, left to right as a decoder pairs them: a window begins on a pair's boundary);
    then a string is a quote to the next, and a window begins inside one when the windows
    before held an odd number of quotes."""
    kept = bytearray()
    inside = False
    start, size = 0, len(text)
    while start < size:
        end = min(start + WINDOW, size)
        window = text[start:end]
        if b"\\" in window:
            if end < size and (len(window) - len(window.rstrip(b"\\"))) % 2:
                end += 1  # its last backslash escapes the next byte
                window = text[start:end]
            window = window.replace(b"\\\\", b"").replace(b'\\"', b"")
        quotes = window.count(b'"')
        if inside:
            window = b'"' + window
        if inside or quotes:
            window = _PLAIN_STRING.sub(b"", window)
        kept += window.translate(None, delete)
        inside = inside != (quotes % 2 == 1)
        start = end
    return bytes(kept)

"""The members of a parsed recording line, checked for type and range before an event is built
from them (finite numbers, whole numbers within `MAX_INT`, strings as strings). Every problem
is a `RecordingError` naming the member."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from typing import Any, Optional

from golem_core.messages import JsonId

from ..events import AnswerOf, Direction, GapCount, RouteDown, ToolCallRef
from ..frame_runs import FrameRuns
from ..terminal import safe_text
from .schema import MAX_INT, RecordingError

WITHHELD = "withheld"
"""First word of a fault's detail when the proxy did not forward the message: how a fault line
written before faults carried ``withheld`` says so."""
_DELAYED = re.compile(r"delayed (\d+) ms")
"""How a ``delay`` fault's ``detail`` says its amount: how a fault line written before faults
carried ``held`` says it (live/faults.py)."""


_ABSENT: Any = object()


def shown(value: Any) -> str:
    """``value`` as JSON, short and safe to print in an error message."""
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) else repr(value)
    return safe_text(text, 40)


def member_int(data: dict[str, Any], key: str, default: Any = _ABSENT) -> int:
    """``data[key]`` as a whole number from 0 to `MAX_INT` (``default`` when absent)."""
    found: int = _member(data, key, default, _is_whole, "a whole number from 0 to 2**53")
    return found


def _is_whole(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT


def _member(
    data: dict[str, Any], key: str, default: Any, valid: Callable[[Any], bool], what: str
) -> Any:
    """``data[key]`` when ``valid`` says it is ``what``, or ``default`` when it is absent.
    Raises RecordingError when it is neither, or absent with no default."""
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        if default is _ABSENT:
            raise RecordingError(f"no {key}")
        return default
    if not valid(value):
        raise RecordingError(f"{key} must be {what}, not {shown(value)}")
    return value


def member_indexes(data: dict[str, Any], key: str) -> tuple[int, ...]:
    """``data[key]``, a list of frame numbers (whole numbers from 0 to `MAX_INT`), as a tuple
    (empty when absent)."""
    found = data.get(key, [])
    if not isinstance(found, list) or not all(_is_whole(index) for index in found):
        raise RecordingError(f"{key} must be a list of whole numbers, not {shown(found)}")
    return tuple(found)


def member_optional_int(data: dict[str, Any], key: str) -> Optional[int]:
    if data.get(key) is None:
        return None
    return member_int(data, key)


def member_number(data: dict[str, Any], key: str, default: float = 0.0) -> float:
    """``data[key]`` as a number of seconds from 0 to 1e12 (``default`` when absent): a time
    on the session's clock, which starts at 0 and never runs backwards."""
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        return default
    if type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= 1e12:
        raise RecordingError(
            f"{key} must be a number of seconds from 0 to 1e12, not {shown(value)}"
        )
    return float(value)


def member_str(data: dict[str, Any], key: str, default: Any = _ABSENT) -> str:
    found: str = _member(data, key, default, _is_str, "a string")
    return found


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def member_optional_str(data: dict[str, Any], key: str) -> Optional[str]:
    if data.get(key) is None:
        return None
    return member_str(data, key)


def member_bool(data: dict[str, Any], key: str, default: Any = _ABSENT) -> bool:
    found: bool = _member(data, key, default, _is_bool, "true or false")
    return found


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


_DIRECTIONS = {direction.value: direction for direction in Direction}


def member_direction(data: dict[str, Any], key: str = "dir") -> Direction:
    value = data.get(key)
    found = _DIRECTIONS.get(value) if isinstance(value, str) else None
    if found is None:
        raise RecordingError(f'{key} must be "c2s" or "s2c", not {shown(value)}')
    return found


def member_directions(data: dict[str, Any], key: str) -> Optional[tuple[Direction, ...]]:
    """``data[key]``, a list of directions (``"c2s"``, ``"s2c"``), as a tuple; None when
    absent. Raises RecordingError for anything else."""
    value = data.get(key)
    if value is None:
        return None
    found = []
    for item in value if isinstance(value, list) else [None]:
        direction = _DIRECTIONS.get(item) if isinstance(item, str) else None
        if direction is None:
            raise RecordingError(f'{key} must be a list of "c2s" and "s2c", not {shown(value)}')
        found.append(direction)
    return tuple(found)


def member_redacted(data: dict[str, Any]) -> tuple[str, ...]:
    """``data["redacted"]``: the paths redaction replaced values at (none when absent)."""
    redacted = data.get("redacted", ())
    if not isinstance(redacted, (list, tuple)) or not all(isinstance(p, str) for p in redacted):
        raise RecordingError("redacted must be a list of strings")
    return tuple(redacted)


def member_base64(data: dict[str, Any], key: str = "raw") -> bytes:
    value = member_str(data, key, "")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RecordingError(f"{key} is not base64") from None


def member_choice(data: dict[str, Any], key: str, choices: tuple[str, ...]) -> str:
    """``data[key]``, which must be one of ``choices``."""
    value = data.get(key)
    if value not in choices or not isinstance(value, str):
        names = " or ".join(choices)
        raise RecordingError(f"{key} must be {names}, not {shown(value)}")
    return value


def fault_held(data: dict[str, Any], fault: str, detail: str) -> Optional[float]:
    """The seconds a ``delay`` fault held its frame (None for another fault, or a delay that
    says no amount). Raises RecordingError for a bad ``held``."""
    if "held" in data:
        return member_number(data, "held")
    if fault != "delay":
        return None
    # Written before faults carried the member: the amount only their words said, read here
    # once so that no view reads words.
    found = _DELAYED.match(detail)
    return None if found is None else int(found.group(1)) / 1000


def member_message_id(data: dict[str, Any]) -> JsonId:
    """A fault's or an intercept step's ``id`` (None when absent): a string or a whole
    number, as a message's id is. Raises RecordingError for another value."""
    ident = data.get("id")
    if ident is None or isinstance(ident, str) or type(ident) is int:
        return ident  # type: ignore[no-any-return]
    raise RecordingError(f"a step's id must be a string or a whole number, not {shown(ident)}")


def member_among(data: dict[str, Any]) -> int:
    """A fault's ``among`` (1 when absent, as in files written before it): how many requests
    waited with the id of the answer it acted on, 1 at least (what the proxy writes). Raises
    RecordingError for a bad one."""
    among = member_int(data, "among", 1)
    if among < 1:
        raise RecordingError("among must be a whole number from 1 (the requests waiting)")
    return among


def fault_withheld(data: dict[str, Any], detail: str) -> bool:
    """Whether a fault line says the proxy did not forward the message."""
    if "withheld" in data:
        return member_bool(data, "withheld")
    return detail.startswith(WITHHELD)  # written before faults carried the member


def member_tool_calls(data: dict[str, Any]) -> Optional[tuple[ToolCallRef, ...]]:
    """A frame's or a close's ``tool_calls`` (None when absent). Raises RecordingError for a
    bad one."""
    calls = data.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise RecordingError("tool_calls must be a list of objects")
    found = []
    named: set[tuple[int, int]] = set()
    for call in calls:
        ident = call.get("id")
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            raise RecordingError(
                f"a tool call's id must be a string or an integer, not {shown(ident)}"
            )
        ref = ToolCallRef(
            conn=member_int(call, "conn"),
            index=member_int(call, "n"),
            id=ident,
            tool=member_str(call, "tool"),
        )
        # One request frame is one call: named twice, the list is no set of calls in flight.
        if (ref.conn, ref.index) in named:
            raise RecordingError(
                f"tool_calls names the call of connection {ref.conn}, frame {ref.index} twice"
            )
        named.add((ref.conn, ref.index))
        found.append(ref)
    return tuple(found)


def member_routes_down(data: dict[str, Any]) -> Optional[tuple[RouteDown, ...]]:
    """A ``tools/call`` frame's ``routes_down`` (None when absent). Raises RecordingError for
    a bad one."""
    found = data.get("routes_down")
    if found is None:
        return None
    if not isinstance(found, list) or not all(isinstance(d, dict) for d in found):
        raise RecordingError("routes_down must be a list of objects")
    routes = []
    for down in found:
        if "since" not in down:
            raise RecordingError("a route in routes_down has no since")
        routes.append(
            RouteDown(route=member_str(down, "route"), since=member_number(down, "since"))
        )
    return tuple(routes)


def member_answer_of(data: dict[str, Any]) -> Optional[AnswerOf]:
    """A ``tools/call`` answer's ``answer_of`` (None when absent). Raises RecordingError for a
    bad one."""
    found = data.get("answer_of")
    if found is None:
        return None
    if not isinstance(found, dict):
        raise RecordingError("answer_of must be an object")
    method, tool = found.get("method"), found.get("tool")
    if not isinstance(method, (str, type(None))) or not isinstance(tool, (str, type(None))):
        raise RecordingError("answer_of's method and tool must be strings or null")
    return AnswerOf(
        route=member_str(found, "route"),
        conn=member_int(found, "conn"),
        index=member_int(found, "n"),
        method=method,
        tool=tool,
    )


def member_frame_runs(data: dict[str, Any]) -> Optional[FrameRuns]:
    """An ``unobserved`` line's ``frames``: ``[[first, last], …]``, whole numbers with first
    ≤ last (None when absent). Raises RecordingError for a bad one."""
    found = data.get("frames")
    if found is None:
        return None
    if not isinstance(found, list) or not all(
        isinstance(run, list)
        and len(run) == 2
        and all(_is_whole(n) for n in run)
        and run[0] <= run[1]
        for run in found
    ):
        raise RecordingError(
            f"frames must be a list of [first, last] frame numbers, not {shown(found)}"
        )
    return tuple((first, last) for first, last in found)


def member_gap_counts(data: dict[str, Any], key: str = "unobserved") -> tuple[GapCount, ...]:
    """A ``session-end`` line's ``unobserved``: the gaps by reason, as `check --json` counts
    them (``{"gaps": …, "bytes": …, "bytes_at_least": …, "by_reason": {REASON: {"gaps": …,
    "bytes": …, "bytes_at_least": …}}}``; the totals, the reasons' sums, are not read); ()
    when absent (no gaps, or a file written before the member). Raises RecordingError for a
    bad one."""
    found = data.get(key)
    if found is None:
        return ()
    by_reason = found.get("by_reason") if isinstance(found, dict) else None
    if not isinstance(by_reason, dict):
        raise RecordingError(f"{key} must be an object with by_reason, not {shown(found)}")
    counts = []
    for reason, tally in by_reason.items():
        if not isinstance(tally, dict):
            raise RecordingError(f"{key}'s by_reason must hold objects, not {shown(tally)}")
        counts.append(
            GapCount(
                reason=reason,
                gaps=member_int(tally, "gaps"),
                bytes=member_int(tally, "bytes"),
                bytes_at_least=member_bool(tally, "bytes_at_least", False),
            )
        )
    return tuple(counts)

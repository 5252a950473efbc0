"""What a replay says of a request it had no recorded answer for: the method is unknown, the
recording holds the request with no answer, its answers are used up, or the nearest recorded
requests and where they differ. `ReplayEngine` makes a miss of it; while `mcp-verify` plays
one tool call again, the text speaks of that call (`explain_scoped`).

Of a trace recorded with ``--redact``, a difference never quotes a live value the recording
kept out of its file: where the recorded request holds ``«redacted»``, and at a place where
another recorded request of the method does (the value there was a secret when recorded;
most likely it is one now, though the build moved or changed it enough that it matched no
wildcard and was never learned).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Optional

from ..live.redact import REDACTED
from ..terminal import safe_text
from .call_scope import CallScope
from .diffing import ABSENT, Comparator, Difference
from .index import Key, RecordedExchange
from .matching import MatchMode
from .redacted_values import holds_placeholder, wildcard_match

if TYPE_CHECKING:
    from .engine import ReplayEngine

__all__ = ["KNOWN_SHOWN", "NEAREST_SCAN", "explain_miss", "explain_scoped"]

NEAREST_SCAN = 500
"""How many recorded exchanges of the same method a miss explanation looks at, at most."""
KNOWN_SHOWN = 8
"""Recorded methods a miss names; it counts the rest."""


def explain_miss(engine: ReplayEngine, route: str, method: str, params: Any, key: Key) -> str:
    """Why nothing matched: the method is unknown, its recorded answers are used up, or
    the nearest recorded requests and where they differ."""
    index = engine.index
    candidates = index.same_method(route, method)
    if index.mode is MatchMode.SEQUENCE:
        expected = index.peek_sequence(route)
        if expected is None:
            return f"no recorded request left on {route} (sequence matching); got {method}"
        return (
            f"sequence mismatch on {route}: expected {expected.label} "
            f"{expected.method}, got {method}"
        )
    if not candidates:
        unanswered = recorded_unanswered(engine, route, method)
        if unanswered is not None:
            return unanswered
        methods = index.methods(route)
        known = ", ".join(methods[:KNOWN_SHOWN]) or "none"
        if len(methods) > KNOWN_SHOWN:
            known += f", … {len(methods) - KNOWN_SHOWN} more"
        return f"no recorded {method} on {route} (recorded methods: {known})"
    if index.last_for(key) is not None:
        hint = f" ({engine.reuse_hint})" if engine.reuse_hint else ""
        return f"every recorded {method} with these params on {route} was already answered{hint}"
    nearest = _nearest(engine, method, params, candidates)
    if not nearest and any(e.too_large(response=False) for e in candidates):
        return (
            f"a recorded {method} on {route} has params too large to parse, which are "
            "never matched by params: serve it with --match method"
        )
    if not nearest:
        return f"no recorded {method} with these params left on {route}"
    return f"no recorded {method} with these params; nearest: {nearest}"


def explain_scoped(
    engine: ReplayEngine, scope: CallScope, route: str, method: str, params: Any, key: Key
) -> str:
    """Why nothing recorded under the call in flight (or under no call) answers the
    request: the call never sent the method, sent it with no answer recorded, sent it fewer
    times, or with other params."""
    if scope.call is None:
        recorded = "the recording (outside any tool call)"
    elif not scope.call.recorded:
        recorded = "no recorded call is this one, and outside any tool call the recording"
    else:
        recorded = "the recorded call"
    candidates = engine.index.same_method(route, method)
    mine = scope.mine(candidates)
    if not mine:
        unanswered = recorded_unanswered(engine, route, method, scope)
        if unanswered is not None:
            return f"{unanswered}; answered with an error"
        elsewhere = scope.recorded_under(candidates)[:3]
        under = ", ".join(call.label for call in elsewhere)
        where = f" (recorded under {under})" if under else ""
        return f"{recorded} never sent {method}{where}; answered with an error"
    used = [e for e in mine if e.number in engine.index.used]
    if engine.index.last_for(key) in used:
        return (
            f"sent more often with these params than {recorded} sent it "
            f"({len(mine)} time(s)); answered with an error"
        )
    nearest = _nearest(engine, method, params, mine)
    said = f": {nearest}" if nearest else ""
    return f"{recorded} sent {method} with other params{said}; answered with an error"


def recorded_unanswered(
    engine: ReplayEngine, route: str, method: str, scope: Optional[CallScope] = None
) -> Optional[str]:
    """What a miss says of a request the trace holds with no answer to serve (its answer
    dropped, too large to observe, never sent): not that it was never recorded. With
    ``scope``, only a request recorded under its call or under none counts. None when the
    trace holds none (or its rows are still being read)."""
    numbering = engine.index.trace.numbering
    rows = numbering.rows_if_free() if numbering is not None else None
    if rows is None:
        return None
    for request in rows.unanswered:
        if request.route != route or request.method != method:
            continue
        if scope is None or scope.holds_row(request.number):
            return (
                f"recorded {method} on {route} (#{request.number}) has no answer in the "
                f"recording to serve: {safe_text(request.status)}"
            )
    return None


def _nearest(
    engine: ReplayEngine, method: str, params: Any, candidates: list[RecordedExchange]
) -> str:
    """The (up to) three of ``candidates`` whose params are nearest ``params``, and where
    each differs; empty when none can be compared."""
    index = engine.index
    comparator = Comparator(float_tolerance=0.0, guids=engine.guids, learn=False)
    live = index.keyer.comparable_params(method, params, engine.guids)
    compared: list[tuple[RecordedExchange, list[Difference]]] = []
    for exchange in candidates[:NEAREST_SCAN]:
        try:
            recorded_params = exchange.request_obj().get("params") or {}
        except (ValueError, AttributeError):
            continue
        recorded = index.keyer.comparable_params(method, recorded_params)
        compared.append((exchange, comparator.compare(recorded, live, method, root=("params",))))
    secret_at = _placeholder_paths(diffs for _, diffs in compared) if engine.redaction else None
    scored: list[tuple[int, int, str]] = []
    for exchange, diffs in compared:
        if secret_at is not None:
            diffs = _redacted_differences(diffs, secret_at)
        if not diffs:
            continue
        where = diffs[0].describe()
        more = f" and {len(diffs) - 1} more" if len(diffs) > 1 else ""
        used = " (already used)" if exchange.number in index.used else ""
        text = f"{exchange.label}{used} differs at {where}{more}"
        scored.append((len(diffs), exchange.number, text))
    scored.sort()
    return "; ".join(text for _, _, text in scored[:3])


def _placeholder_paths(found: Iterable[list[Difference]]) -> frozenset[str]:
    """The places where any recorded request compared holds ``«redacted»`` (a difference
    there names it: the live request cannot hold the placeholder, `live_params` having
    put it back only where the recorded one fits)."""
    return frozenset(
        diff.path
        for diffs in found
        for diff in diffs
        if isinstance(diff.recorded, str) and holds_placeholder(diff.recorded)
    )


def _redacted_differences(diffs: list[Difference], secret_at: frozenset[str]) -> list[Difference]:
    """``diffs`` of a trace recorded with ``--redact``, a recorded ``«redacted»`` read as the
    wildcard it is: no difference where the live value fits it, and where it does not, the
    live value (a secret, most likely) said as ``«redacted»`` too; so is a live value at a
    place ``secret_at`` names (or inside one), whatever the recorded request holds there."""
    kept: list[Difference] = []
    for diff in diffs:
        if isinstance(diff.recorded, str) and holds_placeholder(diff.recorded):
            if wildcard_match(diff.recorded, diff.live) is not None:
                continue
            diff = Difference(diff.path, diff.recorded, REDACTED)
        elif diff.live is not ABSENT and _within(diff.path, secret_at):
            diff = Difference(diff.path, diff.recorded, REDACTED)
        kept.append(diff)
    return kept


def _within(path: str, places: frozenset[str]) -> bool:
    """Whether ``path`` is one of ``places`` or inside one (``a.b.c``, ``a.b[0]`` in ``a.b``)."""
    return any(path == place or path.startswith((place + ".", place + "[")) for place in places)

"""Putting a replay together from options: the trace, the index, the engine, which route is
served where. Shared by the ``replay`` command and the pytest plugin."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from golem_core.profiles import get_profile

from ..net.addresses import Address, parse_address
from ..recording.format import Header, RecordingError, RecordingWriter, RouteInfo
from ..recording.reader import parse_header
from .engine import ReplayEngine
from .index import ExchangeTrace, RecordedExchange, ReplayIndex, load_exchanges
from .matching import IgnoreRules, Keyer, MatchMode, MissPolicy
from .redacted_values import ReplayRedaction

__all__ = [
    "ReplayOptions",
    "assign_routes",
    "build_engine",
    "engine_for",
    "open_record_new",
    "parse_on_miss",
    "parse_timing",
    "recorded_rules",
    "upstreams_for",
]


@dataclass
class ReplayOptions:
    """Everything that shapes a replay, with the command line's defaults."""

    match: MatchMode = MatchMode.METHOD_PARAMS
    ignore: Sequence[str] = ()
    reuse: bool = False
    on_miss: MissPolicy = MissPolicy.ERROR
    timing: Optional[float] = None
    profile: Optional[str] = None
    reuse_hint: Optional[str] = "--reuse repeats the last answer"
    """What a miss on answers used up says the user can do (None: nothing, where reusing is
    no option, as in mcp-verify)."""


def parse_timing(text: str) -> Optional[float]:
    """``none`` → None, ``original`` → 1.0, ``x2``/``x0.5`` → the factor. Raises ValueError."""
    text = text.strip().lower()
    if text == "none":
        return None
    if text == "original":
        return 1.0
    if text.startswith("x"):
        try:
            factor = float(text[1:])
        except ValueError:
            raise ValueError(f"{text!r}: expected none, original or xN (N a number)") from None
        if factor != factor or factor in (float("inf"), float("-inf")):
            raise ValueError(f"{text!r}: the factor must be a finite number")
        if factor < 0:
            raise ValueError("a timing factor cannot be negative")
        return factor
    raise ValueError(f"{text!r}: expected none, original or xN")


def parse_on_miss(text: str) -> tuple[MissPolicy, Optional[Address]]:
    """``error``, ``close`` or ``forward HOST:PORT`` / ``forward=HOST:PORT``."""
    text = text.strip()
    for prefix in ("forward ", "forward="):
        if text.startswith(prefix):
            return MissPolicy.FORWARD, parse_address(text[len(prefix) :])
    if text in ("error", "close", "forward"):
        return MissPolicy(text), None
    raise ValueError(f"{text!r}: expected error, close or forward HOST:PORT")


def build_engine(traces: Sequence[str], options: ReplayOptions) -> ReplayEngine:
    """Load the trace(s) and build the engine. Several files are served as one trace, in the
    order given (their headers must name the same profile). Raises OSError, RecordingError,
    ValueError."""
    return engine_for(_merge([load_exchanges(path) for path in traces]), options)


def engine_for(trace: ExchangeTrace, options: ReplayOptions) -> ReplayEngine:
    """The engine serving ``trace`` under ``options``. Raises ValueError for a bad option."""
    profile = get_profile(options.profile) if options.profile else trace.profile
    keyer = Keyer(options.match, IgnoreRules.parse(options.ignore))
    index = ReplayIndex(trace, keyer, reuse=options.reuse)
    return ReplayEngine(
        index,
        profile=profile,
        on_miss=options.on_miss,
        timing=options.timing,
        reuse_hint=options.reuse_hint,
        redaction=ReplayRedaction(trace.profile, trace.header.redact),
    )


def _merge(traces: list[ExchangeTrace]) -> ExchangeTrace:
    first = traces[0]
    if len(traces) == 1:
        return first
    exchanges: list[RecordedExchange] = []
    for trace in traces:
        if trace.header.profile != first.header.profile:
            raise ValueError(
                f"traces mix profiles ({first.header.profile} and {trace.header.profile})"
            )
        if trace.numbering is not None:  # a row number is its own file's: say which
            trace.numbering.name = trace.path
        for exchange in trace.exchanges:
            exchange.number = len(exchanges) + 1
            exchanges.append(exchange)
    routes = {route.name: route for trace in traces for route in trace.header.routes}
    # Every file's redaction rules: a value one of them kept out is a secret in all.
    redact = dict.fromkeys(rule for trace in traces for rule in trace.header.redact)
    header = Header(
        first.header.profile, tuple(routes.values()), first.header.started_at, redact=tuple(redact)
    )
    return ExchangeTrace(header, first.profile, exchanges, any(t.truncated_tail for t in traces))


def assign_routes(trace: ExchangeTrace, listen: Address, gh_listen: Address) -> dict[str, Address]:
    """Trace route name → where to serve it, main listener first: the profile's main channel
    on ``listen``, its second channel (GOLEM's ``gh``) on ``gh_listen``; a trace with one route
    (not the second channel) serves it on ``listen``, and still opens the second channel when
    the profile has one (as the GOLEM plugin does; a JSON-RPC app has a single socket). Raises
    ValueError for a trace whose routes cannot be placed."""
    channels = trace.profile.channels
    second = trace.profile.second_channel
    # One pass: a hostile trace may name a new route on every exchange.
    used = {exchange.route for exchange in trace.exchanges}
    names = [name for name in trace.routes if name in used]
    if not names:
        names = [route.name for route in trace.header.routes][:1] or [channels[0]]
    if len(names) == 1 and names[0] != second:
        if second is None:
            return {names[0]: listen}
        return {names[0]: listen, second: gh_listen}
    unknown = [name for name in names if name not in channels[:2]]
    if unknown or second is None:
        raise ValueError(
            f"cannot place routes {', '.join(unknown or names)}: a multi-route trace needs "
            f"routes named {' and '.join(channels[:2])}"
        )
    return {channels[0]: listen, second: gh_listen}


def upstreams_for(
    listen: dict[str, Address], main: Optional[Address], gh: Optional[Address]
) -> dict[str, Address]:
    """Route name → live plugin for forwarding: the route served on the main listener goes to
    ``main``, the one on the Grasshopper listener to ``gh`` (`assign_routes` order)."""
    found: dict[str, Address] = {}
    for route, live in zip(listen, (main, gh)):
        if live is not None:
            found[route] = live
    return found


def open_record_new(
    path: str, engine: ReplayEngine, upstreams: dict[str, Address], *, overwrite: bool = True
) -> RecordingWriter:
    """A writer for the exchanges a forwarding replay fetched from the live plugin; it ends
    with a ``session-end`` line when the replay ends in order (`ReplayServer.end_recording`).
    Its header names the trace's redaction rules, which the server applies to what it writes
    (`ReplayEngine.redaction`). Without ``overwrite`` an existing ``path`` is refused
    (FileExistsError)."""
    routes = [RouteInfo(name, "replay", str(address)) for name, address in upstreams.items()]
    header = Header.new(
        engine.profile.name, routes, engine.redaction.rules, ends_with_session_end=True
    )
    return RecordingWriter.create(path, header, overwrite=overwrite)


def recorded_rules(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The ``--redact`` rules in the header of the recording at ``path``, which a recording
    made to replace it or to be appended to it must apply (none when there is no such file,
    or no header to read). Raises RecordingError, naming the file, for a header that names
    rules and is refused: re-recorded without them, a secret it kept out would be written."""
    try:
        with open(path, "rb") as stream:
            first = stream.readline()
    except OSError:
        return ()
    try:
        header, _ = parse_header(first)
    except RecordingError as exc:
        if _names_rules(first):
            raise exc.at(os.fspath(path)) from None
        return ()
    return header.redact


def _names_rules(first: bytes) -> bool:
    try:
        data = json.loads(first)
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data.get("redact"))

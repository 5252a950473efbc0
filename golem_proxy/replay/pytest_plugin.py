"""pytest plugin: replay a recorded trace as the plugin for one test, VCR style.

    @pytest.mark.golem_trace("traces/session.jsonl", ignore=["scene.create_layer:params.name"])
    def test_session(golem_replay):
        client = GolemClient(golem_replay.host, golem_replay.port)

The ``golem_replay`` fixture starts a replay server for the marked trace in a background thread
(so sync and trio tests alike can use it) and yields its addresses. ``--golem-record`` picks the
mode, as VCR.py's record modes do:

* ``none`` (default): replay only. A request the trace does not know gets the miss error, and
  the test fails (once) listing every miss. A trace that does not exist stops the run with a
  usage error before any test runs.
* ``new``: misses go to the live plugin given by ``--golem-live`` and the new exchanges are
  appended to the trace after the test.
* ``all``: every request goes to the live plugin and the trace is rewritten from scratch by
  the tests of the run that name it, each adding its exchanges in turn. The new trace is
  written aside (next to the old one) and takes its place when the last of those tests ends,
  only when every one that ran re-recorded it: passed, and every request reached the live
  plugin. Otherwise the old trace is kept, byte for byte, and the failed test's report says
  so; the run's summary says of each trace what became of it, and which tests naming it did
  not run (deselected, skipped: their exchanges are no longer in it). Refused under
  pytest-xdist workers (`golem_proxy.replay.rerecord`).

A trace recorded with ``--redact`` is served as ``replay`` serves it (a recorded
``«redacted»`` matches any live value, and no miss prints the value), and ``new`` and ``all``
record under its header's rules.

The ``golem_mcp_session`` fixture (`golem_proxy.replay.pytest_mcp`) does the same for a whole
MCP server, its tool calls checked against a two-layer recording.

Recorded exchanges that no test sharing the trace asked for are reported once per trace, as a
`GolemUnusedExchangesWarning` when the last of those tests ends; ``golem_trace(...,
strict_unused=True)`` fails a test that leaves exchanges of its trace unused.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest

from golem_core.profiles import get_profile

from ..net.addresses import Address, parse_address
from ..recording.format import Header, RecordingError, RouteInfo
from ..terminal import counted
from .background import BackgroundReplay
from .engine import BUILTINS, ReplayEngine, summary
from .index import ExchangeTrace, RecordedExchange, load_exchanges
from .matching import MatchMode, MissPolicy
from .merge import append_recording
from .pytest_mcp import MARKER_HELP as MCP_MARKER_HELP
from .pytest_mcp import GolemMcpSession, golem_mcp_session
from .rerecord import PLUGIN_NAME, RerecordRun, aside_file, refuse_xdist
from .row_numbers import row_label
from .server import ReplayServer
from .setup import (
    ReplayOptions,
    assign_routes,
    engine_for,
    open_record_new,
    parse_timing,
    recorded_rules,
    upstreams_for,
)
from .state_order import warn_ahead

__all__ = ["GolemReplay", "GolemTraceWarning", "GolemUnusedExchangesWarning", "golem_mcp_session"]

RECORD_MODES = ("none", "new", "all")
_MARKER = "golem_trace"


@dataclass
class _TraceUse:
    """One trace shared by several tests of the run: how many have yet to end, and the
    exchanges none of the finished ones asked for (None before the first one ends)."""

    remaining: int
    unused: Optional[dict[int, RecordedExchange]] = None
    """The exchanges no test sharing the trace used so far, by their place in it."""


_USES = pytest.StashKey[dict[str, _TraceUse]]()
_RERECORD = pytest.StashKey[RerecordRun]()
_MISSES_REPORTED = "misses_reported"
_UNUSED_REPORTED = "unused_reported"


class GolemUnusedExchangesWarning(UserWarning):
    """The test did not ask for some recorded exchanges."""


class GolemTraceWarning(UserWarning):
    """Appending to the trace left out a line of it no reader took (the old file is kept)."""


@dataclass
class GolemReplay:
    """What the ``golem_replay`` fixture yields: where the stand-in plugin listens."""

    main: Address
    gh: Address
    trace: str
    mode: str
    engine: ReplayEngine
    _extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def host(self) -> str:
        return self.main.host

    @property
    def port(self) -> int:
        return self.main.port

    @property
    def gh_port(self) -> int:
        return self.gh.port

    @property
    def env(self) -> dict[str, str]:
        """Environment for a GOLEM MCP server process pointed at this replay."""
        return {
            "GOLEM_RHINO_HOST": self.main.host,
            "GOLEM_RHINO_PORT": str(self.main.port),
            "GOLEM_GH_PORT": str(self.gh.port),
        }

    def summary(self) -> dict[str, Any]:
        """Requests served, misses and unused exchanges so far."""
        return summary(self.engine)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("golem", "golem-proxy trace replay")
    group.addoption(
        "--golem-record",
        choices=RECORD_MODES,
        default="none",
        help="none: replay only; new: add missing exchanges from --golem-live; "
        "all: re-record every trace from --golem-live",
    )
    group.addoption("--golem-live", metavar="HOST:PORT", help="live plugin, main channel")
    group.addoption("--golem-live-gh", metavar="HOST:PORT", help="live plugin, Grasshopper")


def pytest_configure(config: pytest.Config) -> None:
    mode = config.getoption("--golem-record")
    _live(config, mode)  # a bad combination stops the run early
    if mode == "all":
        refuse_xdist(config)
        # By marker, not by fixture: a test may take golem_replay with getfixturevalue.
        rerecord = config.stash[_RERECORD] = RerecordRun(_trace_path)
        config.pluginmanager.register(rerecord, PLUGIN_NAME)
    config.addinivalue_line(
        "markers",
        "golem_trace(path, *, match='method-params', ignore=(), reuse=False, timing='none', "
        "strict_unused=False): the trace the golem_replay fixture serves",
    )
    config.addinivalue_line("markers", MCP_MARKER_HELP)


def _trace_path(item: pytest.Item) -> Optional[Path]:
    """The trace of ``item``'s ``golem_trace`` marker (relative to the test file), or None."""
    marker = item.get_closest_marker(_MARKER)
    if marker is None or not marker.args:
        return None
    path = Path(marker.args[0])
    return path if path.is_absolute() else Path(item.path).parent / path


def _replayed_trace(item: pytest.Item) -> Optional[Path]:
    """The trace ``item`` replays with ``golem_replay``, or None."""
    if "golem_replay" not in getattr(item, "fixturenames", ()):
        return None
    return _trace_path(item)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Check that every selected test's trace exists (a typo is a usage error, not a
    FileNotFoundError per test) and count the tests sharing each trace."""
    mode = session.config.getoption("--golem-record")
    uses: dict[str, _TraceUse] = {}
    missing: list[str] = []
    for item in session.items:
        path = _replayed_trace(item)
        if path is None:
            continue
        if mode == "none" and not path.is_file():
            missing.append(f"{path} (for {item.nodeid})")
        uses.setdefault(str(path), _TraceUse(0)).remaining += 1
    session.config.stash[_USES] = uses
    if missing:
        raise pytest.UsageError(
            f"golem_trace: no such trace: {'; '.join(missing)} "
            "(record one with --golem-record=new --golem-live HOST:PORT)"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Misses (and, with ``strict_unused``, unused exchanges) fail the test itself, once: a
    passing test becomes a failure listing them, a failing one (the client saw the miss
    error) gets them as a section of its report. Not a second failure at teardown."""
    outcome = yield
    if call.when != "call":
        return
    problems: list[str] = []
    session = getattr(item, "funcargs", {}).get("golem_mcp_session")
    if isinstance(session, GolemMcpSession) and session.mode == "record":
        kept = session.note_outcome(outcome.get_result().passed)
        if kept:
            outcome.get_result().sections.append(("golem_mcp_session", kept))
    elif isinstance(session, GolemMcpSession):
        verdict = session.judge()
        if verdict:
            problems.append(verdict)
    handle = getattr(item, "funcargs", {}).get("golem_replay")
    if isinstance(handle, GolemReplay) and handle.mode != "all":
        problems += _replay_problems(item, handle)
    if not problems:
        return
    report = outcome.get_result()
    text = "\n".join(problems)
    if report.passed:
        report.outcome = "failed"
        report.longrepr = text
    elif report.failed:
        report.sections.append(("golem replay", text))


def _replay_problems(item: pytest.Item, handle: GolemReplay) -> list[str]:
    misses = _misses(handle)
    problems: list[str] = []
    if handle.mode == "none" and misses:
        problems.append(_misses_text(handle, misses))
        handle._extra[_MISSES_REPORTED] = len(misses)
    marker = item.get_closest_marker(_MARKER)
    unused = _unused_exchanges(handle)
    if marker is not None and marker.kwargs.get("strict_unused") and unused:
        problems.append(f"golem replay of {handle.trace}: {_unused_text(unused)}")
        handle._extra[_UNUSED_REPORTED] = True
    return problems


@pytest.fixture
def golem_replay(request: pytest.FixtureRequest) -> Iterator[GolemReplay]:
    """A replay server for the test's ``golem_trace`` marker (see the module docstring)."""
    path = _trace_path(request.node)
    if path is None:
        raise pytest.UsageError("golem_replay needs @pytest.mark.golem_trace('path.jsonl')")
    options = dict(request.node.get_closest_marker(_MARKER).kwargs)
    mode = request.config.getoption("--golem-record")
    live = _live(request.config, mode)
    try:
        engine = _engine(str(path), mode, options)
    except (OSError, RecordingError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        pytest.fail(f"golem_trace: cannot read {path}: {reason}", pytrace=False)
    except ValueError as exc:  # a bad match, ignore or timing option of the marker
        pytest.fail(f"golem_trace options: {exc}", pytrace=False)
    listen = assign_routes(engine.index.trace, Address("127.0.0.1", 0), Address("127.0.0.1", 0))
    upstreams = upstreams_for(listen, live.get("main"), live.get("gh"))
    record_path: Optional[str] = None
    recorder = None
    rerecord = request.config.stash.get(_RERECORD, None)
    if rerecord is not None:
        record_path = rerecord.join(str(path), request.node.nodeid)
    elif mode == "new":
        record_path = aside_file(str(path), ".new")
    if record_path is not None:
        recorder = open_record_new(record_path, engine, upstreams)
    server = ReplayServer(engine, listen, upstreams=upstreams, record_new=recorder)
    runner = BackgroundReplay(server)
    bound = runner.start()
    names = list(bound)
    handle = GolemReplay(bound[names[0]], bound[names[-1]], str(path), mode, engine)
    not_stored: Optional[str] = None
    try:
        yield handle
    finally:
        runner.stop()
        engine.index.trace.close()
        if recorder is not None:
            server.end_recording("the test finished")
            recorder.close()
        if record_path is not None and rerecord is not None:
            not_stored = rerecord.recorded(request.node.nodeid, record_path, engine.report)
        elif record_path is not None:
            not_stored = _append_new(str(path), record_path, engine)
    if not_stored is not None:
        pytest.fail(not_stored, pytrace=False)
    warn_ahead(engine.order, str(path))  # out of recorded order: a warning, not a miss
    _judge(request.config, handle, mode, bool(options.get("strict_unused", False)))


def _live(config: pytest.Config, mode: str) -> dict[str, Address]:
    if mode == "none":
        return {}
    text = config.getoption("--golem-live")
    if not text:
        raise pytest.UsageError(f"--golem-record={mode} needs --golem-live HOST:PORT")
    live = {"main": _live_address("--golem-live", text)}
    gh = config.getoption("--golem-live-gh")
    if gh:
        live["gh"] = _live_address("--golem-live-gh", gh)
    return live


def _live_address(option: str, text: str) -> Address:
    try:
        return parse_address(text)
    except ValueError as exc:
        raise pytest.UsageError(f"{option}: {exc}") from None


def _engine(path: str, mode: str, options: dict[str, Any]) -> ReplayEngine:
    if mode == "all" or (mode == "new" and not os.path.exists(path)):
        # Re-recorded under the old trace's redaction rules: a secret it kept out stays out.
        trace = _empty_trace(options.get("profile", "golem"), recorded_rules(path))
    else:
        trace = load_exchanges(path)
    return engine_for(
        trace,
        ReplayOptions(
            match=MatchMode(options.get("match", "method-params")),
            ignore=_strings(options.get("ignore", ())),
            reuse=bool(options.get("reuse", False)),
            on_miss=MissPolicy.ERROR if mode == "none" else MissPolicy.FORWARD,
            timing=parse_timing(str(options.get("timing", "none"))),
            reuse_hint="golem_trace(..., reuse=True) repeats the last answer",
        ),
    )


def _strings(value: Any) -> Sequence[str]:
    return [value] if isinstance(value, str) else list(value)


def _empty_trace(profile_name: str, redact: Sequence[str]) -> ExchangeTrace:
    routes = (RouteInfo("main", "replay", "live"), RouteInfo("gh", "replay", "live"))
    return ExchangeTrace(Header.new(profile_name, routes, redact), get_profile(profile_name), [])


def _append_new(path: str, recorded: str, engine: ReplayEngine) -> Optional[str]:
    """Append what a ``new``-mode test recorded to its trace; the file written aside is
    removed. Returns why the new exchanges could not be appended (the trace then left as it
    was), or None."""
    try:
        if engine.report.recorded_new:
            appended = append_recording(path, recorded)
            if appended.left_out is not None:
                warnings.warn(GolemTraceWarning(appended.left_out), stacklevel=1)
    except (OSError, RecordingError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        kept = "it is left as it was, without what the test recorded"
        return f"golem_trace: cannot write {path} ({reason}); {kept}"
    finally:
        if os.path.exists(recorded):
            os.unlink(recorded)
    return None


def _misses_text(handle: GolemReplay, misses: list[dict[str, Any]]) -> str:
    lines = [f"golem replay of {handle.trace}: {counted(len(misses), 'request')} missed"]
    lines += [f"  {m['route']} {m['method']}: {m['message']}" for m in misses]
    return "\n".join(lines)


def _misses(handle: GolemReplay) -> list[dict[str, Any]]:
    """The handle's misses so far, as the report lists them (its whole summary would read
    the trace for the unused exchanges' row numbers)."""
    return [miss.to_json() for miss in handle.engine.misses()]


def _unused_exchanges(handle: GolemReplay) -> dict[int, RecordedExchange]:
    """The recorded exchanges the handle's replay has not used (built-ins left out, as the
    report leaves them), by their place in the trace, the same for every test that loads it:
    their row numbers are read only when they are printed (`_unused_text`), not once a test."""
    engine = handle.engine
    found = engine.index.unused(exclude=BUILTINS if engine.builtins else ())
    return {exchange.number: exchange for exchange in found}


UNUSED_SHOWN = 20
"""Unused exchanges a message names; it counts the rest."""


def _unused_text(unused: dict[int, RecordedExchange]) -> str:
    # A row is None where it cannot be told (its file changed since it was loaded): last.
    ordered = sorted(unused.values(), key=lambda e: (e.row is None, e.row or 0, e.number))
    shown = ", ".join(f"{row_label(e.row)} {e.route} {e.method}" for e in ordered[:UNUSED_SHOWN])
    if len(ordered) > UNUSED_SHOWN:
        shown += f", … and {len(ordered) - UNUSED_SHOWN} more"
    return f"{counted(len(unused), 'recorded exchange')} unused: {shown}"


def _judge(config: pytest.Config, handle: GolemReplay, mode: str, strict_unused: bool) -> None:
    misses = _misses(handle)[handle._extra.get(_MISSES_REPORTED, 0) :]
    if mode == "none" and misses:  # left for the teardown: missed after the test's own end
        pytest.fail(_misses_text(handle, misses), pytrace=False)
    if mode == "all":
        return
    unused = _unused_exchanges(handle)
    if strict_unused and unused and not handle._extra.get(_UNUSED_REPORTED):
        pytest.fail(f"golem replay of {handle.trace}: {_unused_text(unused)}", pytrace=False)
    use = config.stash.get(_USES, {}).get(handle.trace)
    if use is None:  # not counted at collection (e.g. requested dynamically): judge alone
        use = _TraceUse(1)
    use.remaining -= 1
    if use.unused is None:
        use.unused = unused
    else:
        use.unused = {n: m for n, m in use.unused.items() if n in unused}
    if use.remaining <= 0 and use.unused:
        # Once per trace, when the last test sharing it ends: what no test asked for.
        message = f"{handle.trace}: {_unused_text(use.unused)}"
        warnings.warn(GolemUnusedExchangesWarning(message), stacklevel=1)

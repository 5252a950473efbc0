"""pytest plugin: replay a recorded trace as the plugin for one test, VCR style.

    @pytest.mark.golem_trace("traces/session.jsonl", ignore=["scene.create_layer:params.name"])
    def test_session(golem_replay):
        client = GolemClient(golem_replay.host, golem_replay.port)

The ``golem_replay`` fixture starts a replay server for the marked trace in a background thread
(so sync and trio tests alike can use it) and yields its addresses. ``--golem-record`` picks the
mode, as VCR.py's record modes do:

* ``none`` (default): replay only. A request the trace does not know gets the miss error, and
  the test fails at teardown listing every miss.
* ``new``: misses go to the live plugin given by ``--golem-live`` and the new exchanges are
  appended to the trace after the test.
* ``all``: every request goes to the live plugin and the trace is rewritten from scratch.

Recorded exchanges the test never asked for are reported as a `GolemUnusedExchangesWarning`, or
fail the test with ``golem_trace(..., strict_unused=True)``.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest

from golem_core.profiles import get_profile

from ..net.addresses import Address, parse_address
from ..recording.format import Header, RouteInfo
from .background import BackgroundReplay
from .engine import ReplayEngine, summary
from .index import ExchangeTrace, load_exchanges
from .matching import MatchMode
from .merge import append_recording
from .server import ReplayServer
from .setup import (
    ReplayOptions,
    assign_routes,
    engine_for,
    open_record_new,
    parse_timing,
    upstreams_for,
)

__all__ = ["GolemReplay", "GolemUnusedExchangesWarning"]

RECORD_MODES = ("none", "new", "all")


class GolemUnusedExchangesWarning(UserWarning):
    """The test did not ask for some recorded exchanges."""


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
    _live(config, config.getoption("--golem-record"))  # a bad combination stops the run early
    config.addinivalue_line(
        "markers",
        "golem_trace(path, *, match='method-params', ignore=(), reuse=False, timing='none', "
        "strict_unused=False): the trace the golem_replay fixture serves",
    )


@pytest.fixture
def golem_replay(request: pytest.FixtureRequest) -> Iterator[GolemReplay]:
    """A replay server for the test's ``golem_trace`` marker (see the module docstring)."""
    marker = request.node.get_closest_marker("golem_trace")
    if marker is None or not marker.args:
        raise pytest.UsageError("golem_replay needs @pytest.mark.golem_trace('path.jsonl')")
    path = Path(marker.args[0])
    if not path.is_absolute():
        path = Path(request.node.path).parent / path
    options = dict(marker.kwargs)
    mode = request.config.getoption("--golem-record")
    live = _live(request.config, mode)
    engine = _engine(str(path), mode, options)
    listen = assign_routes(engine.index.trace, Address("127.0.0.1", 0), Address("127.0.0.1", 0))
    upstreams = upstreams_for(listen, live.get("main"), live.get("gh"))
    record_path: Optional[str] = None
    recorder = None
    if mode != "none":
        fd, record_path = tempfile.mkstemp(prefix="golem-new-", suffix=".jsonl")
        os.close(fd)
        recorder = open_record_new(record_path, engine, upstreams)
    server = ReplayServer(engine, listen, upstreams=upstreams, record_new=recorder)
    runner = BackgroundReplay(server)
    bound = runner.start()
    names = list(bound)
    handle = GolemReplay(bound[names[0]], bound[names[-1]], str(path), mode, engine)
    try:
        yield handle
    finally:
        runner.stop()
        engine.index.trace.close()
        if recorder is not None:
            recorder.close()
        if record_path is not None:
            _store(str(path), record_path, mode, engine)
    _judge(handle, mode, bool(options.get("strict_unused", False)))


def _live(config: pytest.Config, mode: str) -> dict[str, Address]:
    if mode == "none":
        return {}
    text = config.getoption("--golem-live")
    if not text:
        raise pytest.UsageError(f"--golem-record={mode} needs --golem-live HOST:PORT")
    live = {"main": parse_address(text)}
    gh = config.getoption("--golem-live-gh")
    if gh:
        live["gh"] = parse_address(gh)
    return live


def _engine(path: str, mode: str, options: dict[str, Any]) -> ReplayEngine:
    if mode == "all" or (mode == "new" and not os.path.exists(path)):
        trace = _empty_trace(options.get("profile", "golem"))
    else:
        trace = load_exchanges(path)
    return engine_for(
        trace,
        ReplayOptions(
            match=MatchMode(options.get("match", "method-params")),
            ignore=_strings(options.get("ignore", ())),
            reuse=bool(options.get("reuse", False)),
            on_miss="error" if mode == "none" else "forward",
            timing=parse_timing(str(options.get("timing", "none"))),
        ),
    )


def _strings(value: Any) -> Sequence[str]:
    return [value] if isinstance(value, str) else list(value)


def _empty_trace(profile_name: str) -> ExchangeTrace:
    routes = (RouteInfo("main", "replay", "live"), RouteInfo("gh", "replay", "live"))
    return ExchangeTrace(Header.new(profile_name, routes), get_profile(profile_name), [])


def _store(path: str, recorded: str, mode: str, engine: ReplayEngine) -> None:
    try:
        if mode == "all":
            os.replace(recorded, path)
        elif engine.report.recorded_new:
            append_recording(path, recorded)
    finally:
        if os.path.exists(recorded):
            os.unlink(recorded)


def _judge(handle: GolemReplay, mode: str, strict_unused: bool) -> None:
    report = handle.summary()
    if mode == "none" and report["misses"]:
        lines = [f"golem replay of {handle.trace}: {len(report['misses'])} request(s) missed"]
        lines += [f"  {m['route']} {m['method']}: {m['message']}" for m in report["misses"]]
        pytest.fail("\n".join(lines), pytrace=False)
    if mode != "all" and report["unused"]:
        text = ", ".join(f"#{u['number']} {u['method']}" for u in report["unused"][:20])
        message = f"{len(report['unused'])} recorded exchange(s) unused: {text}"
        if strict_unused:
            pytest.fail(f"golem replay of {handle.trace}: {message}", pytrace=False)
        warnings.warn(GolemUnusedExchangesWarning(message), stacklevel=1)

"""The ``golem_mcp_session`` fixture of the pytest plugin: regression-test an MCP server with
the test's own MCP client, Rhino stood in by a recording, in the plugin's record modes.

    @pytest.mark.golem_mcp_session("sessions/layers.jsonl", command=[sys.executable, "server.py"])
    def test_layers(golem_mcp_session):
        run_my_client(golem_mcp_session.command)  # the MCP server command to start

``command`` is the server wrapped in ``golem-proxy mcp``, so the session the test drives is
recorded with both layers. After the test, by ``--golem-record``:

* ``none`` (default): the wrapper's GOLEM side is a stand-in serving the recording's GOLEM
  layer, each tool call from the exchanges recorded under it (the wrapper tells it which
  call is in flight: `call_follow`); every tool call the test made is compared with its
  like in the recording, aligned as `diff` aligns them (GUID-aware, inside JSON text,
  ``ignore=`` paths left out as ``TOOL:result.x``), and a difference, a GOLEM request the
  recording cannot answer (named by the call that sent it), or a missing recording fails
  the test;
* ``new``: a missing recording is recorded from the live plugin (``--golem-live``); an
  existing one is checked as in ``none``;
* ``all``: the session is recorded afresh from the live plugin, replacing the recording.

A recording is written only from a test that passed: a failed test keeps the old one (or
writes none), and its report names where its own run's recording was left. A recording made
with ``--redact`` stays so: the wrapper records under its header's rules, in every mode, so
neither a re-recording nor a failure's text holds a value they kept out.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from ..analysis.trace import TraceError
from ..analysis.two_layers import read_tool_calls, read_two_layers
from ..net.addresses import Address, parse_address
from ..recording.files import replacing
from ..recording.format import RecordingError
from ..recording.trace_lock import trace_lock
from .background import BackgroundReplay
from .call_follow import CallFollower
from .call_scope import CallScopes
from .diffing import Comparator
from .engine import MissRecord
from .index import load_exchanges
from .matching import IgnoreRules
from .mcp_descriptions import compare_descriptions, descriptions_text
from .mcp_script import NoMcpLayer, read_script
from .mcp_verify import McpCheck
from .server import ReplayServer
from .setup import ReplayOptions, assign_routes, engine_for, recorded_rules
from .state_order import warn_ahead
from .tool_call_diff import compare_sessions

__all__ = ["MARKER", "GolemMcpSession", "golem_mcp_session"]

MARKER = "golem_mcp_session"
MARKER_HELP = (
    "golem_mcp_session(path, *, command, ignore=(), float_tolerance=0.0): the recording and "
    "the MCP server command of the golem_mcp_session fixture"
)
ANY_PORT = Address("127.0.0.1", 0)


@dataclass
class GolemMcpSession:
    """What the fixture yields: the command to start as the MCP server, and what it does."""

    command: list[str]
    """``golem-proxy mcp … -- SERVER``: give it to the MCP client as the server command."""
    recording: str
    """The recording this test is checked against (or records)."""
    mode: str
    """``replay`` (checked against the recording) or ``record`` (recorded from live)."""
    written: str
    """Where the wrapper records this run."""
    _check: Optional[Callable[[], str]] = field(default=None, repr=False)
    _passed: Optional[bool] = field(default=None, repr=False)

    def judge(self) -> str:
        """What differs from the recording (the text a failure shows; empty when nothing
        does), once: the plugin asks when the test's call ends, the fixture at teardown."""
        check, self._check = self._check, None
        return check() if check is not None else ""

    def note_outcome(self, passed: bool) -> str:
        """Remember whether the recording test passed (only then is its recording stored);
        for a failed one, what its report says of the recording: kept, and where this run's
        went."""
        self._passed = passed
        if passed:
            return ""
        kept = "the old one is kept" if os.path.exists(self.recording) else "none was written"
        return (
            f"golem_mcp_session: the test failed, so {self.recording} was not recorded "
            f"({kept}); this run's recording: {self.written}"
        )


def _marker_options(request: pytest.FixtureRequest) -> tuple[Path, dict[str, Any]]:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None or not marker.args:
        raise pytest.UsageError(
            "golem_mcp_session needs @pytest.mark.golem_mcp_session('path.jsonl', command=[...])"
        )
    path = Path(marker.args[0])
    path = path if path.is_absolute() else Path(request.node.path).parent / path
    options = dict(marker.kwargs)
    command = options.get("command")
    if not command or isinstance(command, str) or not all(isinstance(w, str) for w in command):
        raise pytest.UsageError("golem_mcp_session: command= must be a list of strings")
    return path, options


def _live(config: pytest.Config) -> tuple[Address, Optional[Address]]:
    text = config.getoption("--golem-live")
    if not text:
        mode = config.getoption("--golem-record")
        raise pytest.UsageError(f"--golem-record={mode} needs --golem-live HOST:PORT")
    gh = config.getoption("--golem-live-gh")
    try:
        return parse_address(text), parse_address(gh) if gh else None
    except ValueError as exc:
        raise pytest.UsageError(f"--golem-live: {exc}") from None


def _wrapper(
    server: Sequence[str],
    record: str,
    main: Address,
    gh: Address,
    redact: Sequence[str],
    feed: Optional[Address] = None,
) -> list[str]:
    rules = [word for rule in redact for word in ("--redact", rule)]
    rules += ["--call-feed", str(feed)] if feed is not None else []
    return [
        sys.executable,
        "-m",
        "golem_proxy",
        "mcp",
        "--quiet",
        "--overwrite",
        "--record",
        record,
        "--upstream",
        str(main),
        "--gh-upstream",
        str(gh),
        *rules,
        "--",
        *server,
    ]


@pytest.fixture
def golem_mcp_session(request: pytest.FixtureRequest) -> Iterator[GolemMcpSession]:
    """The MCP server of the test's ``golem_mcp_session`` marker, wrapped and recorded; see
    the module docstring for what happens after the test."""
    path, options = _marker_options(request)
    record_mode = request.config.getoption("--golem-record")
    recording = record_mode == "all" or (record_mode == "new" and not path.exists())
    fd, written = tempfile.mkstemp(prefix="golem-mcp-", suffix=".jsonl")
    os.close(fd)
    session: Optional[GolemMcpSession] = None
    try:
        if recording:
            main, gh = _live(request.config)
            try:
                rules = recorded_rules(path)  # re-recorded as redacted as it was
            except RecordingError as exc:
                pytest.fail(f"golem_mcp_session: cannot read {exc}", pytrace=False)
            gh = gh or Address(main.host, 9877)
            command = _wrapper(options["command"], written, main, gh, rules)
            session = GolemMcpSession(command, str(path), "record", written)
            yield session
            if session._passed:
                _store(written, path)
        else:
            yield from _replayed(path, options, written)
    finally:
        # A failed test's recording is left where its report says (`note_outcome`).
        if os.path.exists(written) and (session is None or session._passed is not False):
            os.unlink(written)


def _replayed(path: Path, options: dict[str, Any], written: str) -> Iterator[GolemMcpSession]:
    if not path.is_file():
        pytest.fail(
            f"golem_mcp_session: no such recording: {path} "
            "(record one with --golem-record=new --golem-live HOST:PORT)",
            pytrace=False,
        )
    try:
        comparator = Comparator(
            IgnoreRules.parse(_strings(options.get("ignore", ()))),
            float_tolerance=float(options.get("float_tolerance", 0.0)),
        )
        trace = load_exchanges(str(path))
        layers = read_two_layers(str(path))
        recorded = layers.tool_calls
    except (OSError, RecordingError, TraceError) as exc:
        pytest.fail(f"golem_mcp_session: cannot read {path}: {exc}", pytrace=False)
    except ValueError as exc:
        pytest.fail(f"golem_mcp_session options: {exc}", pytrace=False)
    engine = engine_for(trace, ReplayOptions(reuse_hint=None))
    # The wrapper tells the stand-in each tool call as it passes: each is served the GOLEM
    # exchanges recorded under it, never another call's (`call_follow`).
    follower = CallFollower(engine, CallScopes.of(layers, trace))
    server = ReplayServer(engine, assign_routes(trace, ANY_PORT, ANY_PORT))
    runner = BackgroundReplay(server, beside=[follower.serve])
    bound = list(runner.start().values())
    # Recorded under the recording's rules: a failure's text quotes no value they kept out.
    redact = trace.header.redact
    command = _wrapper(options["command"], written, bound[0], bound[-1], redact, follower.address)
    session = GolemMcpSession(command, str(path), "replay", written)

    def check() -> str:
        misses = [f"  {_miss_text(miss)}" for miss in engine.misses()]
        try:
            live = read_tool_calls(written)
            told = compare_descriptions(read_script(str(path)), read_script(written), comparator)
        except (OSError, RecordingError, TraceError, NoMcpLayer) as exc:
            return f"golem_mcp_session: the wrapper left no readable recording ({exc})"
        # What the server tells the model (initialize, tools/list) is compared as mcp-verify
        # compares it: a build whose tool lost its docstring fails though its calls match.
        found = _report(path, compare_sessions(recorded, live, comparator), misses)
        failed = "\n".join(text for text in (found, descriptions_text(path, told)) if text)
        overlap = follower.overlap_text()
        # Why a call's requests may have taken another call's answers: said only beside
        # a failure, as overlapping calls are no fault of the build's.
        return f"{failed}\ngolem_mcp_session {path}: {overlap}" if failed and overlap else failed

    session._check = check
    try:
        yield session
    finally:
        runner.stop()
        follower.close()
        trace.close()
    warn_ahead(engine.order, str(path))  # out of recorded order: a warning, not a miss
    verdict = session.judge()
    if verdict:
        pytest.fail(verdict, pytrace=False)


def _miss_text(miss: MissRecord) -> str:
    """A miss as the failure lists it: the call it came in, with its arguments, and what it
    sent (`MissRecord.describe`); where calls overlapped, the request alone."""
    if miss.scope is None:
        return f"{miss.route} {miss.method}: {miss.message}"
    return miss.describe()


def _report(path: Path, checks: list[McpCheck], misses: list[str]) -> str:
    """Every differing tool call and every GOLEM request the stand-in could not answer, as
    the failure's text; empty when the session matched."""
    failed = [check for check in checks if not check.ok]
    lines: list[str] = []
    if failed:
        lines.append(f"golem_mcp_session {path}: {len(failed)} of {len(checks)} tool calls differ")
        for check in failed:
            number = f" #{check.number}" if check.number is not None else ""
            lines.append(f"  {check.name}{number}: {check.first_difference()}")
    if misses:
        lines.append(f"golem_mcp_session {path}: the recording has no answer for")
        lines.extend(misses)
    return "\n".join(lines)


def _store(written: str, path: Path) -> None:
    if not read_tool_calls(written):
        pytest.fail(
            f"golem_mcp_session: the session made no tool call; {path} left as it was",
            pytrace=False,
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    # The temporary file may be on another file system: copied beside the recording and
    # renamed over it, one writer at a time (`trace_lock`), so two workers recording it at
    # once leave one whole recording, never one's bytes written over the other's.
    target = str(path)
    try:
        new = replacing(target, overwrite=True)
        with trace_lock(target), open(written, "rb") as source, new as out:
            shutil.copyfileobj(source, out)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        text = f"golem_mcp_session: cannot write {path} ({reason}); it is left as it was"
        pytest.fail(text, pytrace=False)


def _strings(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)

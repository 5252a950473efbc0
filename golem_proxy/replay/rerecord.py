"""``--golem-record=all`` of the pytest plugin: each trace re-recorded by every test that names
it in the run, put in place once, when the last of them ends.

A trace belongs to every test whose ``golem_trace`` marker names it. Each test records what
the live plugin answered it to a file of its own; the first test to re-record the trace
successfully makes that file the trace's new version, kept aside next to the old one (a
rename onto it is then atomic, on the same file system), and each further one appends its
exchanges to it, numbered on, as ``new`` appends (`append_recording`). When the last test of
the run naming the trace ends, the new version replaces the old one, but only when every
one of them that ran re-recorded it: passed, every request reached the live plugin and was
recorded. Otherwise (one failed, in its setup, call or teardown, or lost a request) the old
trace is kept byte for byte: a test that failed says so in its report, and the run's summary
ends with one line per trace saying what became of it. Tests deselected or skipped did not
run and add nothing: a trace re-recorded without them no longer holds their exchanges, which
that line says. A run that stops before the last test naming a trace ends (``-x``, Ctrl-C)
keeps it as it was. The tests are counted by their marker at collection, so one that takes
``golem_replay`` by ``getfixturevalue`` counts; one given the marker as it runs, after the
others naming its trace ended, errors rather than replace what they re-recorded.

pytest-xdist is refused at start: its workers would re-record against one live plugin at
once, each test's answers showing what tests in other workers changed in the same document
meanwhile, and a trace's tests would end in different processes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from ..recording.format import RecordingError
from ..recording.trace_lock import trace_lock
from ..terminal import counted
from .engine import ReplayReport
from .merge import append_recording
from .pytest_mcp import MARKER as MCP_MARKER

__all__ = ["PLUGIN_NAME", "RerecordRun", "aside_file", "refuse_xdist"]

PLUGIN_NAME = "golem_rerecord"
SHOWN = 3
"""Tests a summary line names; it counts the rest."""

_LATE = "it named the trace after the other tests naming it had ended"

TracePath = Callable[[pytest.Item], Optional[Path]]
"""The trace a test's ``golem_trace`` marker names (None: it has none)."""


def refuse_xdist(config: pytest.Config) -> None:
    """Raise pytest.UsageError when the run distributes its tests to pytest-xdist workers
    (see the module docstring). ``-n 0`` distributes nothing and passes."""
    workers = hasattr(config, "workerinput") or getattr(config.option, "dist", "no") != "no"
    if workers:
        raise pytest.UsageError(
            "--golem-record=all re-records against one live plugin, one test at a time: "
            "run it without pytest-xdist workers (-n 0, or -p no:xdist)"
        )


@dataclass
class _Trace:
    """One trace being re-recorded: the tests of the run naming it, and how they ended."""

    path: str
    pending: set[str] = field(default_factory=set)
    """Tests naming the trace that have not ended yet."""
    aside: Optional[str] = None
    """The new version, written aside: None until a test's re-record was added to it."""
    recorded_by: list[str] = field(default_factory=list)
    """Tests that re-recorded against the live plugin and passed (one that made no request
    that reached it, only built-ins, adds no exchange: `exchanges` counts them)."""
    exchanges: int = 0
    failed: list[str] = field(default_factory=list)
    """``nodeid: why`` of each test whose end keeps the old trace."""
    not_run: list[str] = field(default_factory=list)
    """``nodeid (why)`` of each test naming the trace that added nothing: skipped, deselected."""
    outcome: Optional[str] = None
    """The summary's line once the trace is settled."""


class RerecordRun:
    """The traces ``--golem-record=all`` re-records in one pytest run: a pytest plugin
    (registered under `PLUGIN_NAME`) that counts the tests naming each trace, and puts each
    trace in place when its last test ends. The ``golem_replay`` fixture tells it of each
    test's re-record (`join`, `recorded`)."""

    def __init__(self, trace_path: TracePath) -> None:
        self._trace_path = trace_path
        self._traces: dict[str, _Trace] = {}
        self._of_test: dict[str, _Trace] = {}
        self._joined: set[str] = set()
        self._call: dict[str, str] = {}
        """How each joined test's call phase ended: passed, failed, skipped (absent: no call)."""
        self._failed: set[str] = set()
        """Tests that failed in some phase, or whose re-record did."""
        self._deselected: dict[str, list[str]] = {}
        self._skipped: set[str] = set()
        self._late: set[str] = set()
        self._summary: list[_Trace] = []
        """Every trace re-recorded, in the order the first test naming it was collected."""
        """Tests that named a trace after the others naming it had ended."""
        """Tests skipped before their call (a skip marker, a fixture that skips)."""

    # The fixture's side.

    def join(self, trace: str, nodeid: str) -> str:
        """Note that test ``nodeid`` re-records ``trace``; returns a new file for it to record
        to, next to the trace. Raises OSError."""
        state = self._of_test.get(nodeid)
        if state is None:  # its marker was added as it ran: not counted at collection
            state = self._traces.get(trace)
            if state is None or state.outcome is not None:
                late = state is not None
                state = self._start(trace)
                if late:  # replacing the trace again would drop what the others recorded
                    state.failed.append(f"{nodeid}: {_LATE}")
                    self._failed.add(nodeid)
                    self._late.add(nodeid)
            state.pending.add(nodeid)
            self._of_test[nodeid] = state
        self._joined.add(nodeid)
        return aside_file(trace, ".new")

    def recorded(self, nodeid: str, recorded: str, report: ReplayReport) -> Optional[str]:
        """Take what test ``nodeid`` recorded to the file ``recorded`` (removed here) into its
        trace's new version, or keep the old trace when the test did not re-record it.
        Returns what the test must fail with at teardown (its call passed, its re-record did
        not), or None. Call it once the replay server stopped: it records after the client
        has its answer."""
        state = self._of_test[nodeid]
        try:
            call = self._call.get(nodeid)
            if nodeid in self._late and call == "passed":
                return kept_text(state.path, _LATE)
            if state.outcome is not None or nodeid in self._failed:
                return None  # settled (the run was stopped) / its report says it failed
            if call != "passed":
                state.not_run.append(f"{nodeid} (skipped)")
                return None
            why = _lost(report)
            if why is None and not state.failed:
                try:
                    if report.recorded_new:
                        self._add(state, recorded)
                except (OSError, RecordingError) as exc:
                    why = f"cannot write its new version: {_reason(exc)}"
                else:
                    state.recorded_by.append(nodeid)
                    state.exchanges += report.recorded_new
            if why is None:
                return None
            self._failed.add(nodeid)
            state.failed.append(f"{nodeid}: {why}")
            return kept_text(state.path, why)
        finally:
            if os.path.exists(recorded):
                os.unlink(recorded)

    def _start(self, trace: str) -> _Trace:
        state = self._traces[trace] = _Trace(trace)
        self._summary.append(state)
        return state

    def _add(self, state: _Trace, recorded: str) -> None:
        if state.aside is None:
            aside = aside_file(state.path, ".rerecord")
            os.replace(recorded, aside)
            state.aside = aside
        else:
            append_recording(state.aside, recorded)

    # The run's side: pytest hooks.

    def pytest_deselected(self, items: Iterable[pytest.Item]) -> None:
        for item in items:
            path = self._trace_path(item)
            if path is not None:
                self._deselected.setdefault(str(path), []).append(item.nodeid)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        sessions: dict[str, list[str]] = {}
        for item in session.items:
            recording = _session_recording(item)
            if recording is not None:
                sessions.setdefault(str(recording), []).append(item.nodeid)
            path = self._trace_path(item)
            if path is None:
                continue
            state = self._traces.get(str(path)) or self._start(str(path))
            state.pending.add(item.nodeid)
            self._of_test[item.nodeid] = state
        for shared, nodeids in sessions.items():
            if len(nodeids) > 1:
                # A session is recorded whole by the test that runs it: the last to end would
                # replace the others' recording, and their next replay would fail.
                raise pytest.UsageError(
                    f"--golem-record=all: {_shown_path(shared)} is the golem_mcp_session "
                    f"recording of {len(nodeids)} tests ({', '.join(sorted(nodeids)[:SHOWN])}"
                    f"{', …' if len(nodeids) > SHOWN else ''}), each re-recording it whole: "
                    "re-record it with one of them selected (-k), or give each a file of its own"
                )
        for trace, state in self._traces.items():
            if trace in sessions:
                # Each re-records the file whole, from its own run: one would replace the
                # other, whichever ends last, and the summary could speak only of its own.
                first = min(state.pending)
                raise pytest.UsageError(
                    f"--golem-record=all: {_shown_path(trace)} is both a golem_trace (of "
                    f"{first}) and a golem_mcp_session recording (of {sessions[trace][0]}), each "
                    "re-recorded whole on its own: give them files of their own"
                )
        # Only of the traces it re-records: those of tests all deselected are not touched.
        for trace, nodeids in self._deselected.items():
            if trace in self._traces:
                self._traces[trace].not_run += [f"{nodeid} (deselected)" for nodeid in nodeids]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        state = self._of_test.get(item.nodeid)
        if state is None or state.outcome is not None:
            return
        report: pytest.TestReport = outcome.get_result()
        if call.when == "call" and item.nodeid in self._joined:
            self._call[item.nodeid] = report.outcome
        if call.when == "setup" and report.skipped:
            self._skipped.add(item.nodeid)
        if report.failed and item.nodeid not in self._failed:
            self._failed.add(item.nodeid)
            why = "the test failed" if call.when == "call" else f"its {call.when} failed"
            state.failed.append(f"{item.nodeid}: {why}")
            # Said at once, in the failure the user reads first.
            report.sections.append(("golem replay", kept_text(state.path, why)))
        if call.when != "teardown":
            return
        if item.nodeid in self._skipped and item.nodeid not in self._joined:
            state.not_run.append(f"{item.nodeid} (skipped)")
        state.pending.discard(item.nodeid)
        if state.pending:
            return
        problem = self._settle(state)
        if problem is None:
            return
        if report.failed:
            report.sections.append(("golem replay", problem))
        else:
            report.outcome = "failed"
            report.longrepr = problem

    def _settle(self, state: _Trace) -> Optional[str]:
        """Put the trace's new version in place or keep the old one, now that the last test
        naming it ended. Returns what that test's teardown must fail with, or None."""
        if state.failed:  # each of those tests failed already, saying the trace is kept
            return self._keep(state, "; ".join(_listed(state.failed)))
        if state.aside is None:
            if not state.recorded_by:
                self._keep(state, "no test naming it ran")
                return None
            return self._keep(state, "nothing was recorded", fail=True)
        try:
            with trace_lock(state.path):  # not in the middle of another process's append
                os.replace(state.aside, state.path)
        except OSError as exc:
            why = f"cannot write {state.path} ({_reason(exc)})"
            return self._keep(state, why, fail=True)
        state.aside = None
        tests = counted(len(state.recorded_by), "test")
        line = f"re-recorded by {tests} ({counted(state.exchanges, 'exchange')})"
        if state.not_run:
            line += f"; not by {', '.join(_listed(state.not_run))}: their exchanges are gone"
        state.outcome = line
        return None

    def _keep(self, state: _Trace, why: str, *, fail: bool = False) -> Optional[str]:
        if state.aside is not None and os.path.exists(state.aside):
            os.unlink(state.aside)
        state.aside = None
        state.outcome = f"kept as it was ({why})"
        return kept_text(state.path, why) if fail else None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for state in self._traces.values():
            if state.outcome is None:
                left = counted(len(state.pending), "test")
                stopped = f"the run stopped before {left} naming it ended"
                self._keep(state, "; ".join([*_listed(state.failed), stopped]))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        settled = [state for state in self._summary if state.outcome is not None]
        if not settled:
            return
        terminalreporter.write_sep("-", "golem_trace re-recorded")
        for state in settled:
            terminalreporter.write_line(f"{_shown_path(state.path)}: {state.outcome}")


def _session_recording(item: pytest.Item) -> Optional[Path]:
    """The recording of ``item``'s ``golem_mcp_session`` marker, as its fixture finds it."""
    marker = item.get_closest_marker(MCP_MARKER)
    if marker is None or not marker.args:
        return None
    path = Path(marker.args[0])
    return path if path.is_absolute() else Path(item.path).parent / path


def kept_text(trace: str, why: str) -> str:
    return f"golem_trace: re-recording {trace} failed ({why}); the old trace is kept"


def _lost(report: ReplayReport) -> Optional[str]:
    """Why a passed test's re-record is not whole: a request forwarded and not recorded."""
    lost = report.forwarded - report.recorded_new + report.unanswered
    return f"{lost} request(s) did not reach the live plugin" if lost else None


def aside_file(trace: str, suffix: str) -> str:
    """A new private file next to ``trace`` (or in the temporary directory when the trace's
    directory does not exist): replacing the trace is then one rename."""
    directory = os.path.dirname(trace)
    fd, name = tempfile.mkstemp(
        prefix=f".{os.path.basename(trace)}.",
        suffix=suffix,
        dir=directory if os.path.isdir(directory) else None,
    )
    os.close(fd)
    return name


def _listed(entries: list[str]) -> list[str]:
    shown = entries[:SHOWN]
    if len(entries) > SHOWN:
        shown.append(f"… and {len(entries) - SHOWN} more")
    return shown


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _shown_path(path: str) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # on another drive (Windows)
        return path
    return path if relative.startswith("..") else relative

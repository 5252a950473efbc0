"""Applying an ``inputSchema`` that holds regular expressions within a bound of time and
memory: in a worker process (`schema_worker`), given `DEADLINE` per call, killed and started
again when it runs past.

Why a process: Python's `re` cannot be stopped once it runs (no signal, no thread reaches it
while it holds the interpreter), and a pattern that backtracks (``^(a+)+$`` against 30 ``a``
and a ``!``) runs for minutes. A linear-time engine would need no process, but none fits:
RE2 (``google-re2``) reads neither backreferences nor lookarounds, which ECMA-262 patterns
use, so it would still need this process to fall back on, and it would be a compiled
dependency for a path most recordings never take. The process is started at the first call
of such a tool and serves every call after, at the cost of one pipe round trip each (about
0.1 ms). It is `check`'s only: while a session runs, the deadline would hold the observing
process far longer than the recording may trail the wire (`McpAuditor.live`).

What the user sees when a pattern runs past: the call's row gets `R_ARGUMENTS_UNCHECKED`
naming the pattern; the call is checked again without it, so every other part of the schema
still is; and later calls leave that pattern out (each saying so), so that it costs its
`DEADLINE` once. When no pattern is known to have been running, that call alone is checked
again without its regular expressions (a guess would leave innocent ones out for good).
Past `MAX_OVERRUNS` patterns that ran past, or `BUDGET` seconds of calls checked in the
worker, every regular expression is left out for the rest of the recording: a hostile
listing costs `check` about `BUDGET` seconds at most, however many calls it has.

Preparing a tool's schema (at its first call) is not counted in the call's `DEADLINE`: it
takes seconds for a schema of thousands of properties, and is bounded by `BUILD_TIMEOUT`
apart. Prepared again in a worker started anew after an overrun, it counts in `BUDGET`.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from golem_core.contract import Violation, violation
from golem_core.mcp_rules import R_ARGUMENTS_UNCHECKED

from .schema_checks import schema_patterns

__all__ = ["BUDGET", "BUILD_TIMEOUT", "DEADLINE", "MAX_OVERRUNS", "BoundedSchemas"]

DEADLINE = 1.0
"""Seconds one call's arguments may take against its schema. Checking takes milliseconds;
a second leaves room for a loaded machine, and a hostile recording costs `MAX_OVERRUNS` of
them, or `BUDGET`, at most."""
MAX_OVERRUNS = 10
BUDGET = 20.0
"""Seconds of calls checked in the worker (overruns included) one run may spend. A pattern
that stays under `DEADLINE` on every call never runs past it, yet costs that on each call:
past the budget, the calls after leave every regular expression out, each saying so."""
BUILD_TIMEOUT = 30.0
"""Seconds the worker may take to prepare one tool's schema (checked against its draft's
metaschema, every pattern compiled: over a second for 6,000 properties), not counted in any
call's `DEADLINE`. Past it, the tool's calls are not checked against its schema, each saying
so, and it is not tried again."""
START_TIMEOUT = 30.0
"""Seconds the worker may take to start (Python and `jsonschema` imported), not counted in
any call's `DEADLINE`."""
_SHOWN = 3
_ARGUMENTS = "$.params.arguments"
_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass
class _Done:
    problems: list[Violation]
    skipped: list[int]


@dataclass
class _Overrun:
    at: Optional[list[int]]
    """The indexes of the patterns running when the deadline came; None when not known."""


@dataclass
class _Failed:
    why: str


@dataclass
class _Unbuilt:
    """The worker did not prepare the tool's schema within `BUILD_TIMEOUT`."""


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    selector: selectors.DefaultSelector
    buffer: bytes = b""
    known: set[str] = field(default_factory=set)
    """The tools whose schema this process was given."""
    stop: Callable[[], Any] = lambda: None
    """Stops the process, at once or when what started it is collected or exits."""


class BoundedSchemas:
    """Checks a call's arguments against a schema with regular expressions (`problems`) in a
    worker process; `close` stops it."""

    def __init__(
        self,
        deadline: float = DEADLINE,
        max_overruns: int = MAX_OVERRUNS,
        budget: float = BUDGET,
        build_timeout: float = BUILD_TIMEOUT,
    ) -> None:
        self.deadline = deadline
        self.max_overruns = max_overruns
        self.budget = budget
        self.build_timeout = build_timeout
        self._worker: Optional[_Worker] = None
        self._broken: Optional[str] = None
        self._patterns: dict[str, list[str]] = {}
        self._overran: dict[str, int] = {}
        """Each pattern that ran past the deadline, and the flow whose arguments it ran on."""
        self._unbuilt: dict[str, int] = {}
        """Each tool whose schema was not prepared within `build_timeout`, and the flow of
        the call that tried."""
        self._built: set[str] = set()
        """The tools whose schema a worker prepared (the first time is not in `budget`)."""
        self._spent = 0.0
        self._spent_by: Optional[int] = None
        """The flow whose call took the time spent past `budget`."""

    def problems(self, tool: str, schema: Any, arguments: Any, flow: int) -> list[Violation]:
        """The violations of ``arguments`` (of the call in ``flow``) against ``schema``
        (``tool``'s), and one `R_ARGUMENTS_UNCHECKED` warning naming what was left out."""
        if tool in self._unbuilt:
            return [self._unchecked(self._unbuilt_text(tool))]
        patterns = self._patterns.get(tool)
        if patterns is None:  # walked once per tool: a large schema takes tens of ms
            patterns = self._patterns[tool] = schema_patterns(schema)
        every = self._every()
        while True:
            skip = [at for at, pattern in enumerate(patterns) if pattern in self._overran]
            outcome = self._ask(tool, schema, arguments, skip, every is not None)
            if self._spent_by is None and self._spent >= self.budget:
                self._spent_by = flow
            if isinstance(outcome, _Failed):
                return [self._unchecked(f"its inputSchema's regular expressions ({outcome.why})")]
            if isinstance(outcome, _Unbuilt):
                self._unbuilt[tool] = flow
                return [self._unchecked(self._unbuilt_text(tool))]
            if isinstance(outcome, _Done):
                break
            if every is not None:  # no regular expression ran: the rest of it ran past
                text = (
                    f"its inputSchema within {self.deadline:g} s, even with its regular "
                    f"expressions left out ({every})"
                )
                return [self._unchecked(text)]
            named = [patterns[at] for at in outcome.at or () if 0 <= at < len(patterns)]
            new = [pattern for pattern in named if pattern not in self._overran]
            for pattern in new:
                self._overran[pattern] = flow
            # With no pattern known to have held it, this call's are left out, not the next
            # call's: blaming them all would leave innocent ones out for good.
            unnamed = f"one it cannot name ran past {self.deadline:g} s on these arguments"
            every = self._every() if new else unnamed
        found = outcome.problems
        left_out = [patterns[at] for at in outcome.skipped if 0 <= at < len(patterns)]
        said = [self._said(pattern, flow) for pattern in left_out if pattern in self._overran]
        if len(said) < len(outcome.skipped):
            which = "its other regular expressions" if said else "its regular expressions"
            said.append(f"{which} ({every or 'left out'})")
        if said:
            more = f" and {len(said) - _SHOWN} more" if len(said) > _SHOWN else ""
            text = "; ".join(said[:_SHOWN]) + more
            found.append(self._unchecked(f"{text}; the rest of its inputSchema was checked"))
        return found

    def close(self) -> None:
        """Stop the worker process, if one runs."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def _every(self) -> Optional[str]:
        """Why every regular expression is left out of the calls from now on, if it is."""
        if len(self._overran) >= self.max_overruns:
            patterns = "pattern" if self.max_overruns == 1 else "patterns"
            return (
                f"{self.max_overruns} {patterns} ran past {self.deadline:g} s earlier in this "
                "recording: every one is left out since"
            )
        if self._spent >= self.budget:
            return (
                f"checking regular expressions took the {self.budget:g} s a check run gives "
                f"them, by flow #{self._spent_by}: every one is left out since"
            )
        return None

    def _unbuilt_text(self, tool: str) -> str:
        return (
            f"its inputSchema (preparing it, once per tool, ran past {self.build_timeout:g} s "
            f"at flow #{self._unbuilt[tool]}; it is not tried again)"
        )

    def _said(self, pattern: str, flow: int) -> str:
        shown = repr(pattern[:80]) + ("…" if len(pattern) > 80 else "")
        where = self._overran.get(pattern)
        if where == flow:
            return f"pattern {shown} within {self.deadline:g} s (it runs past on these arguments)"
        return (
            f"pattern {shown} (it ran past {self.deadline:g} s on the arguments of flow "
            f"#{where}, and is left out since)"
        )

    def _unchecked(self, what: str) -> Violation:
        return violation(
            R_ARGUMENTS_UNCHECKED, f"its arguments could not be checked against {what}", _ARGUMENTS
        )

    def _ask(
        self, tool: str, schema: Any, arguments: Any, skip: list[int], every: bool
    ) -> Union[_Done, _Overrun, _Failed, _Unbuilt]:
        worker = self._running()
        if isinstance(worker, _Failed):
            return worker
        request: dict[str, Any] = {"tool": tool, "arguments": arguments, "skip": skip}
        if every:
            request["all"] = True
        build = tool not in worker.known
        if build:
            request["schema"] = schema
        try:
            line = json.dumps(request).encode() + b"\n"
        except (TypeError, ValueError) as exc:  # an integer of more digits than str() takes
            return _Failed(f"its arguments cannot be passed on: {type(exc).__name__}")
        worker.known.add(tool)
        outcome = self._exchange(worker, line, build, again=tool in self._built)
        if build and not isinstance(outcome, (_Unbuilt, _Failed)):
            self._built.add(tool)
        if not isinstance(outcome, _Done):
            self.close()
        return outcome

    def _exchange(
        self, worker: _Worker, line: bytes, build: bool, again: bool
    ) -> Union[_Done, _Overrun, _Failed, _Unbuilt]:
        stdin = worker.process.stdin
        assert stdin is not None
        try:
            stdin.write(line)
            stdin.flush()
        except OSError:
            return _Failed(f"the process checking them exited ({worker.process.poll()})")
        if build:  # the worker says when the schema is prepared: the call's deadline starts
            started = time.monotonic()
            built = _next_line(worker, started + self.build_timeout)
            if again:
                # Prepared again in a worker started anew after an overrun: that is what the
                # overrun costs, so the budget bounds it (a schema slow to prepare and a
                # backtracking pattern would otherwise cost a preparation per overrun).
                self._spent += time.monotonic() - started
            if built is None:
                return _Unbuilt()
            if isinstance(built, _Failed):
                return built
            if not built.get("built"):
                return _Failed(f"the process checking them failed: {built.get('failed')}")
        started = time.monotonic()
        try:
            return self._answer(worker, started + self.deadline)
        finally:
            self._spent += time.monotonic() - started

    def _answer(self, worker: _Worker, deadline: float) -> Union[_Done, _Overrun, _Failed]:
        at: Optional[list[int]] = None
        while True:
            answer = _next_line(worker, deadline)
            if answer is None:
                return _Overrun(at)
            if isinstance(answer, _Failed):
                return answer
            if "at" in answer:
                at = answer["at"]
            elif "problems" in answer:
                problems = [Violation.from_json(v) for v in answer["problems"]]
                return _Done(problems, list(answer.get("skipped", ())))
            else:
                return _Failed(f"the process checking them failed: {answer.get('failed')}")

    def _running(self) -> Union[_Worker, _Failed]:
        if self._broken is not None:
            return _Failed(self._broken)
        if self._worker is not None:
            return self._worker
        env = dict(os.environ)
        # The worker runs this checkout's code, whatever the current directory.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        command = [sys.executable, "-m", "golem_proxy.analysis.schema_worker", str(os.getpid())]
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            self._broken = f"the process to check them cannot start: {exc.strerror or exc}"
            return _Failed(self._broken)
        assert process.stdout is not None
        os.set_blocking(process.stdout.fileno(), False)
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        worker = _Worker(process, selector)
        worker.stop = weakref.finalize(self, _stop, process, selector)
        ready = _next_line(worker, time.monotonic() + START_TIMEOUT)
        if not isinstance(ready, dict) or not ready.get("ready"):
            worker.stop()
            self._broken = f"the process to check them did not start within {START_TIMEOUT:g} s"
            if isinstance(ready, _Failed):
                self._broken = f"the process to check them did not start ({ready.why})"
            return _Failed(self._broken)
        self._worker = worker
        return worker


def _next_line(worker: _Worker, deadline: float) -> Union[dict[str, Any], _Failed, None]:
    """The worker's next line, parsed; None when none comes before ``deadline``."""
    stdout = worker.process.stdout
    assert stdout is not None
    while b"\n" not in worker.buffer:
        left = deadline - time.monotonic()
        if left <= 0 or not worker.selector.select(left):
            return None
        chunk = os.read(stdout.fileno(), 65536)
        if not chunk:
            return _Failed(f"the process checking them exited ({worker.process.wait()})")
        worker.buffer += chunk
    line, _, worker.buffer = worker.buffer.partition(b"\n")
    try:
        answer = json.loads(line)
    except ValueError:  # ours writes JSON only: something else wrote on its stdout
        answer = None
    return answer if isinstance(answer, dict) else _Failed("the process checking them failed")


def _stop(process: subprocess.Popen[bytes], selector: selectors.BaseSelector) -> None:
    selector.close()
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()

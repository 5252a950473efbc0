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
`DEADLINE` once. Past `MAX_OVERRUNS` patterns that ran past, every regular expression is left
out for the rest of the recording: a hostile listing costs at most that many deadlines.
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

__all__ = ["DEADLINE", "MAX_OVERRUNS", "BoundedSchemas"]

DEADLINE = 1.0
"""Seconds one call's arguments may take against its schema. Checking takes milliseconds;
a second leaves room for a loaded machine, and a hostile recording costs `MAX_OVERRUNS` of
them at most."""
MAX_OVERRUNS = 10
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

    def __init__(self, deadline: float = DEADLINE, max_overruns: int = MAX_OVERRUNS) -> None:
        self.deadline = deadline
        self.max_overruns = max_overruns
        self._worker: Optional[_Worker] = None
        self._broken: Optional[str] = None
        self._patterns: dict[str, list[str]] = {}
        self._overran: dict[str, int] = {}
        """Each pattern that ran past the deadline, and the flow whose arguments it ran on."""

    def problems(self, tool: str, schema: Any, arguments: Any, flow: int) -> list[Violation]:
        """The violations of ``arguments`` (of the call in ``flow``) against ``schema``
        (``tool``'s), and one `R_ARGUMENTS_UNCHECKED` warning naming what was left out."""
        patterns = self._patterns.setdefault(tool, schema_patterns(schema))
        every: Optional[str] = self._cap() if len(self._overran) >= self.max_overruns else None
        while True:
            skip = [at for at, pattern in enumerate(patterns) if pattern in self._overran]
            outcome = self._ask(tool, schema, arguments, skip, every is not None)
            if isinstance(outcome, _Failed):
                return [self._unchecked(f"its inputSchema's regular expressions ({outcome.why})")]
            if isinstance(outcome, _Done):
                break
            named = [at for at in outcome.at or () if 0 <= at < len(patterns)]
            new = [patterns[at] for at in (named or range(len(patterns)))]
            new = [pattern for pattern in new if pattern not in self._overran]
            if every is not None:
                text = f"its inputSchema's regular expressions within {self.deadline:g} s"
                return [self._unchecked(text)]
            for pattern in new:
                self._overran[pattern] = flow
            if not new:
                every = f"one it cannot name ran past {self.deadline:g} s on these arguments"
            elif len(self._overran) >= self.max_overruns:
                every = self._cap()
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

    def _cap(self) -> str:
        patterns = "pattern" if self.max_overruns == 1 else "patterns"
        return (
            f"{self.max_overruns} {patterns} ran past {self.deadline:g} s earlier in this "
            "recording: every one is left out since"
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
    ) -> Union[_Done, _Overrun, _Failed]:
        worker = self._running()
        if isinstance(worker, _Failed):
            return worker
        request: dict[str, Any] = {"tool": tool, "arguments": arguments, "skip": skip}
        if every:
            request["all"] = True
        if tool not in worker.known:
            request["schema"] = schema
        try:
            line = json.dumps(request).encode() + b"\n"
        except (TypeError, ValueError) as exc:  # an integer of more digits than str() takes
            return _Failed(f"its arguments cannot be passed on: {type(exc).__name__}")
        worker.known.add(tool)
        outcome = self._exchange(worker, line)
        if not isinstance(outcome, _Done):
            self.close()
        return outcome

    def _exchange(self, worker: _Worker, line: bytes) -> Union[_Done, _Overrun, _Failed]:
        stdin = worker.process.stdin
        assert stdin is not None
        try:
            stdin.write(line)
            stdin.flush()
        except OSError:
            return _Failed(f"the process checking them exited ({worker.process.poll()})")
        at: Optional[list[int]] = None
        deadline = time.monotonic() + self.deadline
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

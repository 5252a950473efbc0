"""The process `bounded_schema.BoundedSchemas` applies a regular-expression-bearing
``inputSchema`` in: ``python -m golem_proxy.analysis.schema_worker PARENT_PID``.

One JSON line in per call (``tool``, ``arguments``, the ``schema`` the first time the tool
is asked of this process, ``skip``: the indexes in `schema_patterns` of the patterns to leave
out, ``all``: leave every regular expression out), one line out: ``{"problems": [...],
"skipped": [...]}``, the violations found and the indexes of the patterns left out that the
arguments met (-1 for one outside `schema_patterns`). Given a ``schema``, it first prepares
the tool (its patterns, its validator: the schema checked against its draft's metaschema,
every pattern compiled) and writes ``{"built": true}``, so that the call's deadline starts
after it: preparing a large schema takes seconds, and is bounded apart. Before each regular
expression it runs, when it is not the one before in this call, it writes ``{"at":
[indexes]}`` (``null`` when not known), so that when it runs past its deadline and is
killed, the pattern that held it is known. The patterns are those the keywords run
(``pattern``, ``patternProperties``, ``additionalProperties`` over the ``patternProperties``
beside it, ``unevaluatedProperties``) and those `undeclared` reads: the draft's own keyword
functions, each entered through one that says which pattern comes
(`jsonschema.validators.extend`).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any, Callable, Optional

import jsonschema

from .schema_checks import (
    argument_problems,
    found_in,
    new_validator,
    schema_patterns,
    undeclared,
)

_MEMORY = 1 << 30
"""Address space the process may take: what a hostile schema or pattern makes it allocate
fails there (`MemoryError`, said as a schema that cannot be applied), not the machine."""
_PR_SET_PDEATHSIG = 1
Keyword = Callable[[Any, Any, Any, Any], Iterator[Any]]


class _Tool:
    def __init__(self, name: str, schema: Any) -> None:
        self.name = name
        self.schema = schema
        self.patterns = schema_patterns(schema)
        self.index = {pattern: at for at, pattern in enumerate(self.patterns)}
        self.validator: Any = None
        self.failure: Optional[Exception] = None
        """Why no validator could be made (an invalid schema): raised at each call, which
        says so (`argument_problems`), rather than made again."""


class Worker:
    """Applies the tools' schemas, call by call (`check`), saying on ``write`` which
    pattern it runs."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._tools: dict[str, _Tool] = {}
        self._tool: Optional[_Tool] = None
        self._skip: frozenset[int] = frozenset()
        self._skip_all = False
        self._skipped: set[int] = set()
        self._noted: Any = None
        """The tool and the indexes of the pattern last said with ``at`` in this call."""

    def check(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to one request line (see the module docstring)."""
        name = request["tool"]
        if "schema" in request:
            self._tools[name] = self._build(name, request["schema"])
            self._write(b'{"built": true}\n')
        tool = self._tool = self._tools[name]
        # The parent knows nothing of an earlier call's last pattern (it starts each call
        # unknowing): the first one this call runs is always said.
        self._noted = None
        self._skip = frozenset(request.get("skip", ()))
        self._skip_all = bool(request.get("all"))
        self._skipped = set()
        arguments = request.get("arguments")
        found = []
        if isinstance(tool.schema, dict):
            found = argument_problems(lambda: self._validator(tool), arguments)
        found += undeclared(name, tool.schema, arguments, self._matches)
        return {"problems": [v.to_json() for v in found], "skipped": sorted(self._skipped)}

    def _build(self, name: str, schema: Any) -> _Tool:
        tool = _Tool(name, schema)
        if isinstance(schema, dict):
            try:
                tool.validator = self._new_validator(schema)
            except Exception as exc:  # said at each call, as argument_problems says it
                tool.failure = exc
        return tool

    def _validator(self, tool: _Tool) -> Any:
        if tool.failure is not None:
            raise tool.failure
        return tool.validator

    def _new_validator(self, schema: dict[str, Any]) -> Any:
        originals = jsonschema.validators.validator_for(schema).VALIDATORS
        keywords = {
            name: wrap(originals[name])
            for name, wrap in (
                ("pattern", self._pattern),
                ("patternProperties", self._pattern_properties),
                ("additionalProperties", self._additional),
                ("unevaluatedProperties", self._unevaluated),
            )
            if name in originals
        }
        return new_validator(schema, keywords)

    def _leaves_out(self, pattern: Any) -> bool:
        """Whether ``pattern`` is left out; if so, that the arguments met it."""
        assert self._tool is not None
        at = self._tool.index.get(pattern, -1) if isinstance(pattern, str) else -1
        if self._skip_all or (at >= 0 and at in self._skip):
            self._skipped.add(at)
            return True
        return False

    def _note(self, patterns: Optional[list[Any]]) -> None:
        assert self._tool is not None
        at: Optional[list[int]] = None
        if patterns is not None:
            at = [self._tool.index.get(p, -1) if isinstance(p, str) else -1 for p in patterns]
            at = None if -1 in at else at
        noted = (self._tool.name, at)
        if noted != self._noted:
            self._noted = noted
            self._write(json.dumps({"at": at}).encode() + b"\n")

    def _matches(self, pattern: str, name: str) -> bool:
        if self._leaves_out(pattern):
            return True  # as a pattern that cannot be read: no warning on a guess
        self._note([pattern])
        return found_in(pattern, name)

    def _pattern(self, original: Keyword) -> Keyword:
        def keyword(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
            if not validator.is_type(instance, "string") or self._leaves_out(pattern):
                return
            self._note([pattern])
            yield from original(validator, pattern, instance, schema)

        return keyword

    def _pattern_properties(self, original: Keyword) -> Keyword:
        def keyword(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
            if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
                yield from original(validator, patterns, instance, schema)
                return
            # One pattern at a time (the keyword holds when each holds), so that each is
            # named while it runs and one left out leaves the others in.
            for pattern, subschema in patterns.items():
                if instance and not self._leaves_out(pattern):
                    self._note([pattern])
                    yield from original(validator, {pattern: subschema}, instance, schema)

        return keyword

    def _additional(self, original: Keyword) -> Keyword:
        def keyword(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
            patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
            if validator.is_type(instance, "object") and instance and patterns:
                # Which properties are others depends on every pattern beside it (jsonschema
                # joins them into one expression): one left out leaves the keyword out.
                if any([self._leaves_out(p) for p in patterns]):
                    return
                self._note(list(patterns))
            yield from original(validator, extra, instance, schema)

        return keyword

    def _unevaluated(self, original: Keyword) -> Keyword:
        def keyword(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
            if validator.is_type(instance, "object") and instance:
                # It runs the patterns of every subschema that applies: which one is not known.
                if self._skip_all or self._skip:
                    self._skipped.update(self._skip or {-1})
                    return
                self._note(None)
            yield from original(validator, extra, instance, schema)

        return keyword


def _tie(parent: int) -> None:
    """Die with the process that started this one (Linux), however it dies: a regular
    expression that runs for minutes must not outlive a `check` the user stopped."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the parent kills it at exit and on every overrun
    if os.getppid() != parent:  # the parent died before the tie was made
        sys.exit(0)


def _limit_memory() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY, _MEMORY))
    except (ImportError, ValueError, OSError):
        pass


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def main(argv: list[str]) -> int:
    _tie(int(argv[1]))
    _limit_memory()
    worker = Worker(_write_all)
    _write_all(b'{"ready": true}\n')
    for line in sys.stdin.buffer:
        try:
            answer = worker.check(json.loads(line))
        except Exception as exc:  # what is asked is ours, but its values are the recording's
            answer = {"failed": type(exc).__name__}
        _write_all(json.dumps(answer).encode() + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

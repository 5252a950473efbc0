"""GOLEM answers that come after their tool call returned, and the tool calls that read one as
their own, decided once, by the session's tool-call tracker, as the frames are decoded.

An MCP server waits for Rhino's answer only so long (GOLEM-3DMCP: 30 s); then its tool call
returns an error to the model. When the answer comes later, the server's connection holds it,
and a server that reads answers in order without matching their ids hands it to its next call,
and each call after that the answer of the call before. The proxy sees both layers in wire
order, so it can say:

* that the answer was late: every tool call it names (its request's ``tool_calls``) had been
  answered to the model when it was decoded (`FrameSeen.late`); from then on its connection
  holds an answer its client may never have read;
* where a later call's result shows it read one wrongly: its text, parsed as JSON, equals the
  ``result`` of an answer on a connection that holds a late one, and no answer of the call's
  own (`FrameSeen.answer_of`). Without that evidence nothing more is said: a server that
  matches ids, or that dropped the connection, reads its own answers.

Nothing is compared until a late answer was seen, so a session without one pays a set look-up
per GOLEM answer. Memory is bounded: the calls that returned (`MAX_RETURNED`), the connections
holding a late answer (`MAX_HELD`) and a digest of the last `MAX_ANSWERS` answers (results
larger than `MAX_COMPARED` bytes are not compared: nothing is said of them).
"""

from __future__ import annotations

import collections
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Optional

from ..events import AnswerOf, FrameSeen, ToolCallRef

__all__ = ["MAX_ANSWERS", "MAX_COMPARED", "MAX_HELD", "MAX_RETURNED", "LateAnswers"]

MAX_RETURNED = 4096
"""Tool calls answered to the model that are remembered (an answer to an older one is not
said to be late)."""
MAX_HELD = 64
"""GOLEM connections holding a late answer that are followed at most (the oldest let go)."""
MAX_ANSWERS = 64
"""GOLEM answers kept (as digests) while a connection holds a late answer."""
MAX_COMPARED = 1 << 20
"""Bytes of a payload past which its answer is not compared."""

CallKey = tuple[int, int]
"""A tool call as a `ToolCallRef` names it: its MCP connection and request frame index."""


@dataclass(frozen=True)
class _Answer:
    """A GOLEM answer kept for comparison: its exchange, the calls it may belong to (one, or
    those in flight together), whether its connection held a late answer, and a digest of its
    ``result``."""

    of: AnswerOf
    owners: frozenset[CallKey]
    held: bool
    digest: bytes


class LateAnswers:
    """See the module docstring; `ToolCallTracker` calls it in wire order."""

    def __init__(self) -> None:
        self._returned: collections.OrderedDict[CallKey, None] = collections.OrderedDict()
        self._held: collections.OrderedDict[tuple[str, int], None] = collections.OrderedDict()
        self._answers: collections.deque[_Answer] = collections.deque(maxlen=MAX_ANSWERS)
        self._asked: collections.OrderedDict[CallKey, None] = collections.OrderedDict()
        """The calls (the last `MAX_RETURNED`) in flight when a GOLEM request went out: only
        such a call can have read an answer that was not its own (one that made no request,
        a server's cached result, says nothing of the connection)."""

    def asked(self, calls: tuple[ToolCallRef, ...]) -> None:
        """A GOLEM request went out while ``calls`` were in flight."""
        for call in calls:
            key = (call.conn, call.index)
            self._asked[key] = None
            self._asked.move_to_end(key)
        while len(self._asked) > MAX_RETURNED:
            self._asked.popitem(last=False)

    def returned(self, call: ToolCallRef) -> None:
        """``call``'s answer went to the model (its MCP response was decoded)."""
        self._returned[(call.conn, call.index)] = None
        if len(self._returned) > MAX_RETURNED:
            self._returned.popitem(last=False)

    def golem_answer(self, frame: FrameSeen, request: FrameSeen) -> bool:
        """A GOLEM answer (``request``: the frame it answers, with its ``tool_calls``) was
        decoded: whether it is late. Kept for comparison while any connection holds one."""
        calls = request.tool_calls
        late = bool(calls) and all((c.conn, c.index) in self._returned for c in calls or ())
        where = (frame.route, frame.conn)
        if late:
            self._held[where] = None
            if len(self._held) > MAX_HELD:
                self._held.popitem(last=False)
        if self._held:
            digest = _digest_of_result(frame.payload)
            if digest is not None:
                owners = frozenset((call.conn, call.index) for call in calls or ())
                of = AnswerOf(
                    route=frame.route,
                    conn=frame.conn,
                    index=request.index,
                    method=request.method,
                    tool=calls[0].tool if calls and len(calls) == 1 else None,
                )
                self._answers.append(_Answer(of, owners, where in self._held, digest))
        return late

    def closed(self, route: str, conn: int) -> None:
        """A GOLEM connection closed: what it held can no longer be read."""
        if self._held.pop((route, conn), False) is not False:
            kept = [a for a in self._answers if (a.of.route, a.of.conn) != (route, conn)]
            self._answers = collections.deque(kept, maxlen=MAX_ANSWERS)

    def answer_of(self, call: ToolCallRef, frame: FrameSeen) -> Optional[AnswerOf]:
        """The answer to ``call`` was decoded (``frame``): the GOLEM exchange, on a connection
        holding a late answer, whose ``result`` its text equals while no answer of the call's
        own does (the latest such); None without that evidence."""
        if not self._answers:
            return None
        digest = _digest_of_text(frame.payload)
        if digest is None:
            return None
        key = (call.conn, call.index)
        if key not in self._asked:
            return None  # it asked the plugin nothing: whatever it returned, no evidence
        found = None
        for answer in self._answers:
            if answer.digest != digest:
                continue
            if key in answer.owners:
                # It is (or may be: calls in flight together) its own answer: no evidence.
                return None
            if answer.held:
                found = answer.of
        return found


def _digest(value: Any) -> bytes:
    """A digest of a JSON value, the same for equal values however they were spelled."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _loaded(payload: bytes) -> Any:
    if len(payload) > MAX_COMPARED:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


def _digest_of_result(payload: bytes) -> Optional[bytes]:
    """A GOLEM answer's ``result``, digested (None: no result, an error, not JSON)."""
    obj = _loaded(payload)
    if not isinstance(obj, dict) or "result" not in obj:
        return None
    return _digest(obj["result"])


def _digest_of_text(payload: bytes) -> Optional[bytes]:
    """A ``tools/call`` answer's one text content, parsed as JSON and digested (None: an
    error, several contents, text that is no JSON)."""
    obj = _loaded(payload)
    result = obj.get("result") if isinstance(obj, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return None
    text = content[0].get("text")
    if content[0].get("type") != "text" or not isinstance(text, str):
        return None
    try:
        return _digest(json.loads(text))
    except ValueError:
        return None

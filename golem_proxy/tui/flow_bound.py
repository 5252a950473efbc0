"""The live TUI's bound on flows: how many rows it keeps in memory, and which it lets go
beyond that.

A live session runs for an afternoon, and a client may flood it: the TUI keeps a row for
every exchange, about 2 KB each for a small GOLEM call even with its frames compact
(`golem_proxy.tui.compact`), so it grew without bound. `FlowBound` keeps at most ``keep``
flows: past it, the model lets the oldest settled flows go, a chunk at a time (a tenth of the
bound, so the remapping of the view is paid once per chunk, not once per flow). A pending
request stays (its answer must still find its row), and so does a marked flow (the user
asked to keep an eye on it). Every view says how many were let go and where they are: the
recording holds them (`--record`), or they are gone.

`tui FILE` has no bound: a recording is read whole, as it always was.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Container, Sequence
from typing import Optional

from ..analysis.flows import Flow
from ..analysis.tool_calls import CallKey, call_key, owner_key
from ..terminal import counted

__all__ = ["DEFAULT_KEEP_FLOWS", "FlowBound", "forget_calls", "index_remap"]

DEFAULT_KEEP_FLOWS = 250_000
"""Flows the live TUI keeps: about 500 MiB of small GOLEM calls kept compact, hours of a busy
session, where a flood grew the observing process by 3.6 KB a flow for as long as it lasted."""


class FlowBound:
    """Keeps at most ``keep`` flows; ``recording``: where the session records, which is
    where the flows let go are still to be read."""

    def __init__(self, keep: int = DEFAULT_KEEP_FLOWS, recording: Optional[str] = None) -> None:
        if keep < 1:
            raise ValueError("a flow bound keeps at least one flow")
        self.keep = keep
        self.recording = recording
        self.chunk = max(keep // 10, 1)
        """Flows let go at once, at least (fewer when the rest are pending or marked)."""
        self.let_go = 0
        """Flows let go so far."""

    def excess(self, flows: int) -> int:
        """How many of ``flows`` to let go now: none within the bound, else down to a chunk
        below it."""
        return 0 if flows <= self.keep else flows - self.keep + self.chunk

    def note(self) -> str:
        """What every view says of the flows let go (empty while there are none)."""
        if not self.let_go:
            return ""
        return (
            f"{counted(self.let_go, 'older flow', grouped=True)} let go from memory {self.where()}"
        )

    def under_note(self, count: int) -> str:
        """What a tool call's detail says of the ``count`` GOLEM flows it caused that were
        let go (empty for none)."""
        if not count:
            return ""
        caused = counted(count, "GOLEM flow", grouped=True)
        return f"{caused} it caused let go from memory {self.where()}"

    def where(self) -> str:
        """Where flows let go are now."""
        if self.recording:
            return f"(the recording holds them: {self.recording})"
        return "(not recorded: they are gone)"


def forget_calls(
    counts: dict[CallKey, int], gone: Sequence[Flow], kept: Sequence[Flow]
) -> set[CallKey]:
    """Count in ``counts`` the flows ``gone`` (let go, oldest first) by the tool call that
    caused them, for the calls still ``kept``, and forget the counts of the calls let go.
    Returns the keys of the tool calls among ``gone``."""
    for flow in gone:
        key = owner_key(flow)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    newest = gone[-1].number if gone else 0
    # Only a call older than the newest flow let go, and kept (pending or marked), can have
    # caused one: a GOLEM flow comes after the call that caused it.
    calls: set[CallKey] = set()
    for flow in kept:
        if flow.number > newest:
            break
        key = call_key(flow)
        if key is not None:
            calls.add(key)
    for key in [key for key in counts if key not in calls]:
        del counts[key]
    return {key for key in map(call_key, gone) if key is not None}


def index_remap(
    before: Sequence[Flow], gone: Sequence[Flow], gone_ids: Container[int]
) -> Callable[[int], int]:
    """Where each index into ``before`` is once ``gone`` (some of its oldest flows, in order;
    ``gone_ids``: their ids) were let go: the new index, or -1 for a flow let go."""
    # The flows let go are among the first ``end``: only those are looked at one by one;
    # every flow after them moves down by as many as went.
    end = len(gone) - 1
    while before[end] is not gone[-1]:  # past the flows kept among them
        end += 1
    end += 1
    moved = array("i")
    kept = 0
    for flow in before[:end]:
        moved.append(-1 if id(flow) in gone_ids else kept)
        kept += id(flow) not in gone_ids
    shift = len(gone)

    def remap(index: int) -> int:
        return index - shift if index >= end else moved[index]

    return remap

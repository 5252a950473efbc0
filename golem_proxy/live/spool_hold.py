"""The observing side's hold on a spool's last ``DATA`` record (``--observer-spool``).

To a spool a chunk is handed on before its write to the receiver (`Connection.forward`), and
what of it did not go is said right after it (``UNDELIVERED_LAST``), in the same step of the
forwarding process. The observing process reads the spool as it grows, so it may read the
chunk before that record is written; decoded at once, the frames the chunk ends would be
published delivered, and the close could only say afterwards that they never were. So the
last ``DATA`` read is held until a record follows it: any record (the forwarding step is
over once another begins), the batch's ``SETTLED`` (spool.py: written at the doorbell's
ring when nothing followed the chunk), or the records' end. ``UNDELIVERED_LAST`` is then
queued with the chunk, before it is decoded, and marks its frames where its bytes begin.

What this cannot cover: a write that waits for room (a slow receiver) is settled by the next
ring while it waits; bytes it then fails to deliver are said in the connection's close, as
before (`TapNotes.undelivered_late`).
"""

from __future__ import annotations

from typing import Optional

from .handoff import Kind, Record

__all__ = ["TailHold"]


class TailHold:
    """The spool's last ``DATA`` record, held until a record follows it (see the module)."""

    def __init__(self) -> None:
        self.held: Optional[Record] = None
        self.at = 0
        """Where the held record begins among the records read (an acknowledgement stops
        there: it was not decoded)."""

    def take(self, record: Record, at: int, holding: bool) -> list[Record]:
        """``record`` read (beginning at ``at``): the records to handle now, in order (the
        one held, if any, first). ``holding``: a ``DATA`` record may be held (from a spool;
        never once the records go on through the pipe, where no ring settles them)."""
        ready = self.release()
        if record.kind is Kind.SETTLED:
            return ready
        if holding and record.kind is Kind.DATA:
            self.held, self.at = record, at
            return ready
        ready.append(record)
        return ready

    def release(self) -> list[Record]:
        """The record held, if any, to handle now (a record followed it, or none will)."""
        held, self.held = self.held, None
        return [] if held is None else [held]

    def before(self, offset: int) -> int:
        """``offset`` among the records read, or where the held record begins if that is
        earlier: what may be acknowledged as decoded."""
        return offset if self.held is None else min(offset, self.at)

"""The gaps in what was observed, counted from a recording no observing process writes any more,
for the ``session-end`` line the forwarding process writes when observation stopped for good
(observer_process.py): the processes that counted them as they came (`SessionTally`) are dead,
and the line says them as `check` counts them (its ``unobserved``), the dead processes' and the
forwarding process's own lines alike (``unobserved``, ``observation-restarted``,
``observation-stopped``).

The file is read once, forward, through a read-only memory map of the descriptor (its offset,
shared with the writers, never moves). One regular expression finds the line starts of those
kinds, reading only a line's first members (``seq``, ``t``, ``kind``: the writer puts them
first); only those lines are decoded, by the reader's own code (`LineDecoder`). A frame's
message is never decoded: a 16 MiB answer costs a search through its bytes for the next line
start. Only on this path, once, at the session's end.
"""

from __future__ import annotations

import mmap
import re

from golem_core.profiles import GOLEM

from ..analysis.coverage import GapsByReason
from ..events import GapCount, ObservationLost
from ..recording.line_events import LineDecoder
from ..recording.schema import RecordingError
from ..recording.shared_file import RESTARTED_KIND, STOPPED_KIND

__all__ = ["recorded_gaps"]

# A line start (after the newline that ends the line before: never inside a line, whose
# message holds no raw newline) of a gap's kind.
_GAP_LINE = re.compile(
    rb'\n\{"seq":\d+,"t":[^,"\n]+,"kind":"(?:unobserved|%s|%s)"'
    % (re.escape(RESTARTED_KIND.encode()), re.escape(STOPPED_KIND.encode()))
)


def recorded_gaps(fd: int) -> tuple[GapCount, ...]:
    """The gaps the recording open on ``fd`` says, by reason, as `check` counts them (empty:
    none). A line that does not decode is skipped, as a damaged line is no gap `check` can
    count either. Raises OSError."""
    try:
        data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except ValueError:  # an empty file: nothing to map
        return ()
    gaps = GapsByReason()
    decoder = LineDecoder(GOLEM)  # a frame's profile: no frame line is decoded here
    with data:
        for found in _GAP_LINE.finditer(data):
            start = found.start() + 1
            end = data.find(b"\n", start)
            if end < 0:
                break  # an unfinished last line: no whole line, no gap
            try:
                event = decoder.decode(data[start:end])
            except RecordingError:
                continue
            if isinstance(event, ObservationLost):
                gaps.add_gap(event)
    return gaps.counted()

"""The recording format (docs/recording-format.md): JSON Lines, a versioned header first, then
one event per line. This is the format's one public face: what reads, writes or scans a
recording imports it from here. Its parts:

- `schema`: the format's facts: header, members of each line in order, limits;
- `writer`: events to lines (`RecordingWriter`, `encode_event`);
- `reader`: lines back to the same events, for untrusted files (`RecordingReader`,
  `read_recording`, `OpenedRecording` for a view that reads one event at a time);
- `scan`: the fast scanner replay uses, its pattern built from `schema`'s member lists;
- `files`: opening a recording (regular files only) and creating private files.
"""

from __future__ import annotations

from .files import open_private, open_recording, private_temp_file, replacing, write_private
from .reader import OpenedRecording, Recording, RecordingReader, read_recording
from .schema import (
    DEFAULT_LINE_BUDGET,
    DEFAULT_MAX_LINE,
    FORMAT,
    MAX_DEPTH,
    MSG_KEY,
    SESSION_END_KIND,
    SESSION_END_PROMISE,
    VERSION,
    Header,
    RecordingError,
    RouteInfo,
    encode_header,
)
from .writer import RecordingWriter, encode_event, encode_event_parts

__all__ = [
    "DEFAULT_LINE_BUDGET",
    "DEFAULT_MAX_LINE",
    "FORMAT",
    "MAX_DEPTH",
    "MSG_KEY",
    "SESSION_END_KIND",
    "SESSION_END_PROMISE",
    "VERSION",
    "Header",
    "OpenedRecording",
    "Recording",
    "RecordingError",
    "RecordingReader",
    "RecordingWriter",
    "RouteInfo",
    "encode_event",
    "encode_event_parts",
    "encode_header",
    "open_private",
    "open_recording",
    "private_temp_file",
    "read_recording",
    "replacing",
    "write_private",
]

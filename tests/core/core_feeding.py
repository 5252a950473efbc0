"""Helpers shared by the core tests: feed bytes to a decoder in every chunking that matters."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from golem_core.decoders import Decoder
from golem_core.framing import Discarded, EndOfStream, Event, Frame, FrameError

EXHAUSTIVE_LIMIT = 4096
"""Inputs up to this size are also fed byte by byte and split at every offset."""


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def chunkings(data: bytes) -> Iterator[tuple[str, list[bytes]]]:
    """Yield ``(label, chunks)``: whole, byte by byte and split at every offset for small
    inputs; whole, 64 KiB chunks and odd-sized chunks for big ones."""
    yield "whole", [data]
    if len(data) <= EXHAUSTIVE_LIMIT:
        yield "bytewise", [data[i : i + 1] for i in range(len(data))]
        for i in range(1, len(data)):
            yield f"split@{i}", [data[:i], data[i:]]
    else:
        yield "64KiB", chunked(data, 65536)
        yield "odd", chunked(data, 65536 + 7)


def decode_all(decoder: Decoder, chunks: Iterable[bytes], *, eof: bool = True) -> list[Event]:
    """Feed every chunk, draining events after each, then (optionally) EOF."""
    events: list[Event] = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        events.extend(decoder.events())
    if eof:
        decoder.receive_eof()
        events.extend(decoder.events())
    return events


def decode_measuring_buffer(decoder: Decoder, chunks: Iterable[bytes]) -> tuple[list[Event], int]:
    """`decode_all` without EOF, with the most bytes the decoder held after any chunk."""
    events: list[Event] = []
    most_buffered = 0
    for chunk in chunks:
        events.extend(decode_all(decoder, [chunk], eof=False))
        most_buffered = max(most_buffered, decoder.buffered)
    return events, most_buffered


def raw_of(events: Iterable[Event]) -> bytes:
    return b"".join(event.raw for event in events)


def summarize(events: Iterable[Event]) -> list[tuple[Any, ...]]:
    """A chunking-independent view of an event list: consecutive Discarded pieces merge."""
    out: list[tuple[Any, ...]] = []
    for event in events:
        if isinstance(event, Frame):
            out.append(("frame", event.header, event.payload, event.terminator))
        elif isinstance(event, FrameError):
            out.append(("error", event.kind, event.recoverable, event.declared_length))
        elif isinstance(event, Discarded):
            if out and out[-1][0] == "discarded" and not out[-1][2]:
                out[-1] = ("discarded", out[-1][1] + event.size, event.final)
            else:
                out.append(("discarded", event.size, event.final))
        elif isinstance(event, EndOfStream):
            out.append(("eos",))
        else:  # pragma: no cover
            raise AssertionError(f"unexpected event {event!r}")
    return out

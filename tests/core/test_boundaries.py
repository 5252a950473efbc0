"""FrameBoundaries: the frame starts the decoders find, by the framing alone, under any
chunking."""

from __future__ import annotations

from typing import Optional, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.boundaries import FrameBoundaries
from golem_core.decoders import Decoder, decoder_for
from golem_core.framing import (
    LENGTH_HEADER,
    Discarded,
    Frame,
    Framing,
    encode_length_prefixed,
)

SETTINGS = settings(max_examples=300, deadline=None)
CAP = 8
"""A small cap, so that oversized headers and lines are common."""

# Length-prefixed streams: frames under the cap (zero-length ones included), headers over it
# followed by the bytes they declare, then any tail (a frame cut short, any header at all).
_well_formed = st.binary(max_size=CAP).map(encode_length_prefixed)
_oversized = st.integers(CAP + 1, 3 * CAP).flatmap(
    lambda length: st.binary(min_size=length, max_size=length).map(
        lambda payload: LENGTH_HEADER.pack(len(payload)) + payload
    )
)
length_prefixed_streams = st.tuples(
    st.lists(_well_formed | _oversized | st.just(b"\0\0\0\0"), max_size=12),
    st.binary(max_size=12),
).map(lambda parts: b"".join(parts[0]) + parts[1])
# Lines: any bytes, newlines frequent, lines over the cap frequent.
line_streams = st.lists(st.sampled_from(b"\n\n\nab{}\0\xff"), max_size=80).map(bytes)


def frame_starts(decoder: Decoder, chunks: list[bytes]) -> tuple[set[int], list[set[int]]]:
    """Feed ``chunks`` to ``decoder``: every offset where it found a frame to start, and after
    each chunk, the starts it had found by then."""
    starts = {0}
    seen = []
    offset = 0
    for chunk in chunks:
        decoder.receive_data(chunk)
        for event in decoder.events():
            offset += len(event.raw)
            if type(event) is Frame or (type(event) is Discarded and event.final):
                starts.add(offset)
        seen.append(set(starts))
    return starts, seen


def cut(stream: bytes, cuts: list[int]) -> list[bytes]:
    """``stream`` cut at ``cuts`` (offsets, repeats giving empty chunks), then at its end."""
    ends = [*sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]
    starts = [0, *ends[:-1]]
    return [stream[start:end] for start, end in zip(starts, ends)]


def check(framing: Framing, stream: bytes, cuts: list[int], views: bool) -> None:
    chunks = cut(stream, cuts)
    starts, _ = frame_starts(decoder_for(framing, CAP, skip_oversized=True), [stream])
    _, seen = frame_starts(decoder_for(framing, CAP, skip_oversized=True), chunks)
    boundaries = FrameBoundaries(framing)
    offset = 0
    for chunk, found in zip(chunks, seen):
        data: Union[bytes, memoryview] = memoryview(chunk) if views else chunk
        following = [start - offset for start in starts if 0 <= start - offset <= len(chunk)]
        expected: Optional[int] = min(following) if following else None
        assert boundaries.rest_of_frame(data) == expected
        boundaries.feed(data)
        offset += len(chunk)
        assert boundaries.at_boundary == (offset in found)
        # The frames fed whole: each is one start past the stream's first.
        whole = len(found) - 1 if framing is Framing.LENGTH_PREFIXED else None
        assert boundaries.frames == whole


@SETTINGS
@given(length_prefixed_streams, st.lists(st.integers(0, 400), max_size=8), st.booleans())
def test_length_prefixed_boundaries_are_the_decoders(
    stream: bytes, cuts: list[int], views: bool
) -> None:
    check(Framing.LENGTH_PREFIXED, stream, cuts, views)


@SETTINGS
@given(line_streams, st.lists(st.integers(0, 100), max_size=8), st.booleans())
def test_line_boundaries_are_the_decoders(stream: bytes, cuts: list[int], views: bool) -> None:
    check(Framing.LINE, stream, cuts, views)


@SETTINGS
@given(length_prefixed_streams | line_streams, st.booleans())
def test_byte_by_byte(stream: bytes, views: bool) -> None:
    for framing in Framing:
        check(framing, stream, list(range(len(stream))), views)


def test_a_header_split_one_and_three() -> None:
    frame = encode_length_prefixed(b'{"id": 1}')
    boundaries = FrameBoundaries(Framing.LENGTH_PREFIXED)
    assert boundaries.at_boundary
    assert boundaries.rest_of_frame(frame[:1]) == 0
    boundaries.feed(frame[:1])
    assert not boundaries.at_boundary
    assert boundaries.rest_of_frame(frame[1:3]) is None
    assert boundaries.rest_of_frame(frame[1:] + b"next") == len(frame) - 1
    boundaries.feed(frame[1:4])
    assert not boundaries.at_boundary
    assert boundaries.rest_of_frame(frame[4:]) == len(frame) - 4
    boundaries.feed(frame[4:])
    assert boundaries.at_boundary


def test_a_zero_length_frame_is_a_frame() -> None:
    boundaries = FrameBoundaries(Framing.LENGTH_PREFIXED)
    boundaries.feed(encode_length_prefixed(b"") + encode_length_prefixed(b"{}")[:5])
    assert not boundaries.at_boundary
    assert boundaries.rest_of_frame(b"}\0\0\0\0") == 1
    boundaries.feed(b"}\0\0\0\0")
    assert boundaries.at_boundary


def test_a_frame_counts_once_whole_also_when_its_body_is_skipped() -> None:
    frame = encode_length_prefixed(b'{"id": 1}')
    boundaries = FrameBoundaries(Framing.LENGTH_PREFIXED)
    assert boundaries.frames == 0
    boundaries.feed(frame + frame[:6])
    assert boundaries.frames == 1  # the second is under way
    boundaries.skip(boundaries.body_left)  # its body moved without being looked at
    assert boundaries.frames == 2


def test_a_frame_far_larger_than_a_chunk() -> None:
    boundaries = FrameBoundaries(Framing.LENGTH_PREFIXED)
    boundaries.feed(LENGTH_HEADER.pack(16 << 20) + b"x" * 1000)
    chunk = b"x" * (1 << 20)
    for _ in range(15):
        assert boundaries.rest_of_frame(chunk) is None
        boundaries.feed(chunk)
        assert not boundaries.at_boundary
    assert boundaries.rest_of_frame(chunk) == (1 << 20) - 1000
    boundaries.feed(chunk[:-1000])
    assert boundaries.at_boundary


def test_a_line_then_its_newline_later() -> None:
    boundaries = FrameBoundaries(Framing.LINE)
    assert boundaries.at_boundary
    boundaries.feed(b'{"jsonrpc": "2.0"')
    assert not boundaries.at_boundary
    assert boundaries.rest_of_frame(b"more") is None
    assert boundaries.rest_of_frame(b'}\n{"next"') == 2
    boundaries.feed(b"}")
    assert not boundaries.at_boundary
    boundaries.feed(b"")
    assert not boundaries.at_boundary
    boundaries.feed(b"\n")
    assert boundaries.at_boundary
    assert boundaries.rest_of_frame(b"anything") == 0


@SETTINGS
@given(length_prefixed_streams, st.lists(st.integers(1, 400), max_size=8), st.integers(1, 50))
def test_skipping_a_known_body_is_feeding_it(stream: bytes, cuts: list[int], most: int) -> None:
    """Up to `body_left` bytes may be skipped unseen (moved by the kernel) in place of being fed:
    the boundaries that follow are the same, whatever the chunking."""
    fed, skipping = (
        FrameBoundaries(Framing.LENGTH_PREFIXED),
        FrameBoundaries(Framing.LENGTH_PREFIXED),
    )
    for chunk in cut(stream, cuts):
        fed.feed(chunk)
        at = 0
        while at < len(chunk):
            unseen = min(skipping.body_left, most, len(chunk) - at)
            if unseen:
                skipping.skip(unseen)
                at += unseen
            else:
                skipping.feed(chunk[at : at + 1])
                at += 1
        assert skipping.at_boundary == fed.at_boundary
        assert skipping.body_left == fed.body_left


def test_skipping_past_the_known_body_is_refused() -> None:
    bounds = FrameBoundaries(Framing.LENGTH_PREFIXED)
    bounds.feed(LENGTH_HEADER.pack(10) + b"abc")
    assert bounds.body_left == 7
    bounds.skip(7)
    assert bounds.at_boundary
    with pytest.raises(ValueError):
        bounds.skip(1)
    lines = FrameBoundaries(Framing.LINE)
    lines.feed(b"abc")
    assert lines.body_left == 0  # a line's end is known only by looking


@SETTINGS
@given(length_prefixed_streams, st.lists(st.integers(0, 400), max_size=8))
def test_a_decoders_known_body_is_the_boundaries(stream: bytes, cuts: list[int]) -> None:
    """What a decoder says is left of the frame in progress (`Decoder.body_left`: what a tap
    that lost the next bytes may skip to find the next frame) is what the framing says, once
    its events are taken; for lines, nothing is known."""
    decoder = decoder_for(Framing.LENGTH_PREFIXED, CAP, skip_oversized=True)
    boundaries = FrameBoundaries(Framing.LENGTH_PREFIXED)
    for chunk in cut(stream, cuts):
        decoder.receive_data(chunk)
        boundaries.feed(chunk)
        for _ in decoder.events():
            pass
        assert decoder.body_left == boundaries.body_left
    lines = decoder_for(Framing.LINE, CAP)
    lines.receive_data(b'{"jsonrpc"')
    assert lines.body_left == 0

"""golem_core.framing: both decoders, caps, skipping, truncation and the raw-bytes invariant."""

from __future__ import annotations

import struct

import pytest
from core_feeding import (
    chunked,
    chunkings,
    decode_all,
    decode_measuring_buffer,
    raw_of,
    summarize,
)

from golem_core.decoders import LengthPrefixedDecoder, LineDecoder, decoder_for
from golem_core.framing import (
    DEFAULT_LENGTH_PREFIXED_CAP,
    DEFAULT_LINE_CAP,
    NEED_DATA,
    Discarded,
    EndOfStream,
    Frame,
    FrameError,
    FrameErrorKind,
    Framing,
    NeedData,
    encode_json,
    encode_length_prefixed,
    encode_line,
)


def lp(payload: bytes) -> bytes:
    return struct.pack("!I", len(payload)) + payload


MIXED_LP = lp(b'{"id":"a","method":"ping","params":{}}') + lp(b"") + lp(b"[1,2,3]") + lp(b"x" * 300)
MIXED_LINES = b'{"jsonrpc":"2.0","id":1,"result":{}}\n\n' + b"garbage\n" + b"y" * 300 + b"\n"


@pytest.mark.parametrize("label,chunks", list(chunkings(MIXED_LP)))
def test_length_prefixed_raw_concatenation_is_the_input(label: str, chunks: list[bytes]) -> None:
    events = decode_all(LengthPrefixedDecoder(), chunks)
    assert raw_of(events) == MIXED_LP
    frames = [e for e in events if isinstance(e, Frame)]
    assert [f.payload for f in frames] == [
        b'{"id":"a","method":"ping","params":{}}',
        b"",
        b"[1,2,3]",
        b"x" * 300,
    ]
    assert b"".join(f.raw for f in frames) == MIXED_LP
    assert isinstance(events[-1], EndOfStream)


@pytest.mark.parametrize("label,chunks", list(chunkings(MIXED_LINES)))
def test_line_raw_concatenation_is_the_input(label: str, chunks: list[bytes]) -> None:
    events = decode_all(LineDecoder(), chunks)
    assert raw_of(events) == MIXED_LINES
    payloads = [e.payload for e in events if isinstance(e, Frame)]
    assert payloads == [b'{"jsonrpc":"2.0","id":1,"result":{}}', b"", b"garbage", b"y" * 300]
    assert isinstance(events[-1], EndOfStream)


def test_raw_invariant_holds_across_skipped_frames() -> None:
    data = lp(b"ok") + lp(b"z" * 100) + lp(b"fine") + lp(b"q" * 50)
    for _label, chunks in chunkings(data):
        events = decode_all(LengthPrefixedDecoder(16), chunks)
        assert raw_of(events) == data
        assert [e.payload for e in events if isinstance(e, Frame)] == [b"ok", b"fine"]
    lines = b"ok\n" + b"z" * 100 + b"\nfine\n" + b"q" * 50 + b"\n"
    for _label, chunks in chunkings(lines):
        events = decode_all(LineDecoder(16), chunks)
        assert raw_of(events) == lines
        assert [e.payload for e in events if isinstance(e, Frame)] == [b"ok", b"fine"]


# Caps are checked on the header (or the line so far), before the body is buffered.


def test_length_prefixed_cap_checked_on_the_header_before_the_body() -> None:
    cap = 1024
    body_size = 10 * 1024 * 1024
    decoder = LengthPrefixedDecoder(cap)
    following = lp(b"after")
    stream = struct.pack("!I", body_size) + b"\xab" * body_size + following
    events, max_buffered = decode_measuring_buffer(decoder, chunked(stream, 65536))
    # Everything fed was turned into events at once: nothing of the body stays buffered.
    assert max_buffered < 16
    error = events[0]
    assert isinstance(error, FrameError)
    assert error.kind is FrameErrorKind.OVERSIZED
    assert error.recoverable
    assert error.declared_length == body_size
    assert error.raw == struct.pack("!I", body_size)
    pieces = events[1:-1]
    assert pieces and all(isinstance(p, Discarded) for p in pieces)
    assert sum(p.size for p in pieces) == body_size
    assert [p.final for p in pieces] == [False] * (len(pieces) - 1) + [True]
    assert events[-1] == Frame(b"after", struct.pack("!I", 5))
    assert raw_of(events) == stream


def test_length_prefixed_cap_boundary() -> None:
    events = decode_all(LengthPrefixedDecoder(8), [lp(b"12345678")])
    assert events[0] == Frame(b"12345678", struct.pack("!I", 8))
    events = decode_all(LengthPrefixedDecoder(8), [lp(b"123456789")])
    assert isinstance(events[0], FrameError)
    assert events[0].kind is FrameErrorKind.OVERSIZED
    assert events[0].declared_length == 9


def test_length_prefixed_oversized_reported_from_the_header_alone() -> None:
    decoder = LengthPrefixedDecoder(4)
    decoder.receive_data(b"\x00\x00\x00\x05")
    event = decoder.next_event()
    assert isinstance(event, FrameError) and event.kind is FrameErrorKind.OVERSIZED
    assert decoder.next_event() is NEED_DATA


def test_line_cap_checked_before_the_line_ends() -> None:
    cap = 1024
    decoder = LineDecoder(cap)
    big = 10 * 1024 * 1024
    stream = b"a" * big + b"\n" + b"next\n"
    events, max_buffered = decode_measuring_buffer(decoder, chunked(stream, 65536))
    assert max_buffered < cap
    error = events[0]
    assert isinstance(error, FrameError)
    assert error.kind is FrameErrorKind.OVERSIZED and error.recoverable
    assert error.raw == b"a" * cap
    pieces = events[1:-1]
    assert all(isinstance(p, Discarded) for p in pieces)
    assert pieces[-1].final and not any(p.final for p in pieces[:-1])
    assert sum(p.size for p in pieces) == big + 1 - cap
    assert events[-1] == Frame(b"next", b"", b"\n")
    assert raw_of(events) == stream


def test_line_cap_counts_the_newline() -> None:
    cap = 8
    exact = b"1234567\n"  # 8 bytes with the newline: accepted
    assert decode_all(LineDecoder(cap), [exact])[0] == Frame(b"1234567", b"", b"\n")
    over = b"12345678\n"  # 9 bytes with the newline: rejected
    for _label, chunks in chunkings(over):
        events = decode_all(LineDecoder(cap), chunks)
        assert summarize(events)[0] == ("error", FrameErrorKind.OVERSIZED, True, None)
        assert raw_of(events) == over
        assert not any(isinstance(e, Frame) for e in events)


def test_line_over_cap_without_newline_is_reported_at_once() -> None:
    decoder = LineDecoder(8)
    decoder.receive_data(b"12345678")  # a newline next would make it 9 bytes
    event = decoder.next_event()
    assert isinstance(event, FrameError) and event.kind is FrameErrorKind.OVERSIZED
    decoder.receive_data(b"9\nok\n")
    rest = list(decoder.events())
    assert rest == [Discarded(b"9\n", final=True), Frame(b"ok", b"", b"\n")]


def test_line_decoder_with_zero_cap_reports_nothing_for_no_bytes() -> None:
    decoder = LineDecoder(0)
    assert decoder.next_event() is NEED_DATA
    decoder.receive_eof()
    assert list(decoder.events()) == [EndOfStream()]


def test_zero_cap_line_decoder_rejects_every_line() -> None:
    events = decode_all(LineDecoder(0), [b"\nab\n"])
    assert raw_of(events) == b"\nab\n"
    assert not any(isinstance(e, Frame) for e in events)
    assert sum(isinstance(e, FrameError) for e in events) == 2


def test_length_prefixed_fatal_oversized_when_not_skipping() -> None:
    decoder = LengthPrefixedDecoder(4, skip_oversized=False)
    data = struct.pack("!I", 100) + b"abc"
    decoder.receive_data(data)
    event = decoder.next_event()
    assert isinstance(event, FrameError)
    assert event.kind is FrameErrorKind.OVERSIZED
    assert event.recoverable is False
    assert event.raw == data
    assert decoder.closed
    decoder.receive_data(lp(b"ok"))
    assert decoder.next_event() is NEED_DATA
    assert decoder.bytes_received == len(data) + 6


def test_line_fatal_oversized_when_not_skipping() -> None:
    decoder = LineDecoder(4, skip_oversized=False)
    events = decode_all(decoder, [b"toolong\nok\n"])
    assert len(events) == 1
    assert isinstance(events[0], FrameError)
    assert events[0].recoverable is False
    assert events[0].raw == b"toolong\nok\n"
    assert decoder.closed


@pytest.mark.parametrize(
    "data",
    [b"\x00", b"\x00\x00\x00", b"\x00\x00\x00\x05", b"\x00\x00\x00\x05{}", lp(b"ok") + b"\0"],
)
def test_length_prefixed_truncated_at_eof(data: bytes) -> None:
    for _label, chunks in chunkings(data):
        events = decode_all(LengthPrefixedDecoder(), chunks)
        error = events[-1]
        assert isinstance(error, FrameError)
        assert error.kind is FrameErrorKind.TRUNCATED
        assert error.recoverable is False
        assert raw_of(events) == data


def test_line_truncated_at_eof() -> None:
    data = b'ok\n{"jsonrpc":"2.0"'
    for _label, chunks in chunkings(data):
        events = decode_all(LineDecoder(), chunks)
        assert events[0] == Frame(b"ok", b"", b"\n")
        assert isinstance(events[1], FrameError)
        assert events[1].kind is FrameErrorKind.TRUNCATED and not events[1].recoverable
        assert events[1].raw == b'{"jsonrpc":"2.0"'


def test_truncated_while_skipping_an_oversized_frame() -> None:
    events = decode_all(LengthPrefixedDecoder(2), [struct.pack("!I", 10) + b"abc"])
    assert summarize(events) == [
        ("error", FrameErrorKind.OVERSIZED, True, 10),
        ("discarded", 3, False),
        ("error", FrameErrorKind.TRUNCATED, False, None),
    ]


def test_clean_eof_and_no_data_after_eof() -> None:
    decoder = LengthPrefixedDecoder()
    decoder.receive_eof()
    assert decoder.next_event() == EndOfStream()
    assert decoder.closed
    with pytest.raises(RuntimeError):
        decoder.receive_data(b"x")


def test_empty_payload_frames() -> None:
    assert decode_all(LengthPrefixedDecoder(), [b"\0\0\0\0"])[0] == Frame(b"", b"\0\0\0\0")
    assert decode_all(LineDecoder(), [b"\n"])[0] == Frame(b"", b"", b"\n")
    assert decode_all(LengthPrefixedDecoder(0), [b"\0\0\0\0"])[0].raw == b"\0\0\0\0"


def test_compaction_over_many_frames() -> None:
    payloads = [bytes([i % 251]) * (i % 997) for i in range(3000)]
    lp_stream = b"".join(lp(p) for p in payloads)
    line_payloads = [b"L%d-" % i + b"v" * (i % 613) for i in range(3000)]
    line_stream = b"".join(p + b"\n" for p in line_payloads)
    assert len(lp_stream) > 4 * 256 * 1024
    for size in (1000, 4093, 65536, 300_001):
        decoder = LengthPrefixedDecoder()
        events = decode_all(decoder, chunked(lp_stream, size))
        assert [e.payload for e in events if isinstance(e, Frame)] == payloads
        assert decoder.frames_decoded == len(payloads)
        assert decoder.bytes_received == len(lp_stream)
        assert decoder.buffered == 0
        line_decoder = LineDecoder()
        events = decode_all(line_decoder, chunked(line_stream, size))
        assert [e.payload for e in events if isinstance(e, Frame)] == line_payloads
        assert line_decoder.buffered == 0


def test_buffered_counts_unreturned_bytes() -> None:
    decoder = LengthPrefixedDecoder()
    decoder.receive_data(lp(b"abc") + b"\0\0")
    assert decoder.buffered == 9
    assert decoder.next_event() == Frame(b"abc", struct.pack("!I", 3))
    assert decoder.buffered == 2
    assert decoder.next_event() is NEED_DATA


@pytest.mark.parametrize("size", [3, 300_000])  # a small frame, and one joined from pieces
@pytest.mark.parametrize("cut", [1, 4, 6])  # into the second frame
def test_held_is_the_stream_s_bytes_not_returned_yet(size: int, cut: int) -> None:
    """What a caller that stops decoding still owes the stream: exactly the bytes `buffered`
    counts, in order (the start of a frame, however it is kept)."""
    whole = lp(b"x" * 5) + lp(bytes(range(256)) * (size // 256) + b"y" * (size % 256))
    for decoder in (LengthPrefixedDecoder(), decoder_for(Framing.LENGTH_PREFIXED, 2**20)):
        rest = whole[: len(whole) - cut]
        for start in range(0, len(rest), 65536):
            decoder.receive_data(rest[start : start + 65536])
        assert decoder.next_event() == Frame(b"x" * 5, struct.pack("!I", 5))
        assert decoder.next_event() is NEED_DATA
        assert decoder.held() == rest[9:] and len(decoder.held()) == decoder.buffered
    lines = LineDecoder()
    lines.receive_data(b'{"a":1}\n{"b"')
    assert lines.next_event() == Frame(b'{"a":1}', b"", b"\n")
    assert lines.held() == b'{"b"' and lines.buffered == 4


def test_encoders() -> None:
    assert encode_length_prefixed(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_line(b"abc") == b"abc\n"
    with pytest.raises(ValueError):
        encode_line(b"a\nb")
    assert encode_json({"t": "é"}) == '{"t": "é"}'.encode()


def test_decoder_for_and_defaults() -> None:
    lp_decoder = decoder_for(Framing.LENGTH_PREFIXED)
    assert isinstance(lp_decoder, LengthPrefixedDecoder)
    assert lp_decoder.max_payload == DEFAULT_LENGTH_PREFIXED_CAP == 64 * 1024 * 1024
    line_decoder = decoder_for(Framing.LINE, 10, skip_oversized=False)
    assert isinstance(line_decoder, LineDecoder)
    assert line_decoder.max_payload == 10 and not line_decoder.skip_oversized
    assert LineDecoder().max_payload == DEFAULT_LINE_CAP == 16 * 1024 * 1024
    with pytest.raises(ValueError):
        LengthPrefixedDecoder(-1)


def test_need_data_is_a_singleton() -> None:
    assert NeedData() is NEED_DATA
    assert repr(NEED_DATA) == "NEED_DATA"


def test_frame_sizes() -> None:
    frame = Frame(b"abc", b"\0\0\0\3")
    assert frame.size == len(frame.raw) == 7
    assert FrameError(FrameErrorKind.TRUNCATED, "", b"ab", False).size == 2
    assert Discarded(b"abc", True).size == 3


@pytest.mark.parametrize("chunk", [65536, 999_983])
def test_large_frames_collect_pieces_and_keep_the_bytes_that_follow(chunk: int) -> None:
    big = bytes(range(256)) * 8192  # 2 MiB: takes the large-frame path
    small = b'{"id": 1}'
    stream = (
        struct.pack("!I", len(big))
        + big
        + struct.pack("!I", len(small))
        + small
        + struct.pack("!I", len(big))
        + big
    )
    decoder = LengthPrefixedDecoder()
    events = []
    for start in range(0, len(stream), chunk):
        decoder.receive_data(stream[start : start + chunk])
        events.extend(decoder.events())
    decoder.receive_eof()
    events.extend(decoder.events())
    frames = [e for e in events if isinstance(e, Frame)]
    assert [f.payload for f in frames] == [big, small, big]
    assert b"".join(e.raw for e in events) == stream


def test_eof_inside_a_large_frame_reports_every_byte_as_truncated() -> None:
    big = b"y" * (3 * 1024 * 1024)
    stream = struct.pack("!I", len(big)) + big
    cut = stream[: len(stream) - 10]
    decoder = LengthPrefixedDecoder()
    for start in range(0, len(cut), 65536):
        decoder.receive_data(cut[start : start + 65536])
    assert list(decoder.events()) == []
    assert decoder.buffered == len(cut)
    decoder.receive_eof()
    (error,) = list(decoder.events())
    assert isinstance(error, FrameError) and error.kind is FrameErrorKind.TRUNCATED
    assert error.raw == cut


def test_bytes_fed_after_a_large_frame_completed_belong_to_the_next_frame() -> None:
    big = b"a" * (2 * 1024 * 1024)
    stream = struct.pack("!I", len(big)) + big + struct.pack("!I", 3) + b"xyz"
    decoder = LengthPrefixedDecoder()
    # Feed everything in two chunks before pulling a single event (h11 style).
    decoder.receive_data(stream[: len(stream) - 5])
    decoder.receive_data(stream[len(stream) - 5 :])
    frames = [e for e in decoder.events() if isinstance(e, Frame)]
    assert [f.payload for f in frames] == [big, b"xyz"]

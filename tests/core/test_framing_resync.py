"""find_frame_start: where a decoder can pick a stream up again after a gap."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem_core.framing import Framing, encode_length_prefixed, find_frame_start

CAP = 64 * 1024 * 1024


def _frames(count: int) -> bytes:
    return b"".join(
        encode_length_prefixed(b'{"id": "%d", "method": "scene.list_layers"}' % i)
        for i in range(count)
    )


def test_a_chunk_that_starts_at_a_frame_starts_there() -> None:
    assert find_frame_start(Framing.LENGTH_PREFIXED, _frames(3), CAP) == 0


@given(st.integers(min_value=1, max_value=200))
def test_a_chunk_cut_anywhere_resumes_at_the_next_frame(cut: int) -> None:
    stream = _frames(10)
    boundaries = [0]
    for _ in range(10):
        (length,) = (int.from_bytes(stream[boundaries[-1] : boundaries[-1] + 4], "big"),)
        boundaries.append(boundaries[-1] + 4 + length)
    found = find_frame_start(Framing.LENGTH_PREFIXED, stream[cut:], CAP)
    assert found is not None
    assert cut + found == min(b for b in boundaries if b >= cut)


def test_no_plausible_header_gives_none() -> None:
    assert find_frame_start(Framing.LENGTH_PREFIXED, b'"id": 1, "x": {"a": 1}}', CAP) is None
    assert find_frame_start(Framing.LENGTH_PREFIXED, b"", CAP) is None


def test_lines_resume_after_the_first_newline() -> None:
    assert find_frame_start(Framing.LINE, b'tail"}\n{"jsonrpc":"2.0"}\n', CAP) == 7
    assert find_frame_start(Framing.LINE, b"no newline", CAP) is None

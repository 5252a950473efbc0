"""golem_core.answers: which frame a server sends answers the request, fed whole, byte by byte
and split at every offset, on both framings."""

from __future__ import annotations

from typing import Any, Union

import pytest
from core_feeding import chunkings

from golem_core.answers import Answer, AnswerReader, Reading, Unrelated, UnrelatedKind
from golem_core.framing import NEED_DATA, EndOfStream, FrameError, FrameErrorKind
from golem_core.messages import Malformed
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, MCP, Profile

PROFILES = [GOLEM, JSONRPC_NDJSON]


def readings(reader: AnswerReader, pending: list[bytes], wanted: Any) -> list[Reading]:
    """Every reading up to and including the answer (or the end), feeding the chunks of
    ``pending`` one by one as needed (what is left stays in it), then the end."""
    out: list[Reading] = []
    while True:
        reading = reader.next_reading(wanted)
        if reading is NEED_DATA:
            if pending:
                reader.receive_data(pending.pop(0))
            else:
                reader.receive_eof()
            continue
        out.append(reading)
        if not isinstance(reading, Unrelated):
            return out


def key(profile: Profile, ident: Union[str, int]) -> Any:
    return AnswerReader(profile).key_of({"id": ident, "method": "m"})


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_notifications_and_other_ids_are_unrelated_and_the_answer_ends_it(
    profile: Profile,
) -> None:
    data = b"".join(
        profile.encode(obj)
        for obj in (
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
            {"jsonrpc": "2.0", "id": 99, "method": "ping"},
            {"jsonrpc": "2.0", "id": 6, "result": {}, "error": None},
            {"jsonrpc": "2.0", "id": 7, "result": {"ok": True}, "error": None},
            {"jsonrpc": "2.0", "id": 8, "result": {}, "error": None},
        )
    )
    for label, chunks in chunkings(data):
        reader = AnswerReader(profile)
        pending = list(chunks)
        got = readings(reader, pending, key(profile, 7))
        assert [type(r) for r in got] == [Unrelated, Unrelated, Unrelated, Answer], label
        answer = got[-1]
        assert isinstance(answer, Answer) and answer.message.obj["result"] == {"ok": True}
        assert (
            isinstance(got[0], Unrelated)
            and got[0].message.obj["method"] == "notifications/progress"
        )
        assert reader.unrelated == 3
        # The bytes past the answer stay for the next request of the connection.
        assert [type(r) for r in readings(reader, pending, key(profile, 8))] == [Answer], label


def test_a_string_id_is_not_the_number_with_the_same_digits() -> None:
    reader = AnswerReader(GOLEM)
    reader.receive_data(GOLEM.encode({"id": "7", "result": {}, "error": None}))
    assert isinstance(reader.next_reading(key(GOLEM, 7)), Unrelated)


def test_a_reply_without_a_usable_id_answers_whatever_was_asked() -> None:
    # The server's answer to a request it could not read carries a null id (GOLEM) or none.
    reader = AnswerReader(GOLEM)
    reader.receive_data(GOLEM.encode({"id": None, "result": None, "error": {"code": "X"}}))
    assert isinstance(reader.next_answer(key(GOLEM, "a")), Answer)


def test_an_answer_that_is_no_json_is_an_answer_read_as_malformed() -> None:
    reader = AnswerReader(GOLEM)
    reader.receive_data(len(b"\xff{").to_bytes(4, "big") + b"\xff{")
    answer = reader.next_answer(key(GOLEM, "a"))
    assert isinstance(answer, Answer) and isinstance(answer.message, Malformed)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_closing_before_the_answer_ends_the_stream(profile: Profile) -> None:
    reader = AnswerReader(profile)
    reader.receive_data(profile.encode({"jsonrpc": "2.0", "method": "log", "params": {}}))
    reader.receive_eof()
    assert isinstance(reader.next_answer(key(profile, 1)), EndOfStream)


def test_a_frame_cut_short_is_a_truncation() -> None:
    reader = AnswerReader(GOLEM)
    reader.receive_data(GOLEM.encode({"id": 1, "result": {}, "error": None})[:-2])
    assert reader.next_answer(key(GOLEM, 1)) is NEED_DATA
    reader.receive_eof()
    event = reader.next_answer(key(GOLEM, 1))
    assert isinstance(event, FrameError) and event.kind is FrameErrorKind.TRUNCATED


def test_an_oversized_header_is_an_error_not_skipped() -> None:
    # Bounded memory: the declared size is refused before any of the body is buffered.
    reader = AnswerReader(GOLEM, cap=16)
    reader.receive_data((1 << 20).to_bytes(4, "big") + b"x" * 100)
    event = reader.next_answer(key(GOLEM, 1))
    assert isinstance(event, FrameError) and event.kind is FrameErrorKind.OVERSIZED


@pytest.mark.parametrize("profile", [GOLEM, JSONRPC_NDJSON, MCP], ids=lambda p: p.name)
def test_what_answers_nothing_is_told_apart(profile: Profile) -> None:
    """The server's own message, a late or repeated answer to an earlier request, and a reply
    with an id never asked for: only the last answers the request, with the wrong id, and only
    where the protocol's client takes the next reply as its answer."""
    reader = AnswerReader(profile)
    reader.receive_data(profile.encode({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert isinstance(reader.next_reading(key(profile, 1)), Answer)
    for obj in (
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
    ):
        reader.receive_data(profile.encode(obj))
    got = [reader.next_reading(key(profile, 2)) for _ in range(3)]
    assert all(isinstance(reading, Unrelated) for reading in got)
    kinds = [(r.kind, r.key, r.wrong_id) for r in got if isinstance(r, Unrelated)]
    sequential = not profile.replies_by_id
    assert kinds == [
        (UnrelatedKind.OWN, None, False),
        (UnrelatedKind.STALE, key(profile, 1), False),
        (UnrelatedKind.OTHER, key(profile, 9), sequential),
    ]


def test_the_answer_to_a_request_with_no_id_is_the_one_to_an_unreadable_request() -> None:
    # Scrybe answers a line it could not read with id 0 and a parse error.
    reader = AnswerReader(JSONRPC_NDJSON)
    error = {"code": -32700, "message": "parse error"}
    reader.receive_data(JSONRPC_NDJSON.encode({"jsonrpc": "2.0", "id": 0, "error": error}))
    assert isinstance(reader.next_reading(None), Answer)


def test_a_scrybe_parse_error_answers_a_request_sent_with_an_id() -> None:
    # The server could not read what was sent: its id-0 parse error is the answer, not a
    # reply with another id.
    reader = AnswerReader(JSONRPC_NDJSON)
    error = {"code": -32700, "message": "parse error"}
    reader.receive_data(JSONRPC_NDJSON.encode({"jsonrpc": "2.0", "id": 0, "error": error}))
    assert isinstance(reader.next_reading(key(JSONRPC_NDJSON, 1)), Answer)


def test_where_replies_go_by_id_a_line_that_is_no_reply_is_not_the_answer() -> None:
    """An MCP server's banner or JSON log line on stdout, before the answer."""
    reader = AnswerReader(MCP)
    reader.receive_data(b"server log line\n" + b'{"status": "starting"}\n')
    reader.receive_data(MCP.encode({"jsonrpc": "2.0", "id": 1, "result": {}}))
    got = [reader.next_reading(key(MCP, 1)) for _ in range(3)]
    assert [type(reading).__name__ for reading in got] == ["Unrelated", "Unrelated", "Answer"]

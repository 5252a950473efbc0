"""The closing line of a session: what it recorded, and, for an observing process that took
over from one that died, that its counts are since then."""

from __future__ import annotations

from golem_proxy.events import Direction, GapReason, ObservationLost
from golem_proxy.live.tally import SessionTally


def test_the_closing_line_says_what_was_recorded_and_where() -> None:
    tally = SessionTally(exchanges=3, errors=1)
    assert tally.summary("live.jsonl") == (
        "golem-proxy proxy: recorded 3 exchanges (1 error, 0 violations) to live.jsonl"
    )


def test_after_a_restart_the_counts_are_said_to_be_since_then() -> None:
    tally = SessionTally(exchanges=1)
    assert tally.summary("live.jsonl", since_restart=True) == (
        "golem-proxy proxy: since observation restarted, recorded 1 exchange "
        "(0 errors, 0 violations) to live.jsonl"
    )
    assert tally.summary(None, since_restart=True) == (
        "golem-proxy proxy: since observation restarted, 1 exchange (0 errors, 0 violations), "
        "not recorded (no --record)"
    )


def test_requests_without_an_answer_are_said_so_the_counts_match_the_rows() -> None:
    # The exchanges are the answered requests: a dropped, lost or unanswered one is a row of
    # `show` too, and the line says how many there are.
    tally = SessionTally(exchanges=9, errors=4, violations=8, requests=12)
    assert tally.summary("s.jsonl") == (
        "golem-proxy proxy: recorded 9 exchanges (4 errors, 8 violations; 3 requests without "
        "an answer) to s.jsonl"
    )


def test_after_a_restart_the_requests_taken_up_count_among_those_without_an_answer() -> None:
    # Two requests the recording had in flight at the take-over, one answered since, and a
    # request seen since that has no answer: two without one.
    tally = SessionTally(exchanges=1, requests=1)
    tally.held_again(2)
    assert tally.summary("s.jsonl", since_restart=True) == (
        "golem-proxy proxy: since observation restarted, recorded 1 exchange (0 errors, "
        "0 violations; 2 requests without an answer) to s.jsonl"
    )


def test_framing_errors_are_said_so_the_counts_match_the_rows() -> None:
    # A truncated or oversized frame is a row of `show` and a failure of `stats` and `check`.
    from golem_core.framing import FrameErrorKind
    from golem_proxy.events import Direction, FramingErrorSeen

    tally = SessionTally(exchanges=20, errors=5, violations=6, requests=25)
    tally(
        FramingErrorSeen(
            conn=1,
            route="main",
            direction=Direction.S2C,
            t=1.0,
            kind=FrameErrorKind.TRUNCATED,
            detail="cut",
            raw=b"\x00\x00",
            recoverable=False,
        )
    )
    assert tally.counts() == (
        "20 exchanges (5 errors, 6 violations; 5 requests without an answer; 1 framing error)"
    )


def _lost(reason: str, size: int, conn: int = 1) -> ObservationLost:
    return ObservationLost(
        conn=conn, route="main", direction=Direction.C2S, t=1.0, reason=GapReason(reason), size=size
    )


def test_gaps_in_what_was_observed_are_said_last_as_check_words_them() -> None:
    # The exchanges a gap hid are in no count: without this the line read as a whole session.
    tally = SessionTally(exchanges=128, requests=128)
    for size in (4194361, 88082131, 92276396):
        tally(_lost("behind", size))
    tally(_lost("evicted", 5))  # requests let go: no gap of bytes
    assert tally.summary("s.jsonl", 2) == (
        "golem-proxy proxy: recorded 128 exchanges (0 errors, 0 violations) to s.jsonl; "
        "2 events not recorded (the disk fell behind); "
        "3 gaps in what was observed (3 unobserved:behind, 176.0 MiB)"
    )
    assert tally.summary(None).endswith(
        "not recorded (no --record); 3 gaps in what was observed (3 unobserved:behind, 176.0 MiB)"
    )
    assert tally.summary("s.jsonl", failure="disk full").endswith(
        "stopped early (disk full); 3 gaps in what was observed (3 unobserved:behind, 176.0 MiB)"
    )


def test_after_a_restart_the_restart_is_a_gap_its_connections_rows_add_bytes() -> None:
    tally = SessionTally(exchanges=1)
    tally.took_over()
    tally(_lost("restarted", 2560))
    tally(_lost("restarted", 0, conn=2))  # an idle one
    assert tally.summary("s.jsonl", since_restart=True) == (
        "golem-proxy proxy: since observation restarted, recorded 1 exchange (0 errors, "
        "0 violations) to s.jsonl; 1 gap in what was observed "
        "(1 unobserved:restarted, at least 2.5 KiB)"
    )

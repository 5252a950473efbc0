"""When ``--fault error``'s answers may go (`AnswerTurns`), sans-IO."""

from __future__ import annotations

from golem_proxy.live.answer_turns import AnswerTurns


def test_an_answer_goes_at_once_when_nothing_waits_before_it() -> None:
    turns = AnswerTurns()
    assert not turns.hold(frozenset(), b"a")
    assert len(turns) == 0


def test_answers_wait_for_the_requests_before_them_and_keep_their_order() -> None:
    turns = AnswerTurns()
    assert turns.hold(frozenset({0}), b"a")
    assert turns.hold(frozenset({0, 1}), b"b")  # behind a, whatever it waits for
    assert turns.due(frozenset({0, 1})) == []
    assert turns.due(frozenset({1})) == [b"a"]  # 0 answered: a goes, b waits for 1
    assert turns.due(frozenset()) == [b"b"]


def test_an_answer_of_the_plugins_being_sent_goes_first() -> None:
    turns = AnswerTurns()
    turns.answering = 1  # decided on (no longer waiting), not sent yet: a delay holds it
    assert turns.hold(frozenset(), b"a")
    assert turns.due(frozenset()) == []
    turns.answering = 0
    assert turns.due(frozenset()) == [b"a"]


def test_once_the_plugins_side_ended_nothing_waits() -> None:
    turns = AnswerTurns()
    assert turns.hold(frozenset({0}), b"a")
    assert turns.end() == [b"a"]
    assert not turns.hold(frozenset({0}), b"b")

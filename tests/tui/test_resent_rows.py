"""Finding the row a request sent again came back as (`ResentRows`): by its route, method and
the bytes sent, among the flows newer than when it was sent only; given up when it never
comes."""

from __future__ import annotations

from golem_core.profiles import GOLEM
from golem_proxy.tui.model import SessionModel
from golem_proxy.tui.resent_rows import FARTHEST, AnswerNotice, ResentRows
from tests.support.sessions import SessionBuilder


def test_the_row_is_the_newer_flow_that_carries_the_bytes_sent() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    first = s.request(1, "scene.list_layers", {}, 0.1)
    s.respond(first, 0.2, result={"layers": []})
    model = SessionModel(GOLEM)
    model.apply(s.events)
    rows = ResentRows()
    # Sent again as the same bytes but for its id: flow 1 itself, older, is not it.
    s.open(2, 1.0)
    again = s.request(2, "scene.list_layers", {}, 1.1)
    notice = AnswerNotice("ok", 0.5)  # the sender's measure
    rows.expect(1, 1, "main", "scene.list_layers", again.payload, "unused", notice)
    assert rows.link(model.flows) == []
    # Another client's call of the same method comes first: not the bytes sent.
    other = s.request(1, "scene.list_layers", {"x": 1}, 1.05)
    events = s.events[-3:]
    model.apply([events[0], events[2], events[1]])  # open 2, the other call, then the copy
    assert [f.number for f in model.flows] == [1, 2, 3] and model.flows[1].request is not None
    assert model.flows[1].request.payload == other.payload
    # Linked at once; its notice waits for the row's answer, to give the row's latency.
    assert rows.link(model.flows) == [(1, 3, "")]
    assert (rows.note(1), rows.note(3), rows.note(2)) == (
        "sent again as #3",
        "sent again from #1 (r)",
        "",
    )
    assert rows.awaited == [] and rows.pending
    s.events.clear()
    s.respond(again, 1.103, result={"layers": []})
    model.apply(s.events)
    assert rows.link(model.flows) == [(1, 3, ": ok in 3.0 ms (D: the difference)")]
    assert not rows.pending and rows.waiting_notice(1) is None


def test_a_row_that_never_comes_is_given_up() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    model = SessionModel(GOLEM)
    rows = ResentRows()
    rows.expect(1, 0, "main", "ping", b'{"id":"gone"}', "gone", AnswerNotice("ok", 0.0021))
    said = ": ok in 2.1 ms (D: the difference)"  # no row: the sender's measure
    assert rows.waiting_notice(1) == said and rows.waiting_notice(1) is None  # said once
    for at in range(0, FARTHEST + 100, 50):
        for i in range(50):
            s.request(1, "ping", {}, at + i * 0.001)
        model.apply(s.events)
        s.events.clear()
        assert rows.link(model.flows) == []
    assert rows.awaited == []


def test_a_row_sent_edited_says_so() -> None:
    s = SessionBuilder(check=False)
    s.open(1, 0.0)
    first = s.request(1, "scene.create_layer", {"name": "Orig"}, 0.1)
    s.respond(first, 0.2, result={"full_path": "Orig"})
    edited = s.request(1, "scene.create_layer", {"name": "Edited"}, 1.1)
    model = SessionModel(GOLEM)
    model.apply(s.events)
    rows = ResentRows()
    rows.expect(1, 1, "main", "scene.create_layer", edited.payload, "unused", None, "E")
    assert rows.link(model.flows) == [(1, 2, "")]
    assert rows.note(2) == "sent again from #1 (E)"

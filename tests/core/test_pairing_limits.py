"""Pairing holds bounded memory: caps on outstanding requests, notifications never held."""

from __future__ import annotations

from golem_core.messages import Role
from golem_core.pairing import Correlator
from golem_core.profiles import GOLEM, JSONRPC_NDJSON


def _golem_request(ident: int) -> bytes:
    return b'{"id": %d, "method": "scene.list_layers", "params": {}}' % ident


def test_oldest_requests_are_evicted_past_the_count_cap() -> None:
    correlator: Correlator[int] = Correlator(GOLEM, max_pending=3)
    evicted = []
    for ident in range(5):
        evicted += correlator.add_request(GOLEM.parse(_golem_request(ident), Role.REQUEST), ident)
    assert [p.context for p in evicted] == [0, 1]
    assert len(correlator) == 3
    answer = GOLEM.parse(b'{"id": 4, "success": true, "result": {}}', Role.RESPONSE)
    matched = correlator.match_response(answer)
    assert matched is not None and matched.context == 4


def test_oldest_requests_are_evicted_past_the_byte_cap() -> None:
    correlator: Correlator[int] = Correlator(GOLEM, max_pending_bytes=1000)
    evicted = []
    for ident in range(4):
        message = GOLEM.parse(_golem_request(ident), Role.REQUEST)
        evicted += correlator.add_request(message, ident, size=400)
    assert [p.context for p in evicted] == [0, 1]
    assert correlator.pending_bytes == 800
    correlator.clear()
    assert correlator.pending_bytes == 0


def test_the_newest_request_is_kept_even_when_alone_over_the_cap() -> None:
    correlator: Correlator[int] = Correlator(GOLEM, max_pending_bytes=10)
    message = GOLEM.parse(_golem_request(1), Role.REQUEST)
    assert correlator.add_request(message, 1, size=400) == []
    assert len(correlator) == 1


def test_jsonrpc_notifications_are_never_held() -> None:
    correlator: Correlator[int] = Correlator(JSONRPC_NDJSON)
    for _ in range(1000):
        note = JSONRPC_NDJSON.parse(b'{"jsonrpc":"2.0","method":"tick"}', Role.REQUEST)
        assert correlator.add_request(note, 0) == []
    assert len(correlator) == 0
    request = JSONRPC_NDJSON.parse(b'{"jsonrpc":"2.0","id":1,"method":"x"}', Role.REQUEST)
    correlator.add_request(request, 1)
    assert len(correlator) == 1


def test_a_request_answers_nothing_and_a_response_is_never_held() -> None:
    # A JSON-RPC server's notification or request travels where answers do; a client's
    # answer to it travels where requests do. Neither may take the other's place.
    correlator: Correlator[int] = Correlator(JSONRPC_NDJSON)
    call = JSONRPC_NDJSON.parse(b'{"jsonrpc":"2.0","id":1,"method":"state"}', Role.REQUEST)
    correlator.add_request(call, 1)
    note = JSONRPC_NDJSON.parse(b'{"jsonrpc":"2.0","method":"tick"}', Role.RESPONSE)
    asked = JSONRPC_NDJSON.parse(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', Role.RESPONSE)
    assert correlator.match_response(note) is None
    assert correlator.match_response(asked) is None
    answer = JSONRPC_NDJSON.parse(b'{"jsonrpc":"2.0","id":1,"result":{}}', Role.REQUEST)
    assert correlator.add_request(answer, 2) == [] and len(correlator) == 1


def test_evicting_the_oldest_replays_what_a_correlator_with_limits_let_go() -> None:
    """A reader pairing an old recording again has no limits: it lets go of the requests the
    tap evicted, oldest first, when the recording says so."""
    correlator: Correlator[int] = Correlator(GOLEM)
    for ident in range(4):
        message = GOLEM.parse(_golem_request(ident), Role.REQUEST)
        correlator.add_request(message, ident, size=100)
    assert [p.context for p in correlator.evict_oldest(2)] == [0, 1]
    assert correlator.pending_bytes == 200 and len(correlator) == 2
    assert correlator.evict_oldest(5) and len(correlator) == 0 and correlator.evict_oldest(1) == []

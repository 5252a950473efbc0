"""The id-echo rules of the golem profile only judge ids that could be read."""

from __future__ import annotations

import pytest

from golem_core.messages import Role
from golem_core.profiles import GOLEM

REQUEST = GOLEM.parse(b'{"id": "a7", "method": "scene.list_objects", "params": {}}', Role.REQUEST)


@pytest.mark.parametrize(
    "payload",
    [b'{"id": "a7", "result": "\xff"}', b'{"id": "a7", "result": ', b'["a7"]'],
    ids=["invalid-utf8", "invalid-json", "not-an-object"],
)
def test_an_unreadable_response_is_not_blamed_for_a_null_id(payload: bytes) -> None:
    response = GOLEM.parse(payload, Role.RESPONSE)
    assert GOLEM.check_exchange(REQUEST, response) == []


def test_a_readable_null_id_is_still_reported() -> None:
    response = GOLEM.parse(b'{"id": null, "result": {}, "error": null}', Role.RESPONSE)
    (found,) = GOLEM.check_exchange(REQUEST, response)
    assert found.rule == "golem.exchange.null-id"

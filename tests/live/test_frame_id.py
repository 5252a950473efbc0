"""A request's id read from its bytes without parsing it (`id_of_bytes`), as ``json.loads``
reads it, or said unknown where the walk does not reach it."""

from __future__ import annotations

import pytest

from golem_proxy.live.frame_id import ID_WITHIN, UNKNOWN, id_of_bytes

BULK = b"[" + b"[0]," * (ID_WITHIN // 4) + b"[0]]"


@pytest.mark.parametrize(
    ("payload", "ident"),
    [
        (b'{"id": "a-1", "method": "m", "params": {"grid": %s}}' % BULK, "a-1"),
        (b'{"jsonrpc":"2.0","id":7,"method":"m","params":%s}' % BULK, 7),
        (b'{"method": "m", "params": {"s": "\\"id\\": 9, {["}, "id": [1, "x"]}', [1, "x"]),
        (b'{"\\u0069d": "escaped", "params": []}', "escaped"),
        (b'{"id": 1, "id": 2}', 2),  # the last, as json.loads keeps it
        (b'{"id": null, "method": "m"}', None),
        (b'{"method": "m", "params": {"id": 3}}', None),  # a param's id is no request's
        (b"[1, 2]", None),  # no object: a server reads no id in it
        (b'{"id": 1, "params": [', None),  # nor in an object that never closes
        (b"  \n", None),
    ],
)
def test_the_id_is_read_as_json_loads_reads_it(payload: bytes, ident: object) -> None:
    assert id_of_bytes(payload) == ident


@pytest.mark.parametrize(
    "payload",
    [
        b'{"params": %s, "id": "late"}' % BULK,  # past what is walked
        b'{"pad": "' + b"x" * (ID_WITHIN - 16) + b'", "id": 123456789}',  # cut where it stops
        b'{"id": "' + b"x" * 2048 + b'", "params": %s}' % BULK,  # longer than an id is
        b'{"params": ' + b"[[1]," * 20_000 + b"[1]]" * 20_000 + b', "id": 1}',  # past the budget
    ],
    ids=["after the bulk", "cut", "too long", "deep"],
)
def test_an_id_the_walk_does_not_reach_is_unknown(payload: bytes) -> None:
    assert id_of_bytes(payload) is UNKNOWN

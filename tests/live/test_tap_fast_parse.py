"""The tap's fast JSON path types every payload exactly as the profile's reference parser."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.messages import Role
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile
from golem_proxy.live.tap import parse_fast

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(blacklist_categories=()), max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["id", "method", "params", "result", "error", "jsonrpc", "code", "message", "x"]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=12,
)


def _texts() -> st.SearchStrategy[bytes]:
    encoded = JSON_VALUES.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass"))
    raw = st.binary(max_size=40)
    hand = st.sampled_from(
        [
            b'{"id": 1, "id": 2, "method": "m"}',
            b'\xef\xbb\xbf{"id": 1}',
            b'{"id": NaN}',
            b'{"id": "\\ud800", "method": "m"}',
            b" {}\n",
            b"[" * 2000 + b"]" * 2000,
        ]
    )
    return encoded | raw | hand


@pytest.mark.parametrize("profile", [GOLEM, JSONRPC_NDJSON], ids=lambda p: p.name)
@settings(max_examples=300, deadline=None)
@given(payload=_texts(), role=st.sampled_from([Role.REQUEST, Role.RESPONSE]))
def test_the_fast_path_types_like_the_reference(
    profile: Profile, payload: bytes, role: Role
) -> None:
    assert repr(parse_fast(profile, payload, role)) == repr(profile.parse(payload, role))

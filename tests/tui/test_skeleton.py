"""What a view keeps of a large frame's message (tui/skeleton.py): its blobs and its long arrays
of numbers elided, each placeholder of the kind it stands for, everything else the message's
own, and the outcome the same as the whole message's."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from golem_core.messages import Malformed, Role
from golem_core.profiles import GOLEM, MCP
from golem_proxy.events import Direction, FrameSeen
from golem_proxy.live.tap_parse import ELIDE_STRINGS_OVER
from golem_proxy.tui.skeleton import (
    BULK_NUMBERS,
    DEEPEST,
    holds_elided_numbers,
    without_bulk,
    without_number_arrays,
)


def frame_of(obj: Any, direction: Direction = Direction.S2C, profile: Any = GOLEM) -> FrameSeen:
    payload = profile.encode_payload(obj)
    role = Role.REQUEST if direction is Direction.C2S else Role.RESPONSE
    message = profile.parse(payload, role)
    return FrameSeen(
        conn=1,
        route="main",
        direction=direction,
        index=0,
        t=0.0,
        size=len(payload) + 4,
        payload=payload,
        message=message,
    )


def test_a_long_array_of_numbers_becomes_an_array_holding_a_placeholder() -> None:
    points = [[i * 0.5, -i, i / 3] for i in range(BULK_NUMBERS // 3 + 1)]
    other = {"layer": "mesh", "small": [1, 2, 3]}
    value = {"vertices": points, "other": other, "count": len(points)}
    kept, elided = without_number_arrays(value)
    assert kept == {
        "vertices": [f"<{len(points) * 3} numbers elided>"],
        "other": {"layer": "mesh", "small": [1, 2, 3]},
        "count": len(points),
    }
    assert list(kept) == ["vertices", "other", "count"]  # in the message's order
    assert elided == len(json.dumps(points, separators=(",", ":")))
    assert kept["other"] is other  # only the way to an elided array is copied
    assert value["vertices"] is points  # and the message given is left as it was


def test_arrays_shorter_or_holding_anything_else_are_kept() -> None:
    short = list(range(BULK_NUMBERS - 1))
    assert without_number_arrays(short) == (short, 0)
    for intruder in (None, True, "x", {"a": 1}):
        mixed = [*range(BULK_NUMBERS), intruder]
        kept, elided = without_number_arrays(mixed)
        assert kept is mixed and elided == 0
    # An array of objects is walked: a long array of numbers inside one is elided.
    faces = list(range(BULK_NUMBERS))
    meshes = [{"name": "a", "faces": faces}, {"name": "b", "faces": [0, 1, 2]}]
    kept, elided = without_number_arrays(meshes)
    assert kept == [
        {"name": "a", "faces": [f"<{BULK_NUMBERS} numbers elided>"]},
        {"name": "b", "faces": [0, 1, 2]},
    ]
    assert kept[1] is meshes[1] and elided > 0


def test_numbers_are_counted_at_every_depth_of_nested_arrays() -> None:
    nested = [1, [2, [3, 4]], [], [[]], 5.0]
    assert without_number_arrays(nested, smallest=5) == (["<5 numbers elided>"], 25)
    assert without_number_arrays(nested, smallest=6) == (nested, 0)
    deep_intruder = [1, [2, [3, [None]]]]
    assert without_number_arrays(deep_intruder, smallest=1) == (deep_intruder, 0)


def test_arrays_are_looked_for_no_deeper_than_deepest() -> None:
    def nested(depth: int) -> Any:
        value: Any = list(range(BULK_NUMBERS))
        for _ in range(depth):
            value = {"inner": value, "name": "x"}
        return value

    assert without_number_arrays(nested(DEEPEST - 1))[1] > 0
    deep = nested(DEEPEST)
    assert without_number_arrays(deep) == (deep, 0)


def test_a_messages_own_members_are_elided_whole_only_as_params_or_result() -> None:
    # An id, a version or an error of the wrong type is named, value and all, in what the
    # message's outcome says: it stays; inside the error, data is bulk as anywhere.
    numbers = list(range(BULK_NUMBERS))
    for member in ("id", "jsonrpc", "method", "error", "extra"):
        message = {"jsonrpc": "2.0", "id": 1, "result": {"n": 1}, member: numbers}
        assert without_number_arrays(message, message=True) == (message, 0)
    message = {"id": 1, "result": numbers, "error": {"code": 1, "data": numbers}}
    kept, elided = without_number_arrays(message, message=True)
    assert elided == 2 * len(json.dumps(numbers, separators=(",", ":")))
    placeholder = [f"<{BULK_NUMBERS} numbers elided>"]
    assert kept == {"id": 1, "result": placeholder, "error": {"code": 1, "data": placeholder}}
    whole = frame_of({"jsonrpc": numbers, "id": 7, "result": {}}, profile=MCP)
    assert isinstance(whole.message, Malformed)
    assert without_bulk(whole, MCP) == (whole.message, 0)


def test_a_message_whose_skeleton_would_read_differently_is_kept_whole() -> None:
    # A version that is an object of numbers is named, value and all, in what the outcome
    # says; ids of 64 KiB of base64 would both read as the same placeholder.
    numbers = list(range(BULK_NUMBERS))
    odd = frame_of({"jsonrpc": {"v": numbers}, "id": 7, "result": {"v": numbers}}, profile=MCP)
    assert isinstance(odd.message, Malformed)
    message, elided = without_bulk(odd, MCP)  # the result's numbers go, the version stays
    assert isinstance(message, Malformed) and message.detail == odd.message.detail
    assert message.obj["jsonrpc"] == {"v": numbers} and elided > 0
    long_id = "B" * ELIDE_STRINGS_OVER
    answer = frame_of({"jsonrpc": "2.0", "id": long_id, "result": {"v": numbers}}, profile=MCP)
    message, elided = without_bulk(answer, MCP)
    assert message is answer.message and elided == 0
    request = frame_of(
        {"jsonrpc": "2.0", "id": long_id, "method": "tools/call", "params": {"v": numbers}},
        Direction.C2S,
        profile=MCP,
    )
    assert without_bulk(request, MCP) == (request.message, 0)


def test_a_tree_deeper_than_the_interpreter_walks_is_left_as_it_is() -> None:
    value: Any = list(range(BULK_NUMBERS))
    for _ in range(20_000):
        value = [value, "x"]
    assert without_number_arrays(value) == (value, 0)


def test_the_outcome_on_the_skeleton_is_the_whole_messages() -> None:
    numbers = [i * 0.25 for i in range(BULK_NUMBERS)]
    golem = [
        {"id": "a", "result": {"success": False, "message": "bad mesh", "vertices": numbers}},
        {"id": "a", "result": {"vertices": numbers}, "error": None},
        {"id": "a", "result": None, "error": {"code": 3, "message": "no", "data": numbers}},
    ]
    for obj in golem:
        whole = frame_of(obj)
        message, elided = without_bulk(whole, GOLEM)
        assert elided > 0 and message is not whole.message
        assert GOLEM.outcome(None, message) == GOLEM.outcome(None, whole.message)
        assert type(message) is type(whole.message)
    content = [{"type": "text", "text": "mesh too large"}]
    for failed in (True, False):
        result = {"content": content, "structuredContent": {"v": numbers}, "isError": failed}
        whole = frame_of({"jsonrpc": "2.0", "id": 7, "result": result}, profile=MCP)
        message, elided = without_bulk(whole, MCP)
        assert message.result["structuredContent"] == {  # type: ignore[attr-defined]
            "v": [f"<{BULK_NUMBERS} numbers elided>"]
        }
        assert message.result["content"] == content  # type: ignore[attr-defined]
        assert MCP.outcome(None, message) == MCP.outcome(None, whole.message)


def test_a_blob_and_numbers_together_and_a_frame_the_tap_elided() -> None:
    numbers = list(range(BULK_NUMBERS))
    blob = "A" * ELIDE_STRINGS_OVER
    whole = frame_of({"id": "a", "result": {"image": blob, "depth": numbers}, "error": None})
    message, elided = without_bulk(whole, GOLEM)
    assert message.result == {  # type: ignore[attr-defined]
        "image": f"<{ELIDE_STRINGS_OVER} bytes elided>",
        "depth": [f"<{BULK_NUMBERS} numbers elided>"],
    }
    numbers_size = len(json.dumps(numbers, separators=(",", ":")))
    assert elided == ELIDE_STRINGS_OVER + numbers_size
    # A skeleton is its own skeleton.
    skeletal = dataclasses.replace(whole, message=message, elided=elided)
    assert without_bulk(skeletal, GOLEM) == (message, elided)
    # A frame the live tap typed with its blob elided (over 1 MiB) keeps that, and loses its
    # numbers too: the counts add up.
    blob_only = frame_of({"id": "a", "result": {"image": blob, "depth": numbers}, "error": None})
    tapped = dataclasses.replace(
        blob_only,
        message=GOLEM.parse_elided(blob_only.payload, Role.RESPONSE, ELIDE_STRINGS_OVER)[0],
        elided=ELIDE_STRINGS_OVER,
    )
    message, elided = without_bulk(tapped, GOLEM)
    assert message.result["depth"] == [f"<{BULK_NUMBERS} numbers elided>"]  # type: ignore[attr-defined]
    assert elided == ELIDE_STRINGS_OVER + numbers_size


def test_a_message_with_no_bulk_or_no_json_is_its_own() -> None:
    plain = frame_of({"id": "a", "result": {"names": ["x"] * BULK_NUMBERS}, "error": None})
    assert without_bulk(plain, GOLEM) == (plain.message, 0)
    request = frame_of(
        {"id": "a", "method": "geometry.create_mesh", "params": {"v": list(range(BULK_NUMBERS))}},
        Direction.C2S,
    )
    message, elided = without_bulk(request, GOLEM)
    assert message.method == "geometry.create_mesh" and elided > 0  # type: ignore[attr-defined]
    assert message.params == {"v": [f"<{BULK_NUMBERS} numbers elided>"]}  # type: ignore[attr-defined]
    broken = frame_of({"id": "a", "result": list(range(BULK_NUMBERS))})
    broken = dataclasses.replace(broken, payload=broken.payload[:-1])
    broken = dataclasses.replace(broken, message=GOLEM.parse(broken.payload, Role.RESPONSE))
    assert isinstance(broken.message, Malformed) and broken.message.obj is None
    assert without_bulk(broken, GOLEM) == (broken.message, 0)


def test_a_skeleton_says_whether_it_holds_elided_numbers() -> None:
    numbers = list(range(BULK_NUMBERS))
    message, _ = without_bulk(frame_of({"id": "a", "result": {"m": [numbers]}}), GOLEM)
    assert holds_elided_numbers(message.obj)
    blob = frame_of({"id": "a", "result": {"image": "A" * ELIDE_STRINGS_OVER}, "error": None})
    message, elided = without_bulk(blob, GOLEM)
    assert elided and not holds_elided_numbers(message.obj)
    assert not holds_elided_numbers({"said": "<5 numbers elided>", "list": ["<5 numbers>"]})

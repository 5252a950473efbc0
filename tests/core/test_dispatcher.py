"""golem_core.dispatcher: built-ins, registration, exception mapping and the bytes-level reply."""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem_core.decoders import LengthPrefixedDecoder
from golem_core.dispatcher import Dispatcher
from golem_core.errors import (
    InvalidParams,
    MethodNotFound,
    NotImplementedMethod,
    ObjectNotFound,
    OperationFailed,
    UiTimeout,
)
from golem_core.messages import Request, Role
from golem_core.profiles import GOLEM, JSONRPC_NDJSON


def req(method: str, params: Any = None, ident: Any = "r1") -> Request:
    obj: dict[str, Any] = {"id": ident, "method": method}
    if params is not None:
        obj["params"] = params
    message = GOLEM.parse(json.dumps(obj).encode(), Role.REQUEST)
    assert isinstance(message, Request)
    return message


def decode_reply(data: bytes) -> Any:
    decoder = LengthPrefixedDecoder()
    (frame,) = decoder.feed(data)
    return json.loads(frame.payload)  # type: ignore[union-attr]


def test_ping() -> None:
    assert Dispatcher().dispatch(req("ping", {})) == {
        "id": "r1",
        "result": {"alive": True},
        "error": None,
    }


def test_shutdown_calls_on_shutdown() -> None:
    calls: list[str] = []
    dispatcher = Dispatcher(on_shutdown=lambda: calls.append("down"))
    reply = dispatcher.dispatch(req("shutdown"))
    assert reply == {"id": "r1", "result": {"shutdown": "initiated"}, "error": None}
    assert calls == ["down"] and dispatcher.shutdown_requested


def test_list_methods_sorted_with_builtins() -> None:
    dispatcher = Dispatcher()
    dispatcher.register("scene.list_objects", lambda p: {})
    dispatcher.register("creation.create_box", lambda p: {})
    reply = dispatcher.dispatch(req("list_methods"))
    assert reply["result"] == {
        "methods": ["creation.create_box", "list_methods", "ping", "scene.list_objects", "shutdown"]
    }
    assert "ping" in dispatcher and "nope" not in dispatcher


def test_register() -> None:
    dispatcher = Dispatcher()
    dispatcher.register("a.one", lambda p: {"one": p.get("x")})
    assert dispatcher.dispatch(req("a.one", {"x": 5}))["result"] == {"one": 5}


def test_duplicate_and_empty_names_are_rejected() -> None:
    dispatcher = Dispatcher()
    dispatcher.register("a", lambda p: None)
    with pytest.raises(ValueError, match="already registered"):
        dispatcher.register("a", lambda p: None)
    with pytest.raises(ValueError, match="already registered"):
        dispatcher.register("ping", lambda p: None)
    with pytest.raises(ValueError, match="non-empty"):
        dispatcher.register("", lambda p: None)


def test_dispatchers_do_not_share_state() -> None:
    first, second = Dispatcher(), Dispatcher()
    first.register("only.first", lambda p: {})
    assert "only.first" not in second


def raising(exc: BaseException) -> Callable[[dict[str, Any]], Any]:
    def handler(params: dict[str, Any]) -> Any:
        raise exc

    return handler


@pytest.mark.parametrize(
    "exc,code,message,details",
    [
        (
            InvalidParams("Required parameter 'guids' is missing.", "guids"),
            "INVALID_PARAMS",
            "Required parameter 'guids' is missing.",
            {"param": "guids"},
        ),
        (
            InvalidParams("bad", "x", {"method": "m"}),
            "INVALID_PARAMS",
            "bad",
            {"method": "m", "param": "x"},
        ),
        (ObjectNotFound("no such guid"), "OBJECT_NOT_FOUND", "no such guid", None),
        (
            OperationFailed("boolean failed", {"a": 1}),
            "OPERATION_FAILED",
            "boolean failed",
            {"a": 1},
        ),
        (UiTimeout("ui busy"), "TIMEOUT", "ui busy", None),
        (MethodNotFound("gone"), "NOT_FOUND", "gone", None),
        (NotImplementedMethod("later"), "NOT_IMPLEMENTED", "later", None),
        (NotImplementedError("not yet"), "NOT_IMPLEMENTED", "not yet", {"method": "m.x"}),
        (NotImplementedError(), "NOT_IMPLEMENTED", "m.x is not implemented", {"method": "m.x"}),
    ],
)
def test_exception_mapping(exc: Exception, code: str, message: str, details: Any) -> None:
    dispatcher = Dispatcher()
    dispatcher.register("m.x", raising(exc))
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    assert dispatcher.dispatch(req("m.x")) == {"id": "r1", "result": None, "error": error}


def test_arbitrary_exception_is_internal_error_with_traceback() -> None:
    dispatcher = Dispatcher()
    dispatcher.register("m.x", raising(KeyError("k")))
    reply = dispatcher.dispatch(req("m.x"))
    error = reply["error"]
    assert reply["result"] is None
    assert error["code"] == "INTERNAL_ERROR"
    assert error["message"] == "KeyError: 'k'"
    assert error["details"]["method"] == "m.x" and error["details"]["type"] == "KeyError"
    assert "Traceback" in error["details"]["traceback"]
    assert "KeyError" in error["details"]["traceback"]
    quiet = Dispatcher(include_traceback=False)
    quiet.register("m.x", raising(ValueError("v")))
    assert "traceback" not in quiet.dispatch(req("m.x"))["error"]["details"]


def test_unknown_method_is_the_spec_envelope() -> None:
    ident = "550e8400-e29b-41d4-a716-446655440000"
    assert Dispatcher().dispatch(req("creation.create_hexagon", {}, ident)) == {
        "id": ident,
        "result": None,
        "error": {"code": -32601, "message": "Method not found: creation.create_hexagon"},
    }


def test_unknown_method_under_the_jsonrpc_profile() -> None:
    dispatcher = Dispatcher(profile=JSONRPC_NDJSON)
    reply = dispatcher.respond(b'{"jsonrpc":"2.0","id":1,"method":"nope"}')
    assert (
        reply
        == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: nope"}}\n'
    )
    assert dispatcher.respond(b"{bad") is not None


def test_none_result_becomes_empty_object() -> None:
    dispatcher = Dispatcher()
    dispatcher.register("m", lambda p: None)
    assert dispatcher.dispatch(req("m"))["result"] == {}


@pytest.mark.parametrize("value", [0, [], "", False, 0.0, {}])
def test_falsy_results_are_kept(value: Any) -> None:
    dispatcher = Dispatcher()
    dispatcher.register("m", lambda p: value)
    result = dispatcher.dispatch(req("m"))["result"]
    assert result == value and type(result) is type(value)


def test_params_not_an_object_are_treated_as_empty() -> None:
    seen: list[Any] = []
    dispatcher = Dispatcher()
    dispatcher.register("m", lambda p: seen.append(p))
    dispatcher.dispatch(req("m", [1, 2]))
    dispatcher.dispatch(req("m"))
    assert seen == [{}, {}]


def test_respond_round_trip() -> None:
    reply = Dispatcher().respond(b'{"id":"a","method":"ping","params":{}}')
    assert reply is not None
    assert decode_reply(reply) == {"id": "a", "result": {"alive": True}, "error": None}


def test_respond_invalid_json_is_internal_error_with_null_id() -> None:
    reply = Dispatcher().respond(b"{this is not json")
    assert reply is not None
    obj = decode_reply(reply)
    assert obj["id"] is None and obj["result"] is None
    assert obj["error"]["code"] == -32603


def test_respond_malformed_request_keeps_the_readable_id() -> None:
    reply = Dispatcher().respond(b'{"id":"a","params":{}}')
    assert reply is not None
    obj = decode_reply(reply)
    assert obj["id"] == "a" and obj["error"]["code"] == -32603


def test_respond_to_a_response_is_nothing() -> None:
    dispatcher = Dispatcher()
    assert (
        dispatcher.dispatch_message(
            GOLEM.parse(b'{"id":1,"result":{},"error":null}', Role.RESPONSE)
        )
        is None
    )


def test_unserialisable_result_is_internal_error() -> None:
    dispatcher = Dispatcher()
    dispatcher.register("m", lambda p: {"x": object()})
    reply = dispatcher.respond(b'{"id":"a","method":"m"}')
    assert reply is not None
    obj = decode_reply(reply)
    assert obj["id"] == "a" and obj["result"] is None
    assert obj["error"]["code"] == -32603
    assert obj["error"]["message"].startswith("Internal error: ")


def test_respond_with_an_unencodable_id_still_answers() -> None:
    # A lone surrogate parses (JSON \ud800) but cannot be written back as UTF-8.
    reply = Dispatcher().respond(b'{"id":"\\ud800","method":"ping"}')
    assert reply is not None
    obj = decode_reply(reply)
    assert obj["id"] is None and obj["error"]["code"] == -32603


def test_ui_runner_used_only_for_ui_thread_handlers() -> None:
    ran: list[tuple[str, float]] = []
    thread_ids: list[int] = []

    def runner(call: Callable[[], Any], timeout: float) -> Any:
        ran.append(("ui", timeout))
        return call()

    dispatcher = Dispatcher(ui_runner=runner, ui_timeout=12.5)
    dispatcher.register("ui.m", lambda p: thread_ids.append(threading.get_ident()) or {"ui": 1})
    dispatcher.register("bg.m", lambda p: {"bg": 1}, ui_thread=False)
    assert dispatcher.dispatch(req("bg.m"))["result"] == {"bg": 1}
    assert dispatcher.dispatch(req("ping"))["result"] == {"alive": True}
    assert ran == []
    assert dispatcher.dispatch(req("ui.m"))["result"] == {"ui": 1}
    assert ran == [("ui", 12.5)]


def test_ui_runner_timeout_maps_to_timeout() -> None:
    def runner(call: Callable[[], Any], timeout: float) -> Any:
        raise UiTimeout(f"UI thread did not run the handler within {timeout:g} s")

    dispatcher = Dispatcher(ui_runner=runner, ui_timeout=30)
    dispatcher.register("m", lambda p: {})
    assert dispatcher.dispatch(req("m"))["error"] == {
        "code": "TIMEOUT",
        "message": "UI thread did not run the handler within 30 s",
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
request_objects = st.fixed_dictionaries(
    {},
    optional={
        "id": json_values,
        "method": st.sampled_from(["ping", "shutdown", "list_methods", "boom", "ok", "none"])
        | json_values,
        "params": json_values,
    },
)


def _boom(params: dict[str, Any]) -> Any:
    raise RuntimeError(params)


@settings(max_examples=200, deadline=None)
@given(request_objects)
def test_dispatch_never_raises(obj: dict[str, Any]) -> None:
    dispatcher = Dispatcher()
    dispatcher.register("boom", _boom)
    dispatcher.register("ok", lambda p: p)
    dispatcher.register("none", lambda p: None)
    message = GOLEM.parse(json.dumps(obj).encode(), Role.REQUEST)
    if isinstance(message, Request):
        reply = dispatcher.dispatch(message)
        assert set(reply) == {"id", "result", "error"}
        assert (reply["result"] is None) != (reply["error"] is None)
    reply_bytes = dispatcher.respond(
        json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
    )
    assert reply_bytes is not None
    decoded = decode_reply(reply_bytes)
    assert set(decoded) == {"id", "result", "error"}


class _FlatErrors:
    """A policy that answers every failure with one integer code and no details, as a server
    that normalises its dispatcher's errors would."""

    def success(self, request: Request, result: Any, builtin: bool) -> dict[str, Any]:
        return GOLEM.success(request.id, result if builtin or result else {})

    def method_not_found(self, request: Request) -> dict[str, Any]:
        return GOLEM.error(request.id, -32000, f"Method not found: {request.method}")

    def handler_failed(self, request: Request, exc: Exception) -> dict[str, Any]:
        return GOLEM.error(request.id, -32000, str(exc))

    def unparseable(self, message: Any) -> Any:
        return None

    def unencodable(self, request_id: Any, exc: Exception) -> Any:
        return None


def test_the_policy_decides_every_failure_answer() -> None:
    dispatcher = Dispatcher(errors=_FlatErrors())
    dispatcher.register("m.fail", raising(NotImplementedError("later")))
    dispatcher.register("m.empty", lambda p: [])
    dispatcher.register("m.bad", lambda p: {"x": object()})
    assert dispatcher.dispatch(req("nope"))["error"] == {
        "code": -32000,
        "message": "Method not found: nope",
    }
    assert dispatcher.dispatch(req("m.fail"))["error"] == {"code": -32000, "message": "later"}
    assert dispatcher.dispatch(req("m.empty"))["result"] == {}
    assert dispatcher.respond(b"{not json") is None
    assert dispatcher.respond(b'{"id":"a","method":"m.bad"}') is None


def test_builtins_can_run_on_the_ui_thread_and_list_only_themselves() -> None:
    ran: list[str] = []

    def runner(call: Callable[[], Any], timeout: float) -> Any:
        ran.append("ui")
        return call()

    dispatcher = Dispatcher(ui_runner=runner, builtins_on_ui_thread=True, list_builtins_only=True)
    dispatcher.register("m.x", lambda p: {})
    assert dispatcher.dispatch(req("ping"))["result"] == {"alive": True}
    assert dispatcher.dispatch(req("list_methods"))["result"] == {
        "methods": ["list_methods", "ping", "shutdown"]
    }
    assert ran == ["ui", "ui"]


def test_a_dispatcher_without_builtins_knows_only_what_is_registered() -> None:
    dispatcher = Dispatcher(builtins=False)
    dispatcher.register("gh.ping", lambda p: {"alive": True})
    assert dispatcher.methods() == ["gh.ping"]
    assert dispatcher.dispatch(req("ping"))["error"]["code"] == -32601

"""The ``--fault`` grammar: what parses into which rule, and the errors a user sees."""

from __future__ import annotations

import json
import math
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golem_core.profiles import GOLEM, JSONRPC_NDJSON
from golem_proxy.events import Direction
from golem_proxy.live.faults import (
    MAX_COUNT,
    MAX_MS,
    FaultKind,
    FaultPlan,
    FaultRule,
    FaultSpecError,
    parse_fault,
)
from tests.support.cli_helpers import run_cli

C2S, S2C = Direction.C2S, Direction.S2C


def test_delay_with_every_common_key() -> None:
    rule = parse_fault("delay:ms=200,jitter=50,method=scene.*,route=main,dir=s2c,p=0.5,times=3")
    assert rule.kind is FaultKind.DELAY
    assert (rule.ms, rule.jitter, rule.p, rule.times) == (200, 50, 0.5, 3)
    assert rule.methods == ("scene.*",) and rule.route == "main"
    assert rule.directions == {S2C}
    assert rule.matches("main", S2C, "scene.list_objects")
    assert not rule.matches("gh", S2C, "scene.list_objects")
    assert not rule.matches("main", C2S, "scene.list_objects")
    assert not rule.matches("main", S2C, "viewport.capture")
    assert not rule.matches("main", S2C, None)  # an unpaired response has no method


def test_defaults_per_kind() -> None:
    assert parse_fault("drop").directions == {S2C}  # a dropped response, unless dir= says
    assert parse_fault("corrupt").nbytes == 1
    assert parse_fault("corrupt").directions == {C2S, S2C}
    assert parse_fault("slice").size == 1
    assert parse_fault("truncate").at == 0.5
    reset = parse_fault("reset:method=scene.delete_objects")
    assert (reset.when, reset.directions) == ("before", {C2S})
    assert parse_fault("reset:when=after").directions == {S2C}


def test_error_code_types_and_quoted_message() -> None:
    rule = parse_fault('error:code=TIMEOUT,message="busy, try later",method=viewport.capture')
    assert (rule.code, rule.message, rule.directions) == ("TIMEOUT", "busy, try later", {C2S})
    assert parse_fault("error:code=-32603").code == -32603
    assert parse_fault("error:code=TIMEOUT").message  # a default message


def test_error_codes_are_integers_or_names_the_profile_knows() -> None:
    # A string code of the plugin's dispatcher goes on the wire as it is, even where a JSON-RPC
    # code has the same name; a name of an integer code stands for the integer.
    assert parse_fault("error:code=INTERNAL_ERROR").code == "INTERNAL_ERROR"
    assert parse_fault("error:code=METHOD_NOT_FOUND").code == -32601
    assert parse_fault("error:code=ERR_TAB_NOT_OPEN", JSONRPC_NDJSON).code == -32001
    assert parse_fault("error:code=-32099", JSONRPC_NDJSON).code == -32099
    with pytest.raises(FaultSpecError) as caught:
        parse_fault("error:code=TIMEOUT", JSONRPC_NDJSON)
    assert "unknown error code 'TIMEOUT' for jsonrpc-ndjson" in str(caught.value)
    assert "ERR_TAB_NOT_OPEN" in str(caught.value)
    with pytest.raises(FaultSpecError) as caught:
        parse_fault("error:code=NOPE")
    assert "OBJECT_NOT_FOUND" in str(caught.value) and "'OK'" not in str(caught.value)


def test_a_long_value_is_quoted_cut_and_its_length_said() -> None:
    digits = "1" * 5000
    with pytest.raises(FaultSpecError) as caught:
        parse_fault(f"drop:times={digits}")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400
    assert "(5011 characters)" in message  # the spec
    assert "times must be a whole number from 0 to 1000000000" in message
    assert "(5000 characters)" in message  # the value


def test_method_alternatives() -> None:
    rule = parse_fault("drop:method=ping|scene.*")
    assert rule.matches("main", S2C, "ping")
    assert rule.matches("main", S2C, "scene.hide_objects")
    assert not rule.matches("main", S2C, "pingx")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("explode", "unknown fault 'explode'"),
        ("delay", "delay needs ms="),
        ("delay:ms=abc", "ms must be a number between 0 and 3600000 (1 h), got 'abc'"),
        ("delay:ms=-5", "ms must be a number between 0 and 3600000 (1 h), got '-5'"),
        ("delay:ms=1e308", "ms must be a number between 0 and 3600000 (1 h), got '1e308'"),
        ("delay:ms=1e15", "ms must be a number between 0 and 3600000 (1 h)"),
        ("delay:ms=1e999", "ms must be a number between 0 and 3600000 (1 h), got '1e999'"),
        ("delay:ms=inf", "ms must be a number between 0 and 3600000 (1 h), got 'inf'"),
        ("delay:ms=10,jitter=-1", "jitter must be a number between 0 and 3600000"),
        ("delay:ms=10,jitter=1e308", "jitter must be a number between 0 and 3600000"),
        ("slice:gap=3600001", "gap must be a number between 0 and 3600000"),
        ("truncate:at=nan", "at must be a number between 0 and 1, got 'nan'"),
        ("delay:ms=\u0661\u0660", "ms must be a number"),  # Arabic-Indic digits
        ("drop:times=²", "times must be a whole number from 0 to 1000000000, got '²'"),
        ("drop:times=1000000001", "times must be a whole number from 0 to 1000000000"),
        ("corrupt:bytes=99999999999999999999", "bytes must be a whole number from 1 to"),
        ("error:code=NOPE", "unknown error code 'NOPE' for golem (an integer, or one of: "),
        ("error:code=OK", "unknown error code 'OK'"),
        ("error:code=2147483648", "code must be an integer from -2147483648 to 2147483647"),
        ("drop:p=1.5", "p must be a number between 0 and 1"),
        ("drop:p=nan", "p must be a number between 0 and 1"),
        ("drop:bytes=3", "drop has no key 'bytes'"),
        ("drop:dir=up", "dir must be c2s, s2c or both"),
        ("error", "error needs code="),
        ("error:code=TIMEOUT,dir=s2c", "error has no dir="),
        ("reset:when=during", "when must be before or after"),
        ("corrupt:bytes=0", "bytes must be a whole number from 1 to 1000000000"),
        ("slice:size=1.5", "size must be a whole number from 1 to 1000000000"),
        ("drop:times=-1", "times must be a whole number from 0 to 1000000000"),
        ("drop:method", "expected key=value"),
        ("drop:p=1,p=0", "'p' given twice"),
        ('error:code=TIMEOUT,message="open', "double quote is not closed"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(FaultSpecError) as caught:
        parse_fault(spec)
    assert message in str(caught.value)
    assert repr(spec) in str(caught.value)  # the spec is quoted back


def test_plan_seed_is_drawn_when_missing_and_kept_when_given() -> None:
    assert FaultPlan.parse(["drop"], 7).seed == 7
    assert isinstance(FaultPlan.parse(["drop"]).seed, int)
    plan = FaultPlan.parse(["drop:route=gh"], 1)
    assert plan.applies_to("gh") and not plan.applies_to("main")


def _request(ident: str, method: str) -> tuple[bytes, bytes]:
    payload = GOLEM.encode_payload({"id": ident, "method": method, "params": {}})
    return GOLEM.frame_payload(payload), payload


def _response(ident: str) -> tuple[bytes, bytes]:
    payload = GOLEM.encode_payload({"id": ident, "result": {}, "error": None})
    return GOLEM.frame_payload(payload), payload


def test_responses_inherit_the_method_of_their_request() -> None:
    plan = FaultPlan.parse(["drop:method=scene.*"], 1)
    faults = plan.connection(1, "main", GOLEM)
    for ident, method in (("a", "ping"), ("b", "scene.list_objects")):
        raw, payload = _request(ident, method)
        assert faults.decide(C2S, raw, 4, payload).withhold is None
    # Answered out of order: pairing is by id, not by position.
    raw, payload = _response("b")
    dropped = faults.decide(S2C, raw, 4, payload)
    assert dropped.withhold is not None and dropped.method == "scene.list_objects"
    raw, payload = _response("a")
    assert faults.decide(S2C, raw, 4, payload).withhold is None


def test_a_server_request_is_of_its_own_method() -> None:
    """A JSON-RPC server asking its client answers no request: its method is its own, as the
    tap takes it (a rule scoped by it acts on it), while a client's request waits with the
    same id."""
    plan = FaultPlan.parse(["drop:method=srv.ask"], 1)
    faults = plan.connection(1, "main", JSONRPC_NDJSON)
    ping = JSONRPC_NDJSON.encode_payload({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    assert faults.decide(C2S, ping + b"\n", 0, ping).withhold is None
    ask = {"jsonrpc": "2.0", "id": 7, "method": "srv.ask", "params": {"secret": "x"}}
    payload = JSONRPC_NDJSON.encode_payload(ask)
    dropped = faults.decide(S2C, payload + b"\n", 0, payload)
    assert dropped.withhold is not None and dropped.method == "srv.ask"
    answer = JSONRPC_NDJSON.encode_payload({"jsonrpc": "2.0", "id": 7, "result": {}})
    assert faults.decide(S2C, answer + b"\n", 0, answer).method == "ping"


def test_same_seed_same_decisions_and_times_limits() -> None:
    def run(seed: int) -> list[bool]:
        faults = FaultPlan.parse(["corrupt:p=0.5,dir=c2s"], seed).connection(3, "main", GOLEM)
        out = []
        for n in range(40):
            raw, payload = _request(str(n), "ping")
            out.append(faults.decide(C2S, raw, 4, payload).data != raw)
        return out

    assert run(11) == run(11)
    assert run(11) != run(12)
    assert 5 < sum(run(11)) < 35
    plan = FaultPlan.parse(["error:code=TIMEOUT,times=2"], 1)
    faults = plan.connection(1, "main", GOLEM)
    fired = [
        faults.decide(C2S, *_request(str(n), "ping")[:1], 4, _request(str(n), "ping")[1])
        for n in range(5)
    ]
    assert [a.withhold is not None for a in fired] == [True, True, False, False, False]


def test_error_reply_carries_the_request_id() -> None:
    faults = FaultPlan.parse(["error:code=TIMEOUT,message=slow"], 1).connection(1, "main", GOLEM)
    raw, payload = _request("req-9", "viewport.capture")
    action = faults.decide(C2S, raw, 4, payload)
    assert action.reply == GOLEM.encode(GOLEM.error("req-9", "TIMEOUT", "slow"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("delay:ms=1e308", "ms must be a number between 0 and 3600000 (1 h), got '1e308'"),
        ("drop:times=" + "9" * 5000, "times must be a whole number from 0 to 1000000000"),
        ("error:code=NOPE", "unknown error code 'NOPE' for golem (an integer, or one of: "),
    ],
)
def test_the_command_line_refuses_a_bad_spec_in_one_line(spec: str, message: str) -> None:
    done = run_cli("proxy", "--route", "127.0.0.1:0=127.0.0.1:1", "--fault", spec)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("golem-proxy: --fault ")
    assert message in done.stderr
    assert "Exceeds the limit" not in done.stderr


PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_KEYS = ("ms", "jitter", "p", "times", "at", "bytes", "size", "gap", "code", "when", "dir")
_VALUES = st.one_of(
    st.text(max_size=12),
    st.floats().map(repr),
    st.integers().map(str),
    st.sampled_from(["1e308", "-0", "nan", "inf", "1_000", "²", "\u0661\u0662", "+7", "9" * 5000]),
)
_SPECS = st.one_of(
    st.text(max_size=80),
    st.tuples(
        st.sampled_from([k.value for k in FaultKind]),
        st.lists(st.tuples(st.sampled_from(_KEYS), _VALUES), max_size=4),
    ).map(lambda kv: kv[0] + ":" + ",".join(f"{k}={v}" for k, v in kv[1])),
)


def _within_ranges(rule: FaultRule) -> bool:
    numbers = (rule.p, rule.ms, rule.jitter, rule.at, rule.gap)
    return (
        all(math.isfinite(x) for x in numbers)
        and 0 <= rule.p <= 1
        and 0 <= rule.at <= 1
        and all(0 <= x <= MAX_MS for x in (rule.ms, rule.jitter, rule.gap))
        and (rule.times is None or 0 <= rule.times <= MAX_COUNT)
        and 1 <= rule.nbytes <= MAX_COUNT
        and 1 <= rule.size <= MAX_COUNT
        and (
            rule.kind is not FaultKind.ERROR
            or GOLEM.registry.lookup(rule.code) is not None
            or isinstance(rule.code, int)
        )
    )


@PROPERTIES
@given(_SPECS)
def test_any_spec_parses_within_ranges_or_is_refused_in_one_line(spec: str) -> None:
    try:
        rule = parse_fault(spec)
    except FaultSpecError as exc:
        message = str(exc)
        assert message.startswith("--fault ") and "\n" not in message and "\r" not in message
        assert len(message) < 2000
        message.encode("utf-8")  # printable: no lone surrogate
        return
    assert _within_ranges(rule), rule


def test_a_frame_too_costly_to_parse_is_of_no_method_and_never_parsed() -> None:
    """20 MB of ``[[],…]`` would hold ~750 MiB parsed, in the forwarding process: it is of
    no method, so only the rules that name none act on it, and it costs its bytes only."""
    payload = GOLEM.encode_payload({"id": "big", "method": "scene.x", "params": [[]] * 6_000_000})
    raw = GOLEM.frame_payload(payload)
    plan = FaultPlan.parse(["delay:ms=1,method=scene.*", "delay:ms=2"], 1)
    faults = plan.connection(1, "main", GOLEM)
    tracemalloc.start()
    try:
        action = faults.decide(C2S, raw, 4, payload)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
    assert [text for _, text in action.events] == [
        f"delayed 2 ms: ? (not parsed: too costly) ({len(raw)} bytes)"
    ]
    # Its answer is paired with no request: of no method either.
    raw, payload = _response("big")
    assert faults.decide(S2C, raw, 4, payload).method is None


@pytest.mark.parametrize(("limit", "fired"), [(1024 * 1024, []), (1 << 40, ["delay"])])
def test_the_session_parse_limit_decides_what_a_fault_reads(limit: int, fired: list[str]) -> None:
    """``--observe-parse-limit``: a rule scoped by method acts on a frame the tap types (a
    higher limit), not on one it keeps as its digest (a lower one)."""
    payload = GOLEM.encode_payload({"id": "a", "method": "scene.x", "params": [[]] * 100_000})
    plan = FaultPlan.parse(["delay:ms=1,method=scene.*"], 1)
    faults = plan.connection(1, "main", GOLEM, limit)
    action = faults.decide(C2S, GOLEM.frame_payload(payload), 4, payload)
    assert [kind for kind, _ in action.events] == fired


def test_an_answer_too_costly_to_parse_leaves_no_method_for_the_next() -> None:
    """Its request is forgotten with it: a later request with the same id does not lend the
    first one's method to its own answer (a rule scoped to the first would act on it)."""
    plan = FaultPlan.parse(["delay:ms=1,method=heavy"], 1)
    faults = plan.connection(1, "main", GOLEM, 1024 * 1024)
    raw, payload = _request("1", "heavy")
    assert [kind for kind, _ in faults.decide(C2S, raw, 4, payload).events] == ["delay"]
    costly = GOLEM.encode_payload({"id": "1", "result": [[]] * 200_000, "error": None})
    assert faults.decide(S2C, GOLEM.frame_payload(costly), 4, costly).method is None
    raw, payload = _request("1", "ping")
    faults.decide(C2S, raw, 4, payload)
    raw, payload = _response("1")
    answer = faults.decide(S2C, raw, 4, payload)
    assert (answer.method, answer.events) == ("ping", [])


def test_an_error_in_place_of_a_request_too_costly_to_parse_echoes_the_id_its_bytes_hold() -> None:
    plan = FaultPlan.parse(["error:code=TIMEOUT,message=busy"], 1)
    faults = plan.connection(1, "main", GOLEM, 256 * 1024)
    payload = GOLEM.encode_payload({"id": "big", "method": "scene.x", "params": [[]] * 100_000})
    action = faults.decide(C2S, GOLEM.frame_payload(payload), 4, payload)
    assert action.withhold is not None and action.reply is not None
    assert json.loads(action.reply[4:])["id"] == "big"
    # Walked whole and no id in it: the answer has none either, as a server's to a request
    # without one.
    payload = GOLEM.encode_payload({"method": "scene.x", "params": [[]] * 15_000})
    assert len(payload) < 64 * 1024 and faults.inspect(C2S, payload) == (None, None)
    action = faults.decide(C2S, GOLEM.frame_payload(payload), 4, payload)
    assert action.reply is not None and json.loads(action.reply[4:])["id"] is None


def test_an_error_is_not_put_in_place_of_a_request_whose_id_is_not_read() -> None:
    """Its id past the first 64 KiB, after the bulk: an answer the client could not match
    is not sent; the request goes on to the server, and the fault's event says why."""
    plan = FaultPlan.parse(["error:code=TIMEOUT,message=busy,times=1"], 1)
    faults = plan.connection(1, "main", GOLEM, 1024 * 1024)
    bulk = {"params": [[]] * 100_000, "method": "scene.x", "id": "late"}
    payload = GOLEM.encode_payload(bulk)
    raw = GOLEM.frame_payload(payload)
    action = faults.decide(C2S, raw, 4, payload)
    assert (action.withhold, action.reply) == (None, None)
    assert action.events == [
        (
            "error",
            f"not applied: ? (not parsed: too costly) ({len(raw)} bytes): no id in its first "
            "65,536 bytes; forwarded",
        )
    ]
    # The rule did not fire: its one time is still there for the next request.
    raw, small = _request("next", "ping")
    assert faults.decide(C2S, raw, 4, small).withhold is not None
    # Spent, the rule says nothing more of a frame it would not have fired on anyway.
    assert faults.decide(C2S, GOLEM.frame_payload(payload), 4, payload).events == []
    never = FaultPlan.parse(["error:code=TIMEOUT,message=busy,p=0"], 1)
    quiet = never.connection(1, "main", GOLEM, 1024 * 1024)
    assert quiet.decide(C2S, GOLEM.frame_payload(payload), 4, payload).events == []

"""The ``--fault`` grammar: what parses into which rule, and the errors a user sees."""

from __future__ import annotations

import pytest

from golem_core.profiles import GOLEM
from golem_proxy.events import Direction
from golem_proxy.live.faults import FaultKind, FaultPlan, FaultSpecError, parse_fault

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
        ("delay:ms=abc", "ms must be a number, got 'abc'"),
        ("delay:ms=-5", "ms must be >= 0"),
        ("drop:p=1.5", "p must be between 0 and 1"),
        ("drop:p=nan", "p must be between 0 and 1"),
        ("drop:bytes=3", "drop has no key 'bytes'"),
        ("drop:dir=up", "dir must be c2s, s2c or both"),
        ("error", "error needs code="),
        ("error:code=X,dir=s2c", "error has no dir="),
        ("reset:when=during", "when must be before or after"),
        ("corrupt:bytes=0", "bytes must be a whole number >= 1"),
        ("slice:size=1.5", "size must be a whole number >= 1"),
        ("drop:times=-1", "times must be a whole number >= 0"),
        ("drop:method", "expected key=value"),
        ("drop:p=1,p=0", "p given twice"),
        ('error:code=X,message="open', "double quote is not closed"),
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

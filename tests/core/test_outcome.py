"""The outcome of an answer (golem_core.outcome, Profile.outcome), as docs/wire-contract.md
§ 7.1 describes it."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest

from golem_core.messages import Role
from golem_core.outcome import OK, Outcome, OutcomeKind
from golem_core.profiles import GOLEM, JSONRPC_NDJSON, Profile

REQUEST = {"id": "a", "method": "operations.boolean_union", "params": {}}


def golem_outcome(result: Any = None, error: Any = None) -> Outcome:
    answer = {"id": "a", "result": result, "error": error}
    return outcome_of(GOLEM, REQUEST, answer)


def outcome_of(profile: Profile, request: Optional[dict[str, Any]], answer: Any) -> Outcome:
    parsed = None
    if request is not None:
        parsed = profile.parse(json.dumps(request).encode(), Role.REQUEST)
    return profile.outcome(parsed, profile.parse(json.dumps(answer).encode(), Role.RESPONSE))


def test_the_plugins_error_dict_as_a_result_is_an_error_in_result() -> None:
    found = golem_outcome(
        {"code": "INVALID_PARAMS", "message": "needs 2", "details": {"exception_type": "X"}}
    )
    assert found == Outcome(
        OutcomeKind.ERROR_IN_RESULT, "INVALID_PARAMS", "INVALID_PARAMS", "needs 2"
    )
    assert found.failed
    assert found.text == "INVALID_PARAMS (in result)"


def test_an_unregistered_code_in_a_result_keeps_its_own_name() -> None:
    found = golem_outcome({"code": "SOMETHING_NEW", "message": "m"})
    assert found.kind is OutcomeKind.ERROR_IN_RESULT
    assert found.text == "SOMETHING_NEW (in result)"


@pytest.mark.parametrize(
    "result",
    [
        {"code": "OK", "message": "fine"},  # a success code is no failure
        {"code": "INVALID_PARAMS", "message": "m", "guid": "x"},  # a member make_error lacks
        {"code": 7, "message": "m"},  # a code that is not a string
        {"code": "INVALID_PARAMS"},  # no message
        {"success": True, "stdout": ""},
        {"objects": []},
        [],
        "text",
        0,
    ],
)
def test_other_results_are_ok(result: Any) -> None:
    assert golem_outcome(result) == OK


def test_success_false_is_unsuccessful_with_its_message() -> None:
    found = golem_outcome({"success": False, "stdout": "", "stderr": "boom", "result": None})
    assert found == Outcome(OutcomeKind.UNSUCCESSFUL, "success: false", None, "boom")
    assert found.text == "success: false"


def test_success_false_with_a_code_names_it() -> None:
    found = golem_outcome({"success": False, "error": "no view", "code": "OPERATION_FAILED"})
    assert found.code == "OPERATION_FAILED"
    assert found.text == "OPERATION_FAILED (success: false)"


def test_an_error_envelope_is_an_error_with_its_registry_name() -> None:
    found = golem_outcome(None, {"code": -32000, "message": "Method not found: x"})
    assert found == Outcome(OutcomeKind.ERROR, "APPLICATION_ERROR", -32000, "Method not found: x")
    assert found.text == "APPLICATION_ERROR"


def test_a_malformed_answer_is_malformed() -> None:
    found = golem_outcome(None, None)
    assert found.kind is OutcomeKind.MALFORMED
    assert found.text == "malformed:neither-result-nor-error"


def test_jsonrpc_has_no_failure_shapes() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "state", "params": {}}
    for result in ({"code": "INVALID_PARAMS", "message": "m"}, {"success": False}):
        answer = {"jsonrpc": "2.0", "id": 1, "result": result}
        assert outcome_of(JSONRPC_NDJSON, request, answer) == OK
    assert JSONRPC_NDJSON.result_failures == ()


def test_jsonrpc_an_id_not_echoed_is_malformed_in_the_clients_words() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "state", "params": {}}
    found = outcome_of(JSONRPC_NDJSON, request, {"jsonrpc": "2.0", "id": 42, "result": {}})
    assert found.kind is OutcomeKind.MALFORMED
    assert found.text == "MismatchedResponseId { expected: 1, actual: 42 }"


@pytest.mark.parametrize(
    ("result", "error", "text"),
    [
        (None, {"code": "OK", "message": "boom"}, "error (code OK)"),
        (None, {"code": "ok", "message": "boom"}, "error (code ok)"),
        ({"code": "ok", "message": "boom"}, None, "error-in-result (code ok)"),
        ({"success": False, "code": "Success"}, None, "unsuccessful (code Success)"),
        (None, {"code": "Ok.", "message": "boom"}, "error (code Ok.)"),
        (None, {"code": "\u041e\u041a", "message": "boom"}, "error (code \u041e\u041a)"),
        (None, {"code": "\uff2f\uff2b", "message": "boom"}, "error (code \uff2f\uff2b)"),
        (None, {"code": "OK\u200b", "message": "boom"}, "error (code OK\u200b)"),
        (None, {"code": "success!", "message": "boom"}, "error (code success!)"),
    ],
)
def test_a_failure_whose_code_reads_as_a_success_never_shows_as_one(
    result: Any, error: Any, text: str
) -> None:
    found = golem_outcome(result, error)
    assert found.failed
    assert found.text == text

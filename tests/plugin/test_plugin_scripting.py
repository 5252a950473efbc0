"""scripting.* runs code only with --allow-scripts."""

from __future__ import annotations

from typing import Any, Callable


def test_scripts_are_refused_by_default(client: Any) -> None:
    for method, params in (
        ("scripting.execute_python", {"code": "print(1)"}),
        ("scripting.evaluate_expression", {"expression": "1 + 1"}),
    ):
        error = client.error(method, **params)
        assert error["code"] == "OPERATION_FAILED" and "--allow-scripts" in error["message"]


def test_scripts_run_when_allowed(
    start_plugin: Callable[..., Any], connect: Callable[..., Any]
) -> None:
    client = connect(start_plugin(allow_scripts=True).main_address)
    ran = client.call(
        "scripting.execute_python",
        code="import sys\nprint('hi', n)\nprint('oops', file=sys.stderr)\n"
        "result = len(doc.objects)",
        context={"n": 3},
    )
    assert ran == {"success": True, "stdout": "hi 3\n", "stderr": "oops\n", "result": 0}
    failed = client.call("scripting.execute_python", code="raise ValueError('bad')")
    assert failed["success"] is False and "ValueError: bad" in failed["stderr"]
    value = client.call(
        "scripting.evaluate_expression", expression="math.sqrt(x) * 2", variables={"x": 16}
    )
    assert (value["success"], value["value"], value["type"]) == (True, 8.0, "float")
    assert client.call("scripting.evaluate_expression", expression="1/0")["success"] is False
    assert client.error("scripting.execute_rhinoscript", code="x")["code"] == "NOT_IMPLEMENTED"

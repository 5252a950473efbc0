"""scripting.* runs code only with --allow-scripts."""

from __future__ import annotations

from typing import Any, Callable

DISABLED = "scripts are disabled: start the headless plugin with --allow-scripts"


def test_scripts_are_refused_by_default(client: Any) -> None:
    ran = client.call("scripting.execute_python", code="print(1)")
    assert ran == {"success": False, "stdout": "", "stderr": DISABLED, "result": None}
    value = client.call("scripting.evaluate_expression", expression="1 + 1")
    assert value == {"success": False, "value": None, "type": None, "error": DISABLED}


def test_scripts_run_when_allowed(
    start_plugin: Callable[..., Any], connect: Callable[..., Any]
) -> None:
    client = connect(start_plugin(allow_scripts=True).main_address)
    ran = client.call(
        "scripting.execute_python",
        code="import sys\nprint('hi', n)\nprint('oops', file=sys.stderr)\n"
        "__result__ = len(sc.doc.objects)",
        context={"n": 3},
    )
    assert ran == {"success": True, "stdout": "hi 3\n", "stderr": "oops\n", "result": 0}
    failed = client.call("scripting.execute_python", code="raise ValueError('bad')")
    assert failed == {"success": False, "stdout": "", "stderr": "bad", "result": None}
    value = client.call("scripting.evaluate_expression", expression="x * 2", variables={"x": 16})
    assert (value["success"], value["value"], value["type"]) == (True, 32, "int")
    broken = client.call("scripting.evaluate_expression", expression="1/0")
    assert (broken["success"], broken["error"]) == (False, "division by zero")

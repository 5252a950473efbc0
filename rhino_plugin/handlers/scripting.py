"""``scripting.*``: run Python sent by the client, only when the operator allowed it.

The real plugin executes arbitrary code in Rhino's Python. A headless peer started for tests
must not do that by default, so execution needs ``--allow-scripts``; without it the methods
answer OPERATION_FAILED saying how to enable them. RhinoScript and Rhino commands have no
headless equivalent and stay NOT_IMPLEMENTED.

``execute_python`` runs the code with ``doc`` (the headless `Document`) and the ``context``
mapping as globals; stdout and stderr are captured; a ``result`` variable set by the code is
returned when JSON can carry it (otherwise its ``repr``).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import traceback
from typing import Any

from golem_core.dispatcher import Handler
from golem_core.errors import InvalidParams, OperationFailed

from ..document import Document
from ..params import req_str

__all__ = ["ScriptingHandlers"]

DISABLED_MESSAGE = (
    "Script execution is disabled in the headless plugin; start it with --allow-scripts "
    "to enable {method}."
)


def _json_safe(value: Any) -> Any:
    """``value`` when JSON can carry it, else its repr."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _mapping(params: dict[str, Any], name: str) -> dict[str, Any]:
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidParams(f"Parameter '{name}' must be an object.", name)
    return dict(value)


class ScriptingHandlers:
    """Python execution over one `Document`, gated by ``allow_scripts``."""

    def __init__(self, document: Document, *, allow_scripts: bool) -> None:
        self.doc = document
        self.allow_scripts = allow_scripts

    def table(self) -> dict[str, Handler]:
        """Method name → handler."""
        return {
            "scripting.execute_python": self.execute_python,
            "scripting.evaluate_expression": self.evaluate_expression,
        }

    def _check_enabled(self, method: str) -> None:
        if not self.allow_scripts:
            raise OperationFailed(
                DISABLED_MESSAGE.format(method=method),
                {"method": method, "enable_with": "--allow-scripts"},
            )

    def execute_python(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_enabled("scripting.execute_python")
        code = req_str(params, "code")
        namespace: dict[str, Any] = {"__name__": "__golem_script__", "doc": self.doc}
        namespace.update(_mapping(params, "context"))
        stdout, stderr = io.StringIO(), io.StringIO()
        success = True
        # Handlers run one at a time on the UI thread, so swapping sys.stdout here is safe.
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                exec(compile(code, "<script>", "exec"), namespace)
            except BaseException:  # a script error (even SystemExit) is reported, not raised
                success = False
                traceback.print_exc(file=stderr)
        return {
            "success": success,
            "stdout": stdout.getvalue(),
            "stderr": stderr.getvalue(),
            "result": _json_safe(namespace.get("result")),
        }

    def evaluate_expression(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_enabled("scripting.evaluate_expression")
        expression = req_str(params, "expression")
        variables = _mapping(params, "variables")
        namespace: dict[str, Any] = {"math": math, "doc": self.doc}
        try:
            value = eval(compile(expression, "<expression>", "eval"), namespace, variables)
        except Exception as exc:
            return {
                "success": False,
                "value": None,
                "type": None,
                "error": f"{type(exc).__name__}: {exc}",
            }
        return {
            "success": True,
            "value": _json_safe(value),
            "type": type(value).__name__,
            "error": None,
        }

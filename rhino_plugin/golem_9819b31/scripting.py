"""``scripting.*`` of golem-3dmcp@9819b31 (``handlers/scripting.py``).

The real plugin executes whatever Python it is sent. The headless plugin does so only when
started with ``--allow-scripts``; otherwise a script "fails" with the real failure shape
(``success: false`` and the reason in ``stderr``/``error``). Scripts see ``sc.doc`` (the
headless document) and ``__result__``; ``rs``, ``Rhino`` and ``System`` are None, so code that
calls RhinoCommon fails as a script error. Rhino commands cannot run headless:
``execute_rhinocommand`` reports ``command_result: false``.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
from types import SimpleNamespace
from typing import Any

from ..document import Document
from .kit import Params

__all__ = ["ScriptingHandlers"]

DISABLED = "scripts are disabled: start the headless plugin with --allow-scripts"


def try_serialize(value: Any) -> Any:
    """The real ``try_serialize``: JSON scalars as they are, containers recursively, the
    rest as ``str()``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [try_serialize(item) for item in value]
    if isinstance(value, dict):
        return {str(k): try_serialize(v) for k, v in value.items()}
    return str(value)


class ScriptingHandlers:
    def __init__(self, document: Document, *, allow_scripts: bool) -> None:
        self.doc = document
        self.allow_scripts = allow_scripts

    def _namespace(self, extra: Any = None) -> dict[str, Any]:
        namespace: dict[str, Any] = {
            "rs": None,
            "sc": SimpleNamespace(doc=self.doc),
            "Rhino": None,
            "System": None,
            "__builtins__": builtins,
            "__result__": None,
        }
        if extra:
            namespace.update(extra)
        return namespace

    def _run(self, code: str, namespace: dict[str, Any]) -> tuple[bool, str, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        if not self.allow_scripts:
            return False, "", DISABLED
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                exec(code, namespace)
        except Exception as exc:
            return False, stdout.getvalue(), str(exc)
        return True, stdout.getvalue(), stderr.getvalue()

    def execute_python(self, p: Params) -> dict[str, Any]:
        code = p.get("code", "")
        if not code or not code.strip():
            raise ValueError("params['code'] is required and must not be empty")
        namespace = self._namespace(p.get("context") or {})
        ok, out, err = self._run(code, namespace)
        result = try_serialize(namespace.get("__result__")) if ok else None
        return {"success": ok, "stdout": out, "stderr": err, "result": result}

    def execute_rhinocommand(self, p: Params) -> dict[str, Any]:
        command = p.get("command", "")
        if not command or not command.strip():
            raise ValueError("params['command'] is required and must not be empty")
        p.get("echo", False)  # read and passed to rs.Command by the real handler
        return {"success": False, "command": str(command), "command_result": False}

    def evaluate_expression(self, p: Params) -> dict[str, Any]:
        expression = p.get("expression", "")
        if not expression or not expression.strip():
            raise ValueError("params['expression'] is required and must not be empty")
        namespace = self._namespace(p.get("variables") or {})
        if not self.allow_scripts:
            return {"success": False, "value": None, "type": None, "error": DISABLED}
        try:
            raw = eval(expression, namespace)
        except Exception as exc:
            return {"success": False, "value": None, "type": None, "error": str(exc)}
        return {
            "success": True,
            "value": try_serialize(raw),
            "type": type(raw).__name__,
            "error": None,
        }

    def run_rhino_script(self, p: Params) -> dict[str, Any]:
        path = p.get("file_path", "")
        if not path or not path.strip():
            raise ValueError("params['file_path'] is required for scripting.run_rhino_script")
        if not os.path.isfile(path):
            raise ValueError(f"Script file not found: {path}")
        try:
            with open(path, encoding="utf-8") as handle:
                code = handle.read()
        except Exception as exc:
            raise ValueError(f"Could not read script file {path}: {exc}") from None
        if not code.strip():
            raise ValueError(f"Script file is empty: {path}")
        namespace = self._namespace()
        ok, out, err = self._run(code, namespace)
        result = try_serialize(namespace.get("__result__")) if ok else None
        return {
            "success": ok,
            "file_path": str(path),
            "stdout": out,
            "stderr": err,
            "result": result,
        }

"""The client side of a method catalogue: the requests each MCP tool of a GOLEM-3DMCP
checkout sends, and the params it builds for them, read from the source with `ast`.

Client tools are functions decorated with ``….tool(…)`` that call something with a method-name
string and the params they build; a param's shape comes from the tool's annotations and the
literal that builds it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

from golem_core.catalogue import BUILTINS

from .catalogue_source import METHOD_NAME, FuncNode, Module, SourceTree, dict_keys, own_nodes

__all__ = ["Tool", "find_tools"]


@dataclass
class Tool:
    name: str
    method: str
    module: Module
    line: int
    params: dict[str, dict[str, Any]]

    @property
    def at(self) -> str:
        return f"{self.module.path}:{self.line}"


def find_tools(tree: SourceTree) -> Iterator[Tool]:
    """Every request a client tool sends: functions decorated with ``….tool`` or
    ``….tool(…)``, and in them each call whose first argument is a method name."""
    for module in tree.by_path.values():
        for node in module.tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if not any(_is_tool_decorator(d) for d in node.decorator_list):
                continue
            arguments = _arguments(node)
            for call in own_nodes(node):
                if not isinstance(call, ast.Call) or not call.args:
                    continue
                first = call.args[0]
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    continue
                if not (METHOD_NAME.match(first.value) or first.value in BUILTINS):
                    continue
                built = call.args[1] if len(call.args) > 1 else None
                params = _sent_params(node, built, arguments, module.path)
                yield Tool(node.name, first.value, module, call.lineno, params)


def _is_tool_decorator(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "tool"


def _arguments(node: FuncNode) -> dict[str, set[str]]:
    """The kinds each parameter of a tool function may have, from its annotation and
    default (``Optional[float] = None`` → number or null)."""
    spec = node.args
    positional = [*spec.posonlyargs, *spec.args]
    defaults: dict[str, ast.expr] = dict(
        zip([a.arg for a in positional][len(positional) - len(spec.defaults) :], spec.defaults)
    )
    for arg, default in zip(spec.kwonlyargs, spec.kw_defaults):
        if default is not None:
            defaults[arg.arg] = default
    kinds: dict[str, set[str]] = {}
    for arg in [*positional, *spec.kwonlyargs]:
        found = _annotation_kinds(arg.annotation) if arg.annotation is not None else set()
        default = defaults.get(arg.arg)
        if found and isinstance(default, ast.Constant) and default.value is None:
            found.add("null")
        kinds[arg.arg] = found
    return kinds


_ANNOTATIONS = {
    "float": {"number"},
    "int": {"number"},
    "str": {"string"},
    "bool": {"boolean"},
    "list": {"array"},
    "List": {"array"},
    "tuple": {"array"},
    "Tuple": {"array"},
    "Sequence": {"array"},
    "dict": {"object"},
    "Dict": {"object"},
    "Mapping": {"object"},
    "None": {"null"},
}


def _annotation_kinds(node: ast.expr) -> set[str]:
    """JSON kinds of an annotation; empty when any part is not known (Any, a class…)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return set()
    if isinstance(node, ast.Constant) and node.value is None:
        return {"null"}
    if isinstance(node, ast.Name):
        return set(_ANNOTATIONS.get(node.id, set()))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _annotation_kinds(node.left), _annotation_kinds(node.right)
        return left | right if left and right else set()
    if isinstance(node, ast.Subscript):
        outer = node.value.id if isinstance(node.value, ast.Name) else ""
        if outer == "Optional":
            inner = _annotation_kinds(node.slice)
            return inner | {"null"} if inner else set()
        if outer == "Union":
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            found = [_annotation_kinds(p) for p in parts]
            return set().union(*found) if all(found) else set()
        return set(_ANNOTATIONS.get(outer, set()))
    return set()


def _sent_params(
    function: FuncNode, built: Optional[ast.expr], arguments: dict[str, set[str]], path: str
) -> dict[str, dict[str, Any]]:
    params: dict[str, dict[str, Any]] = {}
    if isinstance(built, ast.Dict):
        _dict_params(built, arguments, path, params)
    elif isinstance(built, ast.Name):
        for child in sorted(own_nodes(function), key=lambda n: getattr(n, "lineno", 0)):
            if not isinstance(child, ast.Assign):
                continue
            for target in child.targets:
                if isinstance(target, ast.Name) and target.id == built.id:
                    if isinstance(child.value, ast.Dict):
                        _dict_params(child.value, arguments, path, params)
                elif (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == built.id
                    and isinstance(target.slice, ast.Constant)
                    and isinstance(target.slice.value, str)
                ):
                    entry = _param_entry(child.value, arguments, path, target.lineno)
                    params.setdefault(target.slice.value, entry)
    return params


def _dict_params(
    node: ast.Dict, arguments: dict[str, set[str]], path: str, into: dict[str, dict[str, Any]]
) -> None:
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            into[key.value] = _param_entry(value, arguments, path, key.lineno)


def _param_entry(
    value: ast.expr, arguments: dict[str, set[str]], path: str, line: int
) -> dict[str, Any]:
    entry: dict[str, Any] = {"at": f"{path}:{line}"}
    shape = _shape(value, arguments)
    if shape is not None:
        entry["shape"] = shape
    return entry


def _shape(node: ast.expr, arguments: dict[str, set[str]]) -> Optional[dict[str, Any]]:
    kinds: set[str] = set()
    keys: Optional[list[str]] = None
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None:
            kinds = {"null"}
        elif isinstance(value, bool):
            kinds = {"boolean"}
        elif isinstance(value, (int, float)):
            kinds = {"number"}
        elif isinstance(value, str):
            kinds = {"string"}
    elif isinstance(node, ast.Dict):
        kinds, keys = {"object"}, sorted(dict_keys(node))
    elif isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        kinds = {"array"}
    elif isinstance(node, ast.JoinedStr):
        kinds = {"string"}
    elif isinstance(node, ast.Name):
        kinds = set(arguments.get(node.id, set()))
    elif isinstance(node, ast.BoolOp):
        # `inputs or {}`: the kinds of every operand, null only if the last may be null.
        parts = [_shape(v, arguments) for v in node.values]
        if any(p is None for p in parts):
            return None
        kinds = set().union(*(set(p["kinds"]) for p in parts if p is not None))
        last = parts[-1]
        if last is not None and "null" not in last["kinds"]:
            kinds.discard("null")
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        kinds = set(
            {"float": {"number"}, "int": {"number"}, "str": {"string"}, "bool": {"boolean"}}.get(
                node.func.id, _ANNOTATIONS.get(node.func.id, set())
            )
        )
    if not kinds:
        return None
    shape: dict[str, Any] = {"kinds": sorted(kinds)}
    if keys is not None:
        shape["keys"] = keys
    return shape

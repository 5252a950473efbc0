"""Build a method catalogue from the sources of a GOLEM-3DMCP checkout, with `ast` only.

Plugin handlers are found by their code shape, not their paths: a function decorated with a
call that takes one method-name string (``@handler("geometry.create_box")``), or a function
passed with a name to a registration call (``register_method("ping", _handle_ping)``). Client
tools are functions decorated with ``….tool(…)`` that call something with a method-name string
and the params they build. When a checkout carries the same code twice (a vendored copy), the
first by path depth wins and the others are listed as copies.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from golem_core.catalogue import BUILTINS, FORMAT, VERSION

from .catalogue_reads import HandlerReads, analyse_handler
from .catalogue_source import Module, SourceTree, git_commit

__all__ = ["Handler", "Tool", "build_catalogue", "find_handlers", "find_tools"]

_METHOD = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_FuncNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass
class Handler:
    method: str
    module: Module
    node: _FuncNode
    reads: HandlerReads

    @property
    def at(self) -> str:
        return f"{self.module.path}:{self.node.lineno}"


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


# -- plugin side -----------------------------------------------------------------------------


def find_handlers(tree: SourceTree) -> Iterator[tuple[str, Module, _FuncNode]]:
    """(method, module, function) for every handler registration in the tree."""
    for module in tree.by_path.values():
        for node in module.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _takes_args(node):
                for decorator in node.decorator_list:
                    method = _decorator_method(decorator)
                    if method is not None:
                        yield method, module, node
        for call in ast.walk(module.tree):
            if not (isinstance(call, ast.Call) and len(call.args) == 2 and not call.keywords):
                continue
            name, target = call.args
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                continue
            if not (_METHOD.match(name.value) or _NAME.match(name.value)):
                continue
            if isinstance(target, ast.Name):
                function = module.functions.get(target.id)
                if function is not None and _takes_args(function):
                    yield name.value, module, function


def _decorator_method(decorator: ast.expr) -> Optional[str]:
    if not (isinstance(decorator, ast.Call) and len(decorator.args) == 1):
        return None
    if decorator.keywords:
        return None
    arg = decorator.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _METHOD.match(arg.value):
        return arg.value
    return None


def _takes_args(node: _FuncNode) -> bool:
    return bool(node.args.posonlyargs or node.args.args)


def result_keys(tree: SourceTree, module: Module, node: _FuncNode, depth: int = 0) -> set[str]:
    """The keys of the dicts a function visibly returns (dict literals, names built from one,
    and what the functions it returns the result of return)."""
    keys: set[str] = set()
    built: dict[str, set[str]] = {}
    for child in _own_nodes(node):
        if not isinstance(child, ast.Assign):
            continue
        for target in child.targets:
            if isinstance(target, ast.Name) and isinstance(child.value, ast.Dict):
                built.setdefault(target.id, set()).update(_dict_keys(child.value))
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                key = target.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    built.setdefault(target.value.id, set()).add(key.value)
    for child in _own_nodes(node):
        if not isinstance(child, ast.Return) or child.value is None:
            continue
        returned = child.value
        if isinstance(returned, ast.Dict):
            keys |= _dict_keys(returned)
        elif isinstance(returned, ast.Name):
            keys |= built.get(returned.id, set())
        elif isinstance(returned, ast.Call) and isinstance(returned.func, ast.Name) and depth < 4:
            callee = tree.resolve(module, returned.func.id)
            if callee is not None:
                owner = tree.by_path.get(callee.path, module)
                keys |= result_keys(tree, owner, callee.node, depth + 1)
    return keys


def _own_nodes(node: _FuncNode) -> Iterator[ast.AST]:
    """The nodes of a function's body, nested function bodies left out."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        child = stack.pop()
        yield child
        for grandchild in ast.iter_child_nodes(child):
            if not isinstance(grandchild, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.append(grandchild)


def _dict_keys(node: ast.Dict) -> set[str]:
    return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


# -- client side -----------------------------------------------------------------------------


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
            for call in _own_nodes(node):
                if not isinstance(call, ast.Call) or not call.args:
                    continue
                first = call.args[0]
                if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    continue
                if not (_METHOD.match(first.value) or first.value in BUILTINS):
                    continue
                built = call.args[1] if len(call.args) > 1 else None
                params = _sent_params(node, built, arguments, module.path)
                yield Tool(node.name, first.value, module, call.lineno, params)


def _is_tool_decorator(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "tool"


def _arguments(node: _FuncNode) -> dict[str, set[str]]:
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
    function: _FuncNode, built: Optional[ast.expr], arguments: dict[str, set[str]], path: str
) -> dict[str, dict[str, Any]]:
    params: dict[str, dict[str, Any]] = {}
    if isinstance(built, ast.Dict):
        _dict_params(built, arguments, path, params)
    elif isinstance(built, ast.Name):
        for child in sorted(_own_nodes(function), key=lambda n: getattr(n, "lineno", 0)):
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
        kinds, keys = {"object"}, sorted(_dict_keys(node))
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


# -- the catalogue ---------------------------------------------------------------------------


def _depth_first(path: str) -> tuple[int, str]:
    return path.count("/"), path


def _handler_json(primary: Handler, copies: Sequence[Handler], tree: SourceTree) -> dict[str, Any]:
    everyone = [primary, *copies]
    reads: dict[str, Any] = {}
    for handler in everyone:
        for name, acc in sorted(handler.reads.reads.items()):
            if name in reads or not acc.at:
                continue
            entry: dict[str, Any] = {"at": acc.at}
            if acc.has_default:
                entry["default"] = acc.default
            if acc.casts:
                entry["casts"] = sorted(acc.casts)
            accepts = acc.accepts()
            if accepts is not None:
                kinds, object_keys = accepts
                entry["accepts"] = {"kinds": sorted(kinds)}
                if object_keys is not None:
                    entry["accepts"]["keys"] = list(object_keys)
            if acc.via:
                entry["via"] = list(acc.via)
            reads[name] = entry
    # A requirement holds only when every copy has it; alternatives merge per group.
    groups: dict[frozenset[str], tuple[str, bool]] = {}
    for group, at, null_ok in primary.reads.required:
        if group not in groups or (groups[group][1] and not null_ok):
            groups[group] = (at, null_ok)
    for copy in copies:
        present = {group for group, _, _ in copy.reads.required}
        groups = {k: v for k, v in groups.items() if k in present}
    # A group that contains a smaller one says nothing more.
    minimal = [k for k in groups if not any(o < k for o in groups)]
    required = [
        {"any_of": sorted(k), "at": groups[k][0], **({"null_ok": True} if groups[k][1] else {})}
        for k in sorted(minimal, key=lambda k: (groups[k][0], sorted(k)))
    ]
    returned: set[str] = set()
    for handler in everyone:
        returned |= result_keys(tree, handler.module, handler.node)
    entry = {
        "params": sorted(reads),
        "module": primary.module.path,
        "line": primary.node.lineno,
        "function": primary.node.name,
        "reads": {name: reads[name] for name in sorted(reads)},
        "required": required,
        "reads_all_at": next(
            (h.reads.reads_all_at for h in everyone if h.reads.reads_all_at), None
        ),
        "result_keys": sorted(returned) if returned else None,
    }
    if copies:
        entry["copies"] = [c.at for c in copies]
    return entry


def build_catalogue(
    paths: Sequence[str],
    commit: Optional[str] = None,
    description: str = "",
    note: Optional[Callable[[str], None]] = None,
) -> dict[str, Any]:
    """The catalogue (JSON-ready) of the checkout(s) at ``paths``.

    ``commit`` names the source commit when the files carry no ``.git`` (an exported tree);
    otherwise it is read from the checkout. File digests of every module a handler or tool
    comes from are recorded either way. ``note`` is told, one line each, about every file or
    directory left out (see `SourceTree`); those files are listed under ``unparsed``."""
    tree = SourceTree(list(paths), note)
    found: dict[str, list[Handler]] = {}
    seen: set[tuple[str, str, int]] = set()
    for method, module, node in find_handlers(tree):
        if (method, module.path, node.lineno) in seen:
            continue
        seen.add((method, module.path, node.lineno))
        try:
            reads = analyse_handler(tree.ref(module, node))
        except RecursionError:  # code nested beyond what can be followed: claim nothing
            reads = HandlerReads(reads_all_at=f"{module.path}:{node.lineno}")
        found.setdefault(method, []).append(Handler(method, module, node, reads))
    plugin: dict[str, Any] = {}
    builtins: list[str] = []
    used_files: set[str] = set()
    for method in sorted(found):
        handlers = sorted(found[method], key=lambda h: _depth_first(h.module.path))
        used_files |= {h.module.path for h in handlers}
        if method in BUILTINS:
            builtins.append(method)
            continue
        plugin[method] = _handler_json(handlers[0], handlers[1:], tree)
    client: dict[str, Any] = {}
    tools = sorted(find_tools(tree), key=lambda t: (t.method, _depth_first(t.module.path)))
    for tool in tools:
        used_files.add(tool.module.path)
        entry = client.setdefault(tool.method, {"params": [], "tool_module": tool.module.path})
        listed = entry.setdefault("tools", [])
        same = next(
            (t for t in listed if t["tool"] == tool.name and set(t["params"]) == set(tool.params)),
            None,
        )
        if same is not None:
            same.setdefault("copies", []).append(tool.at)
            continue
        listed.append({"tool": tool.name, "at": tool.at, "params": tool.params})
        entry["params"] = sorted(set(entry["params"]) | set(tool.params))
    commits = {c for c in (git_commit(p) for p in paths) if c}
    built_from: dict[str, Any] = {
        "commit": commit or (sorted(commits)[0] if len(commits) == 1 else None),
        "commit_from": "given" if commit else ("checkout" if len(commits) == 1 else None),
        "files": {p: tree.by_path[p].digest for p in sorted(used_files)},
    }
    if tree.skipped:
        built_from["unparsed"] = sorted(tree.skipped)
    registered = set(plugin) | set(builtins)
    return {
        "format": FORMAT,
        "version": VERSION,
        "source": description or "GOLEM-3DMCP sources: plugin handlers and MCP server tools",
        "built_from": built_from,
        "builtins": [b for b in BUILTINS if b in builtins] + sorted(set(builtins) - set(BUILTINS)),
        "plugin_methods": plugin,
        "client_methods": client,
        "client_methods_missing_in_plugin": sorted(m for m in client if m not in registered),
    }

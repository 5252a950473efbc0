"""Build a method catalogue from the sources of a GOLEM-3DMCP checkout, with `ast` only.

Plugin handlers are found by their code shape, not their paths: a function decorated with a
call that takes one method-name string (``@handler("geometry.create_box")``), or a function
passed with a name to a registration call (``register_method("ping", _handle_ping)``). Client
tools are found by `catalogue_tools`. When a checkout carries the same code twice (a vendored
copy), the first by path depth wins and the others are listed as copies.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

from golem_core.catalogue import BUILTINS, FORMAT, VERSION

from .catalogue_reads import analyse_handler
from .catalogue_source import (
    METHOD_NAME,
    FuncNode,
    Module,
    SourceTree,
    dict_keys,
    git_commit,
    own_nodes,
)
from .catalogue_tools import find_tools
from .catalogue_values import HandlerReads

__all__ = ["Handler", "build_catalogue", "find_handlers"]

_NAME = re.compile(r"^[A-Za-z_]\w*$")


@dataclass
class Handler:
    method: str
    module: Module
    node: FuncNode
    reads: HandlerReads

    @property
    def at(self) -> str:
        return f"{self.module.path}:{self.node.lineno}"


def find_handlers(tree: SourceTree) -> Iterator[tuple[str, Module, FuncNode]]:
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
            if not (METHOD_NAME.match(name.value) or _NAME.match(name.value)):
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
    if (
        isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
        and METHOD_NAME.match(arg.value)
    ):
        return arg.value
    return None


def _takes_args(node: FuncNode) -> bool:
    return bool(node.args.posonlyargs or node.args.args)


def result_keys(tree: SourceTree, module: Module, node: FuncNode, depth: int = 0) -> set[str]:
    """The keys of the dicts a function visibly returns (dict literals, names built from one,
    and what the functions it returns the result of return)."""
    keys: set[str] = set()
    built: dict[str, set[str]] = {}
    for child in own_nodes(node):
        if not isinstance(child, ast.Assign):
            continue
        for target in child.targets:
            if isinstance(target, ast.Name) and isinstance(child.value, ast.Dict):
                built.setdefault(target.id, set()).update(dict_keys(child.value))
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                key = target.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    built.setdefault(target.value.id, set()).add(key.value)
    for child in own_nodes(node):
        if not isinstance(child, ast.Return) or child.value is None:
            continue
        returned = child.value
        if isinstance(returned, ast.Dict):
            keys |= dict_keys(returned)
        elif isinstance(returned, ast.Name):
            keys |= built.get(returned.id, set())
        elif isinstance(returned, ast.Call) and isinstance(returned.func, ast.Name) and depth < 4:
            callee = tree.resolve(module, returned.func.id)
            if callee is not None:
                owner = tree.by_path.get(callee.path, module)
                keys |= result_keys(tree, owner, callee.node, depth + 1)
    return keys


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

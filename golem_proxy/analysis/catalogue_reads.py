"""What a plugin handler does with its params dict, read from the source with `ast`.

The handler's body is walked in order with a small abstract environment: which names hold the
params dict, which hold a key string, which hold a value read from the dict. Calls into
functions of the same code base are followed with their arguments bound (``_req(params,
"width")`` reads ``width``), so reads through helpers count. Nothing is imported or run.

Requirements are found where the source makes them visible: a key read by subscript on the
path every call takes, a read whose absence raises (``if x is None: raise``), a helper that
does either, and ``if``/``elif``/``else: raise`` chains over alternative keys (one of them is
required). Code that only runs after an earlier ``if "k" in params: return`` makes its
requirements alternatives to ``k``. Value shapes come from ``isinstance`` guards that raise,
key lookups on the value (an object) and casts.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from .catalogue_values import (
    PARAMS,
    Abstract,
    Frame,
    FunctionRef,
    HandlerReads,
    Key,
    Lit,
    Params,
    Test,
    Val,
    literal_strings,
    tested,
    used_only_in,
)

__all__ = ["analyse_handler"]

_MAX_DEPTH = 8
_DICT_VIEWS = frozenset({"keys", "items", "values", "copy", "update", "__iter__"})
_STR_METHODS = frozenset({"strip", "lower", "upper", "split", "startswith", "endswith"})


@dataclass(frozen=True)
class _Ctx:
    uncond: bool
    escape: frozenset[str] = frozenset()
    """Keys whose presence lets the code return before this point."""
    type_escape: tuple[tuple[frozenset[str], frozenset[str], int], ...] = ()
    """Values whose kinds (checked by isinstance) let the code return before this point."""

    def cond(self) -> _Ctx:
        return _Ctx(False, self.escape, self.type_escape)


@dataclass
class _Result:
    reads: HandlerReads
    returns: Abstract


class _Analyser:
    def __init__(self) -> None:
        self.memo: dict[tuple[int, tuple[Any, ...]], _Result] = {}
        self.stack: list[int] = []

    def call(self, fn: FunctionRef, bound: dict[str, Abstract]) -> _Result:
        key = (id(fn.node), tuple(sorted((k, repr(v)) for k, v in bound.items())))
        cached = self.memo.get(key)
        if cached is not None:
            return cached
        if id(fn.node) in self.stack or len(self.stack) >= _MAX_DEPTH:
            return _Result(HandlerReads(), None)
        self.stack.append(id(fn.node))
        try:
            frame = Frame(fn, dict(bound), HandlerReads())
            self.walk(frame, fn.node.body, _Ctx(True))
        finally:
            self.stack.pop()
        vals = [r for r in frame.returns if isinstance(r, Val)]
        returns: Abstract = None
        if vals and len(vals) == len(frame.returns):
            returns = Val(frozenset().union(*(v.keys for v in vals)))
        result = _Result(frame.out, returns)
        self.memo[key] = result
        return result

    def at(self, frame: Frame, node: ast.AST) -> str:
        return f"{frame.fn.path}:{getattr(node, 'lineno', 0)}"

    def require(
        self, frame: Frame, keys: frozenset[str], ctx: _Ctx, node: ast.AST, null_ok: bool
    ) -> None:
        if ctx.uncond and keys:
            group = keys | ctx.escape
            frame.out.required.append((group, self.at(frame, node), null_ok or bool(ctx.escape)))

    def reads_all(self, frame: Frame, node: ast.AST) -> None:
        if not frame.out.reads_all_at:
            frame.out.reads_all_at = self.at(frame, node)

    def walk(self, frame: Frame, body: Sequence[ast.stmt], ctx: _Ctx) -> bool:
        """Walk a block; returns whether it always ends in return or raise."""
        for stmt in body:
            ended, ctx = self.stmt(frame, stmt, ctx)
            if ended:
                return True
        return False

    def stmt(self, frame: Frame, node: ast.stmt, ctx: _Ctx) -> tuple[bool, _Ctx]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            frame.local[node.name] = FunctionRef(node, frame.fn.path, frame.fn.resolve)
            return False, ctx
        if isinstance(node, ast.ClassDef):
            return False, ctx
        if isinstance(node, ast.Return):
            value = self.ev(frame, node.value, ctx) if node.value is not None else None
            if isinstance(value, Params):
                self.reads_all(frame, node)
            frame.returns.append(value)
            return True, ctx
        if isinstance(node, ast.Raise):
            if ctx.uncond:
                if ctx.escape:
                    frame.out.required.append((ctx.escape, self.at(frame, node), True))
                for keys, kinds, mark in ctx.type_escape:
                    for key in keys:
                        acc = frame.out.read(key, self.at(frame, node))
                        acc.guard |= kinds
                        acc.open_by.discard(mark)
            return True, ctx
        if isinstance(node, ast.Assign):
            value = self.ev(frame, node.value, ctx)
            for target in node.targets:
                self.bind(frame, target, value, ctx)
            return False, ctx
        if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            value = self.ev(frame, node.value, ctx) if node.value is not None else None
            if isinstance(node, ast.AnnAssign):
                self.bind(frame, node.target, value, ctx)
            return False, ctx
        if isinstance(node, ast.Expr):
            self.ev(frame, node.value, ctx)
            return False, ctx
        if isinstance(node, ast.If):
            return self.if_(frame, node, ctx)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            source = self.ev(frame, node.iter, ctx)
            if isinstance(source, Params):
                self.reads_all(frame, node)
            names = literal_strings(node.iter)
            if names and isinstance(node.target, ast.Name):
                frame.env[node.target.id] = Key(frozenset(names))
            else:
                self.bind(frame, node.target, None, ctx)
            self.walk(frame, node.body, ctx.cond())
            self.walk(frame, node.orelse, ctx.cond())
            return False, ctx
        if isinstance(node, ast.While):
            self.ev(frame, node.test, ctx)
            self.walk(frame, node.body, ctx.cond())
            self.walk(frame, node.orelse, ctx.cond())
            return False, ctx
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.ev(frame, item.context_expr, ctx)
            return self.walk(frame, node.body, ctx), ctx
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            return self.try_(frame, node, ctx), ctx
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.ev(frame, child, ctx.cond())
        return False, ctx

    def try_(self, frame: Frame, node: Any, ctx: _Ctx) -> bool:
        # A requirement inside `try` holds only when no handler swallows the failure.
        reraise = all(h.body and isinstance(h.body[-1], ast.Raise) for h in node.handlers)
        ended = self.walk(frame, node.body, ctx if reraise else ctx.cond())
        for handler in node.handlers:
            self.walk(frame, handler.body, ctx.cond())
        self.walk(frame, node.orelse, ctx.cond())
        self.walk(frame, node.finalbody, ctx)
        return ended and reraise

    def if_(self, frame: Frame, node: ast.If, ctx: _Ctx) -> tuple[bool, _Ctx]:
        self.ev(frame, node.test, ctx)
        test = Test(frame, node.test)
        body_ends = self.walk(frame, node.body, ctx.cond())
        # `if isinstance(v, T): use(v)` with no else: v is used only when it is a T, unless
        # the body normalises v (`v = [v]`) or v is used again after the `if`.
        only_here = not node.orelse and not body_ends and used_only_in(frame, node)
        for keys, kinds in test.positive_types:
            for key in keys:
                acc = frame.out.read(key, self.at(frame, node))
                if only_here:
                    acc.guard |= kinds
                else:
                    acc.open_by.add(id(node))
        raises = bool(node.body) and isinstance(node.body[-1], ast.Raise)
        if raises:
            for keys, null_ok in test.missing:
                self.require(frame, keys, ctx, node, null_ok)
            for keys, kinds in test.negative_types:
                for key in keys:
                    frame.out.read(key, self.at(frame, node)).guard |= kinds
        escape = ctx.escape | test.presence if test.presence else None
        types = ctx.type_escape + tuple(
            (keys, kinds, id(node)) for keys, kinds in test.positive_types
        )
        if node.orelse:
            if escape is not None or test.positive_types:
                inner = _Ctx(ctx.uncond, escape or ctx.escape, types)
            elif raises and test.missing:
                inner = ctx
            else:
                inner = ctx.cond()
            else_ends = self.walk(frame, node.orelse, inner)
            if body_ends and else_ends:
                return True, ctx
        if body_ends and not raises and (escape is not None or test.positive_types):
            return False, _Ctx(ctx.uncond, escape or ctx.escape, types)
        return False, ctx

    def bind(self, frame: Frame, target: ast.expr, value: Abstract, ctx: _Ctx) -> None:
        if isinstance(target, ast.Name):
            frame.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind(frame, element, None, ctx)
        else:
            self.ev(frame, target, ctx)

    def ev(self, frame: Frame, node: Optional[ast.expr], ctx: _Ctx) -> Abstract:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return Key(frozenset([node.value])) if isinstance(node.value, str) else Lit(node.value)
        if isinstance(node, ast.Name):
            return frame.env.get(node.id)
        if isinstance(node, ast.Call):
            return self.call_expr(frame, node, ctx)
        if isinstance(node, ast.Subscript):
            return self.subscript(frame, node, ctx)
        if isinstance(node, ast.BoolOp):
            values = [self.ev(frame, node.values[0], ctx)]
            values += [self.ev(frame, v, ctx.cond()) for v in node.values[1:]]
            vals = [v for v in values if isinstance(v, Val)]
            if isinstance(node.op, ast.Or) and vals:
                return Val(frozenset().union(*(v.keys for v in vals)))
            return None
        if isinstance(node, ast.IfExp):
            self.ev(frame, node.test, ctx)
            both = [self.ev(frame, node.body, ctx.cond()), self.ev(frame, node.orelse, ctx.cond())]
            vals = [v for v in both if isinstance(v, Val)]
            return Val(frozenset().union(*(v.keys for v in vals))) if vals else None
        if isinstance(node, ast.Compare):
            return self.compare(frame, node, ctx)
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None and isinstance(self.ev(frame, value, ctx), Params):
                    self.reads_all(frame, node)
                else:
                    self.ev(frame, key, ctx)
                    self.ev(frame, value, ctx)
            return None
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for generator in node.generators:
                if isinstance(self.ev(frame, generator.iter, ctx), Params):
                    self.reads_all(frame, node)
            return None
        if isinstance(node, ast.Lambda):
            return None
        if isinstance(node, ast.Starred) and isinstance(self.ev(frame, node.value, ctx), Params):
            self.reads_all(frame, node)
            return None
        if isinstance(node, ast.NamedExpr):
            bound = self.ev(frame, node.value, ctx)
            frame.env[node.target.id] = bound
            return bound
        for part in ast.iter_child_nodes(node):
            if isinstance(part, ast.expr):
                self.ev(frame, part, ctx)
        return None

    def compare(self, frame: Frame, node: ast.Compare, ctx: _Ctx) -> Abstract:
        left = self.ev(frame, node.left, ctx)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.ev(frame, right_node, ctx)
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, Params):
                if isinstance(left, Key):
                    for name in left.names:
                        frame.out.read(name, self.at(frame, node))
                else:
                    self.reads_all(frame, node)
        return None

    def subscript(self, frame: Frame, node: ast.Subscript, ctx: _Ctx) -> Abstract:
        base = self.ev(frame, node.value, ctx)
        index = self.ev(frame, node.slice, ctx)
        if isinstance(base, Params):
            if not isinstance(index, Key):
                self.reads_all(frame, node)
                return None
            for name in index.names:
                frame.out.read(name, self.at(frame, node))
            if isinstance(node.ctx, ast.Load) and not (index.names & tested(frame)):
                self.require(frame, index.names, ctx, node, True)
            return Val(index.names)
        if isinstance(base, Val):
            for key in base.keys:
                acc = frame.out.read(key, self.at(frame, node))
                if isinstance(index, Key):
                    acc.uses.add("object")
                    acc.keys |= index.names
                elif isinstance(index, Lit) and isinstance(index.value, int):
                    acc.uses.add("array")
        return None

    def call_expr(self, frame: Frame, node: ast.Call, ctx: _Ctx) -> Abstract:
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = self.ev(frame, func.value, ctx)
            args = [self.ev(frame, a, ctx) for a in node.args]
            if isinstance(owner, Params):
                return self.params_method(frame, node, func.attr, args)
            if isinstance(owner, Val):
                self.value_method(frame, node, owner, func.attr, args)
                return None
            self.opaque_args(frame, node, args, ctx)
            return None
        name = func.id if isinstance(func, ast.Name) else None
        if name == "isinstance" and len(node.args) == 2:
            self.ev(frame, node.args[0], ctx)
            return None
        args = [self.ev(frame, a, ctx) for a in node.args]
        if name in ("float", "int", "str", "bool") and len(args) == 1:
            if isinstance(args[0], Val):
                for key in args[0].keys:
                    frame.out.read(key, self.at(frame, node)).casts.add(name)
                return args[0] if name in ("float", "int") else None
            return None
        target = self.resolve(frame, name) if name else None
        if target is None:
            if name is None:
                self.ev(frame, func, ctx)
            self.opaque_args(frame, node, args, ctx)
            return None
        return self.follow(frame, node, target, args, ctx)

    def params_method(
        self, frame: Frame, node: ast.Call, attr: str, args: list[Abstract]
    ) -> Abstract:
        if attr in ("get", "pop", "setdefault") and args:
            key = args[0]
            if not isinstance(key, Key):
                self.reads_all(frame, node)
                return None
            for name in key.names:
                acc = frame.out.read(name, self.at(frame, node))
                if len(node.args) > 1 and not acc.has_default:
                    default = node.args[1]
                    if isinstance(default, ast.Constant):
                        acc.default, acc.has_default = default.value, True
                    elif isinstance(args[1], Lit):
                        acc.default, acc.has_default = args[1].value, True
                    elif isinstance(args[1], Key) and len(args[1].names) == 1:
                        acc.default, acc.has_default = next(iter(args[1].names)), True
                    elif isinstance(default, (ast.List, ast.Dict, ast.Tuple)):
                        try:
                            acc.default = ast.literal_eval(default)
                            acc.has_default = True
                        except ValueError:
                            pass
            return Val(key.names)
        if attr in _DICT_VIEWS:
            self.reads_all(frame, node)
        return None

    def value_method(
        self, frame: Frame, node: ast.Call, owner: Val, attr: str, args: list[Abstract]
    ) -> None:
        for key in owner.keys:
            acc = frame.out.read(key, self.at(frame, node))
            if attr == "get" and args and isinstance(args[0], Key):
                acc.uses.add("object")
                acc.keys |= args[0].names
            elif attr in ("keys", "items", "values"):
                acc.uses.add("object")
            elif attr in _STR_METHODS:
                acc.uses.add("string")

    def opaque_args(self, frame: Frame, node: ast.Call, args: list[Abstract], ctx: _Ctx) -> None:
        if any(isinstance(a, Params) for a in args):
            self.reads_all(frame, node)
        for keyword in node.keywords:
            if isinstance(self.ev(frame, keyword.value, ctx), Params):
                self.reads_all(frame, node)

    def resolve(self, frame: Frame, name: str) -> Optional[FunctionRef]:
        local = frame.local.get(name)
        return local if local is not None else frame.fn.resolve(name)

    def follow(
        self, frame: Frame, node: ast.Call, target: FunctionRef, args: list[Abstract], ctx: _Ctx
    ) -> Abstract:
        spec = target.node.args
        names = [a.arg for a in (*spec.posonlyargs, *spec.args)]
        bound: dict[str, Abstract] = {}
        for pname, value in zip(names, args):
            bound[pname] = value
        for keyword in node.keywords:
            value = self.ev(frame, keyword.value, ctx)
            if keyword.arg is None:
                if isinstance(value, Params):
                    self.reads_all(frame, node)
            elif keyword.arg in names:
                bound[keyword.arg] = value
        defaults = spec.defaults
        for pname, default in zip(names[len(names) - len(defaults) :], defaults):
            if pname not in bound and isinstance(default, ast.Constant):
                bound[pname] = (
                    Key(frozenset([default.value]))
                    if isinstance(default.value, str)
                    else Lit(default.value)
                )
        if not any(isinstance(v, (Params, Val)) for v in bound.values()):
            return None
        result = self.call(target, bound)
        here = self.at(frame, node)
        inner = result.reads
        for name, acc in inner.reads.items():
            mine = frame.out.read(name, here, (target.node.name, *acc.via))
            mine.merge(acc)
        for keys, _, null_ok in inner.required:
            self.require(frame, keys, ctx, node, null_ok)
        if inner.reads_all_at:
            self.reads_all(frame, node)
        return result.returns


def analyse_handler(fn: FunctionRef) -> HandlerReads:
    """What the handler ``fn`` (whose first parameter is the params dict) reads."""
    spec = fn.node.args
    first = (*spec.posonlyargs, *spec.args)
    if not first:
        return HandlerReads()
    return _Analyser().call(fn, {first[0].arg: PARAMS}).reads

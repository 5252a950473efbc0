"""The abstract values a handler's body is read with (the params dict, a key, a value read
from the dict), what is learnt about each param, and how an ``if`` test is read: which keys
its truth says are missing or present, and which isinstance checks it makes."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

__all__ = [
    "CAST_KINDS",
    "PARAMS",
    "TYPES",
    "Abstract",
    "Frame",
    "FunctionRef",
    "HandlerReads",
    "Key",
    "Lit",
    "Params",
    "ReadAcc",
    "Test",
    "Val",
    "atoms",
    "is_get",
    "is_none",
    "isinstance_of",
    "literal_strings",
    "peek",
    "tested",
    "used_only_in",
]

TYPES = {
    "dict": {"object"},
    "Dict": {"object"},
    "Mapping": {"object"},
    "list": {"array"},
    "tuple": {"array"},
    "List": {"array"},
    "Tuple": {"array"},
    "Sequence": {"array"},
    "set": {"array"},
    "str": {"string"},
    "basestring": {"string"},
    "unicode": {"string"},
    "bytes": {"string"},
    "int": {"number", "boolean"},
    "float": {"number"},
    "long": {"number"},
    "bool": {"boolean"},
    "NoneType": {"null"},
}
CAST_KINDS = {"float": {"number", "string", "boolean"}, "int": {"number", "string", "boolean"}}


@dataclass(frozen=True)
class FunctionRef:
    """A function of the scanned code base: its node and the file it is in."""

    node: Union[ast.FunctionDef, ast.AsyncFunctionDef]
    path: str
    resolve: Callable[[str], Optional[FunctionRef]]
    """Finds a function by the name it has in this function's module."""


@dataclass(frozen=True)
class Params:
    """The params dict itself."""


@dataclass(frozen=True)
class Key:
    names: frozenset[str]


@dataclass(frozen=True)
class Val:
    keys: frozenset[str]


@dataclass(frozen=True)
class Lit:
    value: Any


Abstract = Union[Params, Key, Val, Lit, None]
PARAMS = Params()


@dataclass
class ReadAcc:
    """What is known about one param across a handler and its helpers."""

    at: str
    default: Any = None
    has_default: bool = False
    casts: set[str] = field(default_factory=set)
    via: tuple[str, ...] = ()
    guard: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    keys: set[str] = field(default_factory=set)
    open_by: set[int] = field(default_factory=set)

    def accepts(self) -> Optional[tuple[frozenset[str], Optional[tuple[str, ...]]]]:
        """The kinds (and object keys) the handler accepts, or None when not known."""
        if self.open_by or not (self.guard or self.uses):
            return None
        kinds = set(self.guard) | set(self.uses)
        for cast in self.casts:
            kinds |= CAST_KINDS.get(cast, set())
        kinds.add("null")
        keys = tuple(sorted(self.keys)) if self.keys and "object" in kinds else None
        return frozenset(kinds), keys

    def merge(self, other: ReadAcc) -> None:
        """Add what ``other`` (the same param read inside a helper) learnt to this one."""
        if other.has_default and not self.has_default:
            self.default, self.has_default = other.default, True
        self.casts |= other.casts
        self.guard |= other.guard
        self.uses |= other.uses
        self.keys |= other.keys
        self.open_by |= other.open_by


@dataclass
class HandlerReads:
    """The result for one handler: reads by name, requirements, and the opaque use if any."""

    reads: dict[str, ReadAcc] = field(default_factory=dict)
    required: list[tuple[frozenset[str], str, bool]] = field(default_factory=list)
    reads_all_at: str = ""

    def read(self, name: str, at: str, via: tuple[str, ...] = ()) -> ReadAcc:
        acc = self.reads.get(name)
        if acc is None:
            acc = self.reads[name] = ReadAcc(at, via=via)
        return acc


class Frame:
    """One function being walked: its bindings, what it found, its nested functions."""

    def __init__(self, fn: FunctionRef, env: dict[str, Abstract], out: HandlerReads) -> None:
        self.fn = fn
        self.env = env
        self.out = out
        self.local: dict[str, FunctionRef] = {}
        self.returns: list[Abstract] = []
        self.tested_keys: Optional[frozenset[str]] = None


class Test:
    """What an `if` test says about params: keys whose absence makes it true (``missing``),
    keys whose presence it needs (``presence``), and isinstance checks both ways."""

    def __init__(self, frame: Frame, node: ast.expr) -> None:
        self.frame = frame
        self.missing: list[tuple[frozenset[str], bool]] = []
        self.presence: frozenset[str] = frozenset()
        self.positive_types: list[tuple[frozenset[str], frozenset[str]]] = []
        self.negative_types: list[tuple[frozenset[str], frozenset[str]]] = []
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            groups = [self.atom_missing(v) for v in node.values]
            if all(g is not None for g in groups):
                keys = frozenset().union(*(g[0] for g in groups if g is not None))
                self.missing.append((keys, all(g[1] for g in groups if g is not None)))
        elif isinstance(node, ast.BoolOp):
            self.missing += [g for g in map(self.atom_missing, node.values) if g is not None]
        else:
            atom = self.atom_missing(node)
            if atom is not None:
                self.missing.append(atom)
        for atom_node in atoms(node):
            found = self.atom_presence(atom_node)
            if found:
                self.presence |= found
            self.types(atom_node)

    def value_keys(self, node: ast.expr) -> Optional[frozenset[str]]:
        value = peek(self.frame, node)
        return value.keys if isinstance(value, Val) else None

    def atom_missing(self, node: ast.expr) -> Optional[tuple[frozenset[str], bool]]:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand = node.operand
            keys = self.value_keys(operand)
            if keys is not None:
                return keys, False
            types = isinstance_of(self.frame, operand)
            if types is not None and "null" not in types[1]:
                return types[0], False
            return None
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if isinstance(op, ast.NotIn) and isinstance(peek(self.frame, right), Params):
                key = peek(self.frame, node.left)
                return (key.names, True) if isinstance(key, Key) else None
            if is_none(right) and isinstance(op, (ast.Is, ast.Eq)):
                keys = self.value_keys(node.left)
                return (keys, False) if keys is not None else None
        return None

    def atom_presence(self, node: ast.expr) -> frozenset[str]:
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if isinstance(op, ast.In) and isinstance(peek(self.frame, right), Params):
                key = peek(self.frame, node.left)
                return key.names if isinstance(key, Key) else frozenset()
            if is_none(right) and isinstance(op, (ast.IsNot, ast.NotEq)):
                return self.value_keys(node.left) or frozenset()
            return frozenset()
        return self.value_keys(node) or frozenset()

    def types(self, node: ast.expr) -> None:
        negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        target = node.operand if isinstance(node, ast.UnaryOp) else node
        found = isinstance_of(self.frame, target)
        if found is None:
            return
        keys, kinds = found
        if not kinds:  # a type the wire cannot carry or we cannot name: say nothing
            for key in keys:
                self.frame.out.read(key, "").open_by.add(-1)
            return
        found_kinds = frozenset(kinds)
        (self.negative_types if negative else self.positive_types).append((keys, found_kinds))


def used_only_in(frame: Frame, node: ast.If) -> bool:
    """Whether the names the test checks with isinstance are neither rebound in the body nor
    read after the `if` in the function."""
    names = {
        atom.args[0].id
        for atom in atoms(node.test)
        if isinstance(atom, ast.Call)
        and isinstance(atom.func, ast.Name)
        and atom.func.id == "isinstance"
        and atom.args
        and isinstance(atom.args[0], ast.Name)
    }
    if not names:
        return False
    end = node.end_lineno or node.lineno
    for child in ast.walk(frame.fn.node):
        if isinstance(child, ast.Name) and child.id in names:
            if isinstance(child.ctx, ast.Store) and node.lineno <= child.lineno <= end:
                return False
            if isinstance(child.ctx, ast.Load) and child.lineno > end:
                return False
    return True


def atoms(node: ast.expr) -> Iterator[ast.expr]:
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from atoms(value)
    else:
        yield node


def peek(frame: Frame, node: ast.expr) -> Abstract:
    """The abstract value of a simple expression, without recording anything."""
    if isinstance(node, ast.Constant):
        return Key(frozenset([node.value])) if isinstance(node.value, str) else Lit(node.value)
    if isinstance(node, ast.Name):
        return frame.env.get(node.id)
    if is_get(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        owner, key = peek(frame, node.func.value), peek(frame, node.args[0])
        if isinstance(owner, Params) and isinstance(key, Key):
            return Val(key.names)
    if isinstance(node, ast.Subscript):
        owner, key = peek(frame, node.value), peek(frame, node.slice)
        if isinstance(owner, Params) and isinstance(key, Key):
            return Val(key.names)
    return None


def isinstance_of(frame: Frame, node: ast.expr) -> Optional[tuple[frozenset[str], set[str]]]:
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
    ):
        return None
    value = peek(frame, node.args[0])
    if not isinstance(value, Val):
        return None
    names = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
    kinds: set[str] = set()
    for name in names:
        label = name.id if isinstance(name, ast.Name) else getattr(name, "attr", "")
        if label not in TYPES:
            return value.keys, set()
        kinds |= TYPES[label]
    return value.keys, kinds


def is_get(node: ast.AST) -> bool:
    """Whether ``node`` is a ``something.get(...)`` call with at least one argument."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
    )


def is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def literal_strings(node: ast.expr) -> list[str]:
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return []
    found = [e.value for e in node.elts if isinstance(e, ast.Constant)]
    strings = [v for v in found if isinstance(v, str)]
    return strings if len(strings) == len(node.elts) else []


def tested(frame: Frame) -> frozenset[str]:
    """Keys the function tests with ``in`` or reads with ``.get``: a subscript of such a key is
    guarded, not a requirement."""
    if frame.tested_keys is not None:
        return frame.tested_keys
    found: set[str] = set()
    for node in ast.walk(frame.fn.node):
        key: Abstract = None
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            if isinstance(peek(frame, node.comparators[0]), Params):
                key = peek(frame, node.left)
        elif is_get(node):
            assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if isinstance(peek(frame, node.func.value), Params):
                key = peek(frame, node.args[0])
        if isinstance(key, Key):
            found |= key.names
    frame.tested_keys = frozenset(found)
    return frame.tested_keys

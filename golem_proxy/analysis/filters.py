"""Filter expressions over flows, in the spirit of mitmproxy's (docs/filters.md).

Grammar, lowest precedence first (``!`` binds tighter than ``&``, which binds tighter than
``|``; juxtaposition is ``&``)::

    expr     := and ( "|" and )*
    and      := not ( [ "&" ] not )*
    not      := "!" not | primary
    primary  := "(" expr ")" | "~" NAME [ ARG ] | ARG
    ARG      := WORD | QUOTED
    WORD     := characters up to whitespace or one of ( ) | &, not starting with ! ~ " '
    QUOTED   := "..." or '...'; a backslash escapes the quote character and itself, and is
                kept as is before anything else (so "\\d+" is the regex \\d+)

Filters (REGEX is a Python regular expression searched case-insensitively)::

    ~m REGEX      method
    ~e            error: error response, malformed frame, framing error or unanswered request
    ~c CODE       error code: an integer, a GOLEM string code, or a registry name
                  (ERR_TAB_NOT_OPEN, METHOD_NOT_FOUND; the ERR_ prefix may be left out)
    ~route NAME   route name (exact)
    ~slow MS      latency of at least MS milliseconds
    ~violation    any contract violation
    ~rule REGEX   a violation whose rule id matches
    ~pending      request still waiting for its response
    ~conn N       connection number
    ~q [REGEX]    alone: a request with no response (yet); with REGEX: request body matches
    ~s [REGEX]    alone: a flow with a response; with REGEX: response body matches
    ~marked       flows marked in the TUI
    ~tool REGEX   an MCP tool call whose tool matches, or a GOLEM flow it caused; in a
                  recording without an MCP layer, given a catalogue's method → tool map, a
                  GOLEM flow one of whose likely tools matches (a guess)
    ~layer NAME   flows of layer NAME: mcp, golem (the route's protocol)
    WORD          case-insensitive substring of the method or either body

API (stable; the TUI uses exactly this): `parse_filter(text)` returns a `Filter`, whose
``matches(flow, profile)`` says whether a flow passes and whose ``str()`` is a canonical
expression that parses back to an equal filter. Bad input raises `FilterError` (a ValueError)
with the position of the problem and what was expected there. ``parse_filter(text,
likely_tools=catalogue.likely_tools)`` lets ``~tool`` guess for flows that carry no
attribution (a recording without an MCP layer).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional, Union

from golem_core.profiles import PROFILES, Profile

from .flows import Flow
from .tool_calls import LAYER_MCP, attributed_tool, attribution_refs, layer_of, tool_of

__all__ = [
    "FILTER_HELP",
    "And",
    "Filter",
    "FilterError",
    "LikelyTools",
    "Not",
    "Or",
    "Predicate",
    "parse_filter",
]


class FilterError(ValueError):
    """A filter expression that does not parse. ``position`` is a 0-based character offset."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.reason = message
        self.position = position


class Filter(abc.ABC):
    """A parsed filter expression."""

    @abc.abstractmethod
    def matches(self, flow: Flow, profile: Profile) -> bool:
        """True when ``flow`` passes the filter (``profile`` names error codes)."""

    @abc.abstractmethod
    def __str__(self) -> str:
        """The canonical expression: `parse_filter` turns it back into an equal filter."""


# -- expression nodes ------------------------------------------------------------------------


@dataclass(frozen=True)
class Not(Filter):
    inner: Filter

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return not self.inner.matches(flow, profile)

    def __str__(self) -> str:
        return "!" + _group(self.inner, (And, Or))


@dataclass(frozen=True)
class And(Filter):
    parts: tuple[Filter, ...]

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return all(part.matches(flow, profile) for part in self.parts)

    def __str__(self) -> str:
        return " & ".join(_group(part, (Or,)) for part in self.parts)


@dataclass(frozen=True)
class Or(Filter):
    parts: tuple[Filter, ...]

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return any(part.matches(flow, profile) for part in self.parts)

    def __str__(self) -> str:
        return " | ".join(str(part) for part in self.parts)


def _group(node: Filter, kinds: tuple[type[Filter], ...]) -> str:
    return f"({node})" if isinstance(node, kinds) else str(node)


# -- predicates ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    """One ``~name``: what it takes and how it tests a flow with that argument."""

    name: str
    arg: Optional[str]  # how help screens name the argument; None: takes none
    help: str
    build: Callable[[str], Callable[[Flow, Profile], bool]]
    bare: Optional[Callable[[Flow, Profile], bool]] = None
    """The test without an argument, for a filter whose argument is optional (``~q``, ``~s``):
    the argument is taken when a word follows, so ``~q & WORD`` is how a bare ``~q`` meets a
    bare word."""


@dataclass(frozen=True)
class Predicate(Filter):
    """``~name [arg]``, or a bare word (``name`` is "")."""

    name: str
    arg: Optional[str] = None
    # Built once at parse time (compiled regex, parsed number); not part of equality.
    _test: Callable[[Flow, Profile], bool] = field(
        compare=False, repr=False, default=lambda flow, profile: False
    )

    def matches(self, flow: Flow, profile: Profile) -> bool:
        return self._test(flow, profile)

    def __str__(self) -> str:
        if not self.name:
            return _quote(self.arg or "")
        if self.arg is None:
            return f"~{self.name}"
        return f"~{self.name} {_quote(self.arg)}"


def _request_text(flow: Flow) -> str:
    return flow.request.payload.decode("utf-8", "replace") if flow.request is not None else ""


def _response_text(flow: Flow) -> str:
    return flow.response.payload.decode("utf-8", "replace") if flow.response is not None else ""


def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _method(arg: str) -> Callable[[Flow, Profile], bool]:
    regex = _regex(arg)
    return lambda flow, profile: flow.method is not None and bool(regex.search(flow.method))


def _known_code_words() -> tuple[set[str], list[str]]:
    """The words ``~c`` accepts (upper case: each profile's string codes and registry names,
    the latter also without their ``ERR_`` prefix), and the names to list in an error."""
    words: set[str] = set()
    shown: set[str] = set()
    for profile in PROFILES.values():
        for table in profile.registry.tables:
            for code, info in table.items():
                for word in (code, info.name):
                    if isinstance(word, str):
                        shown.add(word)
                        words.add(word.upper())
                        if word.upper().startswith("ERR_"):
                            words.add(word.upper()[4:])
    return words, sorted(shown)


class UnknownCodeError(ValueError):
    """``~c WORD`` with a word no profile knows: it would silently match nothing."""


def _code(arg: str) -> Callable[[Flow, Profile], bool]:
    wanted = arg.upper()
    number: Optional[int]
    try:
        number = int(arg)
    except ValueError:
        number = None
        known, shown = _known_code_words()
        if wanted not in known:
            raise UnknownCodeError(", ".join(shown)) from None

    def test(flow: Flow, profile: Profile) -> bool:
        code = flow.error_code
        if code is None:
            return False
        if isinstance(code, int):
            if number is not None and code == number:
                return True
        elif code.upper() == wanted:
            return True
        name = profile.registry.name_of(code).upper()
        return name in (wanted, f"ERR_{wanted}")

    return test


def _slow(arg: str) -> Callable[[Flow, Profile], bool]:
    threshold = float(arg)
    # Latencies come from microsecond clocks; a hair of slack keeps 0.3 - 0.1 at 200 ms.
    return lambda flow, profile: (
        flow.latency is not None and flow.latency * 1000 >= threshold - 1e-6
    )


def _rule(arg: str) -> Callable[[Flow, Profile], bool]:
    regex = _regex(arg)
    return lambda flow, profile: any(regex.search(v.rule) for v in flow.violations)


def _conn(arg: str) -> Callable[[Flow, Profile], bool]:
    number = int(arg)
    return lambda flow, profile: flow.conn == number


def _body(text_of: Callable[[Flow], str]) -> Callable[[str], Callable[[Flow, Profile], bool]]:
    def build(arg: str) -> Callable[[Flow, Profile], bool]:
        regex = _regex(arg)
        return lambda flow, profile: bool(regex.search(text_of(flow)))

    return build


def _text(arg: str) -> Callable[[Flow, Profile], bool]:
    needle = arg.lower()

    def test(flow: Flow, profile: Profile) -> bool:
        haystacks = (flow.method or "", _request_text(flow), _response_text(flow))
        return any(needle in text.lower() for text in haystacks)

    return test


def _route(arg: str) -> Callable[[Flow, Profile], bool]:
    return lambda flow, profile: flow.route == arg


def _unattributed(flow: Flow, profile: Profile) -> bool:
    """A GOLEM request whose frames carry no attribution at all, the only flow a guess may
    name: one a two-layer recording placed outside any call, or among several, keeps that."""
    return (
        flow.method is not None
        and layer_of(profile) != LAYER_MCP
        and attribution_refs(flow) is None
    )


LikelyTools = Callable[[str], tuple[str, ...]]
"""A method → tool map (`MethodCatalogue.likely_tools`): the tools that send a method."""


def _tool(arg: str, likely_tools: Optional[LikelyTools] = None) -> Callable[[Flow, Profile], bool]:
    regex = _regex(arg)

    def test(flow: Flow, profile: Profile) -> bool:
        tool = tool_of(flow)
        if tool is None:
            # A GOLEM flow: the one tool call it belongs to (an ambiguous one matches none).
            tool = attributed_tool(flow)
        if tool is None and likely_tools is not None and _unattributed(flow, profile):
            assert flow.method is not None
            return any(regex.search(name) for name in likely_tools(flow.method))
        return tool is not None and bool(regex.search(tool))

    return test


def _layer(arg: str) -> Callable[[Flow, Profile], bool]:
    wanted = arg.lower()
    return lambda flow, profile: layer_of(profile) == wanted


def _const(test: Callable[[Flow], bool]) -> Callable[[str], Callable[[Flow, Profile], bool]]:
    return lambda arg: lambda flow, profile: test(flow)


def _is_error(flow: Flow) -> bool:
    return flow.is_error


def _has_violation(flow: Flow) -> bool:
    return flow.has_violation


def _pending(flow: Flow) -> bool:
    return flow.pending


def _marked(flow: Flow) -> bool:
    return flow.marked


def _request_side(flow: Flow, profile: Profile) -> bool:
    # mitmproxy's ~q: a request without a response. What an intercepted request looks like
    # before it is forwarded, so `--intercept '~q'` holds requests and never responses.
    return flow.request is not None and flow.response is None


def _response_side(flow: Flow, profile: Profile) -> bool:
    return flow.response is not None


_SPECS: dict[str, _Spec] = {
    spec.name: spec
    for spec in (
        _Spec("m", "REGEX", "method matches REGEX", _method),
        _Spec("e", None, "error, malformed, framing error or unanswered", _const(_is_error)),
        _Spec("c", "CODE", "error code: number, string code or registry name", _code),
        _Spec("route", "NAME", "route NAME", _route),
        _Spec("slow", "MS", "latency of at least MS milliseconds", _slow),
        _Spec("violation", None, "any contract violation", _const(_has_violation)),
        _Spec("rule", "REGEX", "a violation's rule id matches REGEX", _rule),
        _Spec("pending", None, "request waiting for its response", _const(_pending)),
        _Spec("conn", "N", "connection number N", _conn),
        _Spec(
            "q",
            "[REGEX]",
            "a request with no response (yet); with REGEX: request body matches",
            _body(_request_text),
            _request_side,
        ),
        _Spec(
            "s",
            "[REGEX]",
            "a flow with a response; with REGEX: response body matches",
            _body(_response_text),
            _response_side,
        ),
        _Spec("marked", None, "flows marked in the TUI", _const(_marked)),
        _Spec(
            "tool",
            "REGEX",
            "an MCP tool call of a tool matching REGEX, or a GOLEM flow it caused",
            _tool,
        ),
        _Spec("layer", "NAME", "flows of layer NAME: mcp or golem (`golem-proxy mcp`)", _layer),
    )
}

FILTER_HELP: tuple[tuple[str, str], ...] = (
    *((f"~{spec.name} {spec.arg or ''}".rstrip(), spec.help) for spec in _SPECS.values()),
    ("WORD", "substring of the method or either body"),
    ("!  &  |  ( )", "not, and (also by juxtaposition), or, grouping"),
)
"""``(syntax, meaning)`` rows for help screens."""


def _predicate(
    name: str, arg: Optional[str], position: int, likely_tools: Optional[LikelyTools] = None
) -> Predicate:
    if not name:
        assert arg is not None
        return Predicate("", arg, _text(arg))
    spec = _SPECS[name]
    if arg is None and spec.bare is not None:
        return Predicate(name, None, spec.bare)
    try:
        test = _tool(arg or "", likely_tools) if name == "tool" else spec.build(arg or "")
    except re.error as exc:
        raise FilterError(f"invalid regular expression for ~{name}: {exc.msg}", position) from None
    except UnknownCodeError as exc:
        raise FilterError(
            f"unknown error code {arg!r} for ~{name}; use an integer or one of {exc}", position
        ) from None
    except ValueError:
        wanted = "a number of milliseconds" if spec.arg == "MS" else "an integer"
        raise FilterError(f"~{name} needs {wanted}, not {arg!r}", position) from None
    return Predicate(name, arg, test)


# -- tokens ----------------------------------------------------------------------------------

_OPERATORS = "()|&!"
_WORD_END = set("()|&") | {" ", "\t", "\n", "\r"}
_BARE = re.compile(r"[^\s()|&!~\"'][^\s()|&\"']*")


@dataclass(frozen=True)
class _Token:
    kind: str  # one of ( ) | & ! ~ word end
    text: str
    position: int


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in _OPERATORS:
            tokens.append(_Token(char, char, i))
            i += 1
        elif char == "~":
            end = i + 1
            while end < len(text) and text[end].isalpha():
                end += 1
            tokens.append(_Token("~", text[i + 1 : end], i))
            i = end
        elif char in "\"'":
            value, end = _quoted(text, i)
            tokens.append(_Token("word", value, i))
            i = end
        else:
            end = i
            while end < len(text) and text[end] not in _WORD_END:
                end += 1
            tokens.append(_Token("word", text[i:end], i))
            i = end
    tokens.append(_Token("end", "", len(text)))
    return tokens


def _quoted(text: str, start: int) -> tuple[str, int]:
    quote = text[start]
    out: list[str] = []
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in (quote, "\\"):
            out.append(text[i + 1])
            i += 2
        elif char == quote:
            return "".join(out), i + 1
        else:
            out.append(char)
            i += 1
    raise FilterError(f"unterminated string (expected a closing {quote})", start)


def _quote(value: str) -> str:
    if _BARE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- parser ----------------------------------------------------------------------------------

_STARTS_OPERAND = ("(", "!", "~", "word")


MAX_NESTING = 64
"""Deepest ``(`` and ``!`` nesting a filter may have: far more than anyone writes, far less
than what makes the recursive parser (or matching) overflow the stack."""


class _Parser:
    def __init__(self, text: str, likely_tools: Optional[LikelyTools] = None) -> None:
        self.likely_tools = likely_tools
        self.tokens = _tokens(text)
        self.index = 0
        self.depth = 0

    def deeper(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise FilterError(f"nested deeper than {MAX_NESTING} levels", token.position)

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def parse(self) -> Filter:
        if self.token.kind == "end":
            raise FilterError("expected a filter expression", self.token.position)
        node = self.parse_or()
        if self.token.kind != "end":
            raise FilterError(f"unexpected {self.describe(self.token)}", self.token.position)
        return node

    def parse_or(self) -> Filter:
        parts = [self.parse_and()]
        while self.token.kind == "|":
            self.advance()
            parts.append(self.parse_and())
        return parts[0] if len(parts) == 1 else Or(_flatten(parts, Or))

    def parse_and(self) -> Filter:
        parts = [self.parse_not()]
        while self.token.kind == "&" or self.token.kind in _STARTS_OPERAND:
            if self.token.kind == "&":
                self.advance()
            parts.append(self.parse_not())
        return parts[0] if len(parts) == 1 else And(_flatten(parts, And))

    def parse_not(self) -> Filter:
        if self.token.kind == "!":
            self.deeper(self.advance())
            node = Not(self.parse_not())
            self.depth -= 1
            return node
        return self.parse_primary()

    def parse_primary(self) -> Filter:
        token = self.advance()
        if token.kind == "(":
            self.deeper(token)
            node = self.parse_or()
            self.depth -= 1
            if self.token.kind != ")":
                raise FilterError(
                    f"expected ')' to close the '(' at position {token.position}, "
                    f"found {self.describe(self.token)}",
                    self.token.position,
                )
            self.advance()
            return node
        if token.kind == "~":
            return self.parse_filter(token)
        if token.kind == "word":
            return _predicate("", token.text, token.position)
        raise FilterError(
            f"expected a filter, '!' or '(', found {self.describe(token)}", token.position
        )

    def parse_filter(self, token: _Token) -> Filter:
        spec = _SPECS.get(token.text)
        if spec is None:
            known = ", ".join(f"~{name}" for name in _SPECS)
            raise FilterError(f"unknown filter ~{token.text} (known: {known})", token.position)
        if spec.arg is None or (spec.bare is not None and self.token.kind != "word"):
            return _predicate(spec.name, None, token.position)
        if self.token.kind != "word":
            raise FilterError(
                f"expected an argument after ~{spec.name}, found {self.describe(self.token)}",
                self.token.position,
            )
        arg = self.advance()
        return _predicate(spec.name, arg.text, arg.position, self.likely_tools)

    @staticmethod
    def describe(token: _Token) -> str:
        if token.kind == "end":
            return "the end of the expression"
        if token.kind == "~":
            return f"'~{token.text}'"
        return repr(token.text)


def _flatten(parts: list[Filter], kind: type[Union[And, Or]]) -> tuple[Filter, ...]:
    """``a & (b & c)`` is ``a & b & c``: one node per chain, so `str` output parses back equal."""
    flat: list[Filter] = []
    for part in parts:
        flat.extend(part.parts if isinstance(part, kind) else (part,))
    return tuple(flat)


def parse_filter(text: str, likely_tools: Optional[LikelyTools] = None) -> Filter:
    """Parse a filter expression; with ``likely_tools``, ``~tool`` also matches a flow that
    carries no attribution by the tools that send its method (a guess). Raises FilterError (a
    ValueError) saying where and what was expected."""
    return _Parser(text, likely_tools).parse()

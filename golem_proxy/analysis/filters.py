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
    ~fault        flows the proxy acted on: a --fault it injected (but one not applied),
                  a step of an --intercept (the status says which)
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

from dataclasses import dataclass
from typing import Optional, Union

from .filter_predicates import FILTER_HELP, SPECS, LikelyTools, build_predicate
from .filter_tree import And, Filter, FilterError, Not, Or, Predicate

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

_OPERATORS = "()|&!"
_WORD_END = set("()|&") | {" ", "\t", "\n", "\r"}


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
            return build_predicate("", token.text, token.position)
        raise FilterError(
            f"expected a filter, '!' or '(', found {self.describe(token)}", token.position
        )

    def parse_filter(self, token: _Token) -> Filter:
        spec = SPECS.get(token.text)
        if spec is None:
            known = ", ".join(f"~{name}" for name in SPECS)
            raise FilterError(f"unknown filter ~{token.text} (known: {known})", token.position)
        if spec.arg is None or (spec.bare is not None and self.token.kind != "word"):
            return build_predicate(spec.name, None, token.position)
        if self.token.kind != "word":
            raise FilterError(
                f"expected an argument after ~{spec.name}, found {self.describe(self.token)}",
                self.token.position,
            )
        arg = self.advance()
        return build_predicate(spec.name, arg.text, arg.position, self.likely_tools)

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

"""The ``~name`` filters: what each takes, what it tests on a flow, and its line of help."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from golem_core.profiles import PROFILES, Profile

from ..events import FrameSeen
from ..released_payload import ReleasedPayload
from .filter_tree import FilterError, Predicate
from .flows import Flow
from .proxy_notes import acted
from .tool_calls import LAYER_MCP, attributed_tool, attribution_refs, layer_of, tool_of

__all__ = ["FILTER_HELP", "SPECS", "LikelyTools", "Spec", "build_predicate", "frame_text"]


@dataclass(frozen=True)
class Spec:
    """One ``~name``: what it takes and how it tests a flow with that argument."""

    name: str
    arg: Optional[str]  # how help screens name the argument; None: takes none
    help: str
    build: Callable[[str], Callable[[Flow, Profile], bool]]
    bare: Optional[Callable[[Flow, Profile], bool]] = None
    """The test without an argument, for a filter whose argument is optional (``~q``, ``~s``):
    the argument is taken when a word follows, so ``~q & WORD`` is how a bare ``~q`` meets a
    bare word."""


def frame_text(frame: FrameSeen, profile: Profile) -> str:
    """The text a body filter (``~q REGEX``, ``~s REGEX``, a bare word) searches and the
    TUI's find: the payload decoded. A payload the TUI does not keep
    (`golem_proxy.tui.payloads`: released, or left in the recording) is not searched as the
    empty text it holds: the message the row kept is, written as ``profile`` (the frame's
    route's) writes a payload, so ``"width": 640`` is found in it as in a payload kept; its
    blobs elided (a malformed frame whose JSON did not parse has none)."""
    payload = frame.payload
    if isinstance(payload, ReleasedPayload):
        obj = getattr(frame.message, "obj", None)
        if obj is None:
            return ""
        try:
            return profile.encode_payload(obj).decode("utf-8", "replace")
        except (TypeError, ValueError):  # a lone surrogate: not UTF-8
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return payload.decode("utf-8", "replace")


def _request_text(flow: Flow, profile: Profile) -> str:
    return frame_text(flow.request, profile) if flow.request is not None else ""


def _response_text(flow: Flow, profile: Profile) -> str:
    return frame_text(flow.response, profile) if flow.response is not None else ""


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


def _body(
    text_of: Callable[[Flow, Profile], str],
) -> Callable[[str], Callable[[Flow, Profile], bool]]:
    def build(arg: str) -> Callable[[Flow, Profile], bool]:
        regex = _regex(arg)
        return lambda flow, profile: bool(regex.search(text_of(flow, profile)))

    return build


def _text(arg: str) -> Callable[[Flow, Profile], bool]:
    needle = arg.lower()

    def test(flow: Flow, profile: Profile) -> bool:
        haystacks = (
            flow.method or "",
            _request_text(flow, profile),
            _response_text(flow, profile),
        )
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


def _by_proxy(flow: Flow) -> bool:
    # The proxy's own steps placed on the row (`Flow.faults`), but for a fault not applied.
    return any(acted(step) for step in flow.faults)


def _request_side(flow: Flow, profile: Profile) -> bool:
    # mitmproxy's ~q: a request without a response. What an intercepted request looks like
    # before it is forwarded, so `--intercept '~q'` holds requests and never responses.
    return flow.request is not None and flow.response is None


def _response_side(flow: Flow, profile: Profile) -> bool:
    return flow.response is not None


SPECS: dict[str, Spec] = {
    spec.name: spec
    for spec in (
        Spec("m", "REGEX", "method matches REGEX", _method),
        Spec("e", None, "error, malformed, framing error or unanswered", _const(_is_error)),
        Spec("c", "CODE", "error code: number, string code or registry name", _code),
        Spec("route", "NAME", "route NAME", _route),
        Spec("slow", "MS", "latency of at least MS milliseconds", _slow),
        Spec("violation", None, "any contract violation", _const(_has_violation)),
        Spec("rule", "REGEX", "a violation's rule id matches REGEX", _rule),
        Spec("pending", None, "request waiting for its response", _const(_pending)),
        Spec("conn", "N", "connection number N", _conn),
        Spec(
            "q",
            "[REGEX]",
            "a request with no response (yet); with REGEX: request body matches",
            _body(_request_text),
            _request_side,
        ),
        Spec(
            "s",
            "[REGEX]",
            "a flow with a response; with REGEX: response body matches",
            _body(_response_text),
            _response_side,
        ),
        Spec("marked", None, "flows marked in the TUI", _const(_marked)),
        Spec(
            "fault",
            None,
            "flows the proxy acted on: a --fault it injected, an --intercept step",
            _const(_by_proxy),
        ),
        Spec(
            "tool",
            "REGEX",
            "an MCP tool call of a tool matching REGEX, or a GOLEM flow it caused",
            _tool,
        ),
        Spec("layer", "NAME", "flows of layer NAME: mcp or golem (`golem-proxy mcp`)", _layer),
    )
}

FILTER_HELP: tuple[tuple[str, str], ...] = (
    *((f"~{spec.name} {spec.arg or ''}".rstrip(), spec.help) for spec in SPECS.values()),
    ("WORD", "substring of the method or either body"),
    ("!  &  |  ( )", "not, and (also by juxtaposition), or, grouping"),
)
"""``(syntax, meaning)`` rows for help screens."""


def build_predicate(
    name: str, arg: Optional[str], position: int, likely_tools: Optional[LikelyTools] = None
) -> Predicate:
    if not name:
        assert arg is not None
        return Predicate("", arg, _text(arg))
    spec = SPECS[name]
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

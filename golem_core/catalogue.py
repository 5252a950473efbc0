"""Method catalogues: what a plugin registers, what its handlers read, and what a client sends.

A catalogue is built from the sources of both sides (``golem-proxy catalogue build``) or comes
from a live plugin's ``list_methods`` answer, which names methods and nothing else. Per plugin
method it knows the params the handler reads (with the source line of the read, defaults,
casts and the value shapes it accepts where visible) and which of them it requires; per client
method, the params each client tool builds and their value shapes. `drift_request` compares one
request with it; `MethodCatalogue.check_request` turns that into contract violations.

The JSON format is versioned (``"version": 2``); a version-1 file (``plugin_methods`` with
``params`` lists only) still loads, with the params it names and nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from .catalogue_model import (
    KINDS,
    Drift,
    HandlerInfo,
    ParamRead,
    Requirement,
    SentParam,
    ToolInfo,
    ValueShape,
    handler_from_json,
    kind_of,
    listed,
    mapping,
    strings,
    tool_from_json,
)
from .contract import Severity, Violation, rule, violation
from .messages import Request
from .profiles.members import path_of
from .regular_files import read_regular

__all__ = [
    "BUILTINS",
    "FORMAT",
    "KINDS",
    "MAX_BYTES",
    "VERSION",
    "Drift",
    "HandlerInfo",
    "MethodCatalogue",
    "ParamRead",
    "Requirement",
    "SentParam",
    "ToolInfo",
    "ValueShape",
    "drift_request",
    "kind_of",
]

FORMAT = "golem-method-catalogue"
VERSION = 2
BUILTINS = ("ping", "shutdown", "list_methods")
# The most a catalogue file may hold. The shipped GOLEM-3DMCP one is 230 kB for 135 plugin
# methods and 89 tools (under 2 kB a method): 16 MiB is some 70 times that, room for about
# ten thousand methods, while bounding what a wrong file (a log, a disk image) costs to parse.
MAX_BYTES = 16 * 1024 * 1024

R_UNKNOWN_METHOD = rule(
    "catalogue.unknown-method",
    Severity.ERROR,
    "The plugin registers the method (per the method catalogue).",
    "method catalogue",
)
R_UNREAD_PARAM = rule(
    "catalogue.unread-param",
    Severity.WARNING,
    "The plugin's handler reads the parameter (per the method catalogue).",
    "method catalogue",
)
R_MISSING_REQUIRED = rule(
    "catalogue.missing-required",
    Severity.ERROR,
    "The request carries every parameter the plugin's handler requires (per the method catalogue).",
    "method catalogue",
)
R_RENAMED_PARAM = rule(
    "catalogue.renamed-param",
    Severity.WARNING,
    "A parameter is sent under the name the plugin's handler reads (per the method catalogue).",
    "method catalogue",
)
R_SHAPE_MISMATCH = rule(
    "catalogue.shape-mismatch",
    Severity.WARNING,
    "A parameter's value has a shape the plugin's handler accepts (per the method catalogue).",
    "method catalogue",
)


@dataclass(frozen=True)
class MethodCatalogue:
    """Registered method names, with what each handler reads when known."""

    methods: Mapping[str, Optional[frozenset[str]]]
    source: str = ""
    handlers: Mapping[str, HandlerInfo] = field(default_factory=dict)
    tools: Mapping[str, tuple[ToolInfo, ...]] = field(default_factory=dict)
    knows_methods: bool = True
    """False when the source could not tell which domain methods exist (a plugin whose
    ``list_methods`` names only its builtins): then nothing is reported as unregistered."""
    built_from: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = "") -> MethodCatalogue:
        """Build from the catalogue format (version 1 or 2).

        Raises ValueError when ``plugin_methods`` is absent or the version is unknown;
        members of the wrong type read as empty."""
        if not isinstance(data, Mapping):
            raise ValueError("a method catalogue is a JSON object")
        version = data.get("version", 1)
        if version not in (1, VERSION):
            raise ValueError(f"catalogue version {version!r} is not supported (1 or {VERSION})")
        plugin = data.get("plugin_methods")
        if not isinstance(plugin, Mapping):
            raise ValueError("a method catalogue needs a `plugin_methods` object")
        methods: dict[str, Optional[frozenset[str]]] = {}
        handlers: dict[str, HandlerInfo] = {}
        for name, entry in plugin.items():
            handler = handler_from_json(str(name), entry)
            handlers[handler.method] = handler
            methods[handler.method] = (
                frozenset(handler.reads) if handler.reads is not None else None
            )
        for name in strings(data.get("builtins")):
            methods.setdefault(str(name), None)
        tools: dict[str, tuple[ToolInfo, ...]] = {}
        for name, entry in mapping(data.get("client_methods")).items():
            if isinstance(entry, Mapping):
                tools[str(name)] = tuple(
                    tool_from_json(str(name), tool) for tool in listed(entry.get("tools"))
                )
        described = data.get("source", "")
        built = data.get("built_from")
        return cls(
            methods,
            source or str(described),
            handlers,
            tools,
            True,
            built if isinstance(built, Mapping) else {},
        )

    @classmethod
    def load(cls, path: str) -> MethodCatalogue:
        """Read a catalogue file: a regular file of at most `MAX_BYTES`, never blocking on a
        FIFO or reading a device without end.

        Raises OSError with the reason (`regular_files.NotARegularFile` for a FIFO, a device
        or a directory), ValueError for what is not a catalogue
        (`regular_files.FileTooLarge` for a file over `MAX_BYTES`)."""
        text = read_regular(path, MAX_BYTES).decode("utf-8")
        try:
            data = json.loads(text)
        except RecursionError:  # nesting deeper than the parser goes
            raise ValueError("nested too deeply") from None
        return cls.from_json(data, path)

    @classmethod
    def from_method_list(
        cls, names: Iterable[str], source: str = "list_methods"
    ) -> MethodCatalogue:
        """A catalogue of names only, as a live plugin's ``list_methods`` reports them.

        When the list holds no domain method (the real plugin lists only its builtins), it
        cannot tell what the plugin handles: `knows_methods` is False."""
        listed = {str(name): None for name in names}
        domain = set(listed) - set(BUILTINS)
        return cls(listed, source, knows_methods=bool(domain))

    @property
    def knows_params(self) -> bool:
        """Whether any handler's reads are known (a names-only catalogue knows none)."""
        return any(h.reads is not None for h in self.handlers.values())

    def sent_by(self, method: str) -> str:
        """``file:line`` of the first client tool sending ``method`` ("" when unknown)."""
        tools = self.tools.get(method, ())
        return tools[0].at if tools else ""

    def likely_tools(self, method: str) -> tuple[str, ...]:
        """The client tools that send ``method``, each named once in catalogue order: the
        likely cause of a GOLEM request in a recording without an MCP layer (a guess, not an
        attribution). Empty when no tool sends it (a builtin, an unknown method)."""
        return tuple(dict.fromkeys(tool.tool for tool in self.tools.get(method, ())))

    def drift(self, request: Request, builtins: Collection[str] = ()) -> list[Drift]:
        """The drift between one request and this catalogue (see `drift_request`)."""
        return drift_request(self, request, builtins)

    def check_request(self, request: Request, builtins: Collection[str] = ()) -> list[Violation]:
        """Violations of this catalogue by one request (``builtins``: as `drift_request`)."""
        return [_as_violation(d) for d in drift_request(self, request, builtins)]

    def registered_like(self, method: str) -> Optional[str]:
        """The registered method an unknown ``method`` most likely means: the only one with
        the same name in another namespace (``surfaces.offset_surface`` →
        ``operations.offset_surface``), else, in its namespace, the longest registered name
        that ``method``'s name starts with, whole words only and underscores aside
        (``manipulation.move_objects`` → ``manipulation.move``, ``surfaces.sweep_1_rail`` →
        ``surfaces.sweep1``). None when there is none: a guess by mere likeness
        (``scene.set_object_name`` → ``scene.set_current_layer``) would mislead more than it
        helps."""
        namespace, _, name = method.rpartition(".")
        elsewhere = [
            registered
            for registered in self.methods
            if registered != method and registered.rpartition(".")[2] == name
        ]
        if len(elsewhere) == 1:  # the same name in another namespace
            return elsewhere[0]
        best: Optional[str] = None
        for registered in self.methods:
            space, _, short = registered.rpartition(".")
            if space != namespace or registered == method or not short:
                continue
            if _starts_with_words(name, short) and (best is None or len(registered) > len(best)):
                best = registered
        return best


def _starts_with_words(name: str, prefix: str) -> bool:
    """Whether ``name`` begins with ``prefix`` read without underscores, ending where a word
    of ``name`` ends: ``move_objects`` / ``move`` and ``sweep_1_rail`` / ``sweep1`` do,
    ``movement`` / ``move`` does not."""
    wanted = prefix.replace("_", "")
    position = 0
    for char in wanted:
        while position < len(name) and name[position] == "_":
            position += 1
        if position >= len(name) or name[position] != char:
            return False
        position += 1
    return position == len(name) or name[position] == "_"


def drift_request(
    catalogue: MethodCatalogue, request: Request, builtins: Collection[str] = ()
) -> list[Drift]:
    """Every disagreement between ``request`` and ``catalogue``, in a stable order: the method
    unknown (with the registered method it most likely means, when there is one); else per
    param sent and not read either renamed (the handler reads a similar name the request
    lacks) or unread; required params never sent; shapes the handler does not accept. A null
    value is never a shape mismatch (handlers treat null as absent). ``builtins`` are the
    methods the server of the request's channel answers itself (GOLEM's ``gh.ping`` on its
    Grasshopper channel): never drift."""
    method = request.method
    if method in builtins:
        return []
    if method not in catalogue.methods:
        if not catalogue.knows_methods:
            return []
        like = catalogue.registered_like(method)
        detail = f"the plugin registers `{like}`" if like else ""
        return [
            Drift(
                "unknown-method",
                method,
                other=like or "",
                at=catalogue.sent_by(method),
                side="client",
                detail=detail,
            )
        ]
    handler = catalogue.handlers.get(method)
    if handler is None or handler.reads is None:
        return []
    sent: dict[str, Any] = request.params if isinstance(request.params, dict) else {}
    reads = handler.reads
    tool_params = _tool_params(catalogue, method)
    found: list[Drift] = []
    unread = [p for p in sent if p not in reads]
    if not handler.reads_all_at:
        renames = _pair_renames(unread, [r for r in reads if r not in sent])
        for param in unread:
            at = tool_params.get(param, "")
            if param in renames:
                other = renames[param]
                found.append(
                    Drift(
                        "renamed-param",
                        method,
                        param,
                        other,
                        at or reads[other].at,
                        "client" if at else "plugin",
                        f"the handler reads `{other}` ({reads[other].at or 'plugin'})",
                    )
                )
            else:
                found.append(Drift("unread-param", method, param, at=at, side="client"))
    for requirement in handler.required:
        if requirement.null_ok:
            satisfied = any(p in sent for p in requirement.any_of)
        else:
            satisfied = any(sent.get(p) is not None for p in requirement.any_of)
        if not satisfied:
            null = [p for p in requirement.any_of if p in sent]
            detail = "sent as null" if null else "never sent"
            found.append(
                Drift(
                    "missing-required",
                    method,
                    "|".join(requirement.any_of),
                    at=requirement.at,
                    side="plugin",
                    detail=detail,
                )
            )
    for param, value in sent.items():
        read = reads.get(param)
        if read is None or read.accepts is None or value is None:
            continue
        if not _accepts(read.accepts, value):
            found.append(
                Drift(
                    "shape-mismatch",
                    method,
                    param,
                    _describe(read.accepts),
                    read.at,
                    "plugin",
                    f"sent {_describe_value(value)}",
                )
            )
    return found


def _tool_params(catalogue: MethodCatalogue, method: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for tool in catalogue.tools.get(method, ()):
        for name, param in tool.params.items():
            found.setdefault(name, param.at)
    return found


def _accepts(shape: ValueShape, value: Any) -> bool:
    kind = kind_of(value)
    if kind not in shape.kinds:
        return False
    if kind == "object" and shape.keys:
        # Only a wholly different vocabulary counts: a handler may read a subset of keys.
        return bool(set(value) & set(shape.keys))
    return True


def _describe(shape: ValueShape) -> str:
    kinds = sorted(shape.kinds)
    if shape.keys and "object" in shape.kinds:
        kinds = [k if k != "object" else "{" + ",".join(shape.keys) + "}" for k in kinds]
    return " or ".join(kinds)


def _describe_value(value: Any) -> str:
    kind = kind_of(value)
    if kind == "object":
        return "{" + ",".join(str(k) for k in value) + "}"
    if kind == "array":
        return f"an array of {len(value)}"
    return kind


# Words that qualify a name rather than say what it holds: sharing one is no evidence.
_QUALIFIERS = frozenset({"only", "is", "use", "as", "to", "of", "by", "all", "do", "mode", "flag"})


def _similarity(sent: str, read: str) -> float:
    """How alike two param names are: the longest common run of characters over the longer
    name, counted only when one name holds the other whole or they share a ``_`` word that
    says what the value is (not a qualifier such as ``only``)."""
    shared = (set(sent.split("_")) & set(read.split("_"))) - _QUALIFIERS
    if not (sent in read or read in sent or shared):
        return 0.0
    longest = 0
    for i in range(len(sent)):
        for j in range(i + longest + 1, len(sent) + 1):
            if sent[i:j] in read:
                longest = j - i
            else:
                break
    return longest / max(len(sent), len(read))


def _pair_renames(unread: list[str], unsent: list[str]) -> dict[str, str]:
    """Pairs (sent name → read name), best match first, each name used once."""
    scored = sorted(
        ((_similarity(s, r), s, r) for s in unread for r in unsent),
        key=lambda item: (-item[0], item[1], item[2]),
    )
    pairs: dict[str, str] = {}
    taken: set[str] = set()
    for score, sent, read in scored:
        if score < 0.3 or sent in pairs or read in taken:
            continue
        pairs[sent] = read
        taken.add(read)
    return pairs


def _as_violation(drift: Drift) -> Violation:
    where = f" ({drift.at})" if drift.at else ""
    if drift.kind == "unknown-method":
        like = f"; it registers `{drift.other}`" if drift.other else ""
        return violation(
            R_UNKNOWN_METHOD,
            f"the plugin does not register `{drift.method}`{like}{where}",
            "$.method",
        )
    if drift.kind == "unread-param":
        return violation(
            R_UNREAD_PARAM,
            f"the `{drift.method}` handler does not read `{drift.param}`{where}",
            path_of("params", drift.param),
        )
    if drift.kind == "renamed-param":
        return violation(
            R_RENAMED_PARAM,
            f"`{drift.param}` is sent but the `{drift.method}` handler reads `{drift.other}`"
            f"{where}",
            path_of("params", drift.param),
        )
    if drift.kind == "missing-required":
        names = " or ".join(f"`{p}`" for p in drift.param.split("|"))
        return violation(
            R_MISSING_REQUIRED,
            f"the `{drift.method}` handler requires {names}: {drift.detail}{where}",
            "$.params",
        )
    return violation(
        R_SHAPE_MISMATCH,
        f"the `{drift.method}` handler accepts `{drift.param}` as {drift.other}, "
        f"{drift.detail}{where}",
        path_of("params", drift.param),
    )

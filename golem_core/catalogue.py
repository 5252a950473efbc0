"""Method catalogues: which methods a plugin registers and which params its handlers read.

The format is the one of the GOLEM method catalogue (``plugin_methods`` → ``{name: {"params":
[...]}}``, plus ``builtins``). A catalogue can also come from a live plugin's ``list_methods``
answer, which names methods but not params. Checks against a catalogue catch the drift between
what a client sends and what the plugin handles.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from .contract import Severity, Violation, rule, violation
from .messages import Request
from .profiles.base import path_of

__all__ = ["MethodCatalogue"]

R_UNKNOWN_METHOD = rule(
    "catalogue.unknown-method",
    Severity.ERROR,
    "The plugin registers the method (per the method catalogue).",
    "method catalogue",
)
R_UNREAD_PARAM = rule(
    "catalogue.unread-param",
    Severity.WARNING,
    "The plugin's handler reads the parameter (per the method catalogue; approximate).",
    "method catalogue",
)


@dataclass(frozen=True)
class MethodCatalogue:
    """Registered method names, with the params each handler reads when known (None: unknown)."""

    methods: Mapping[str, Optional[frozenset[str]]]
    source: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = "") -> MethodCatalogue:
        """Build from the catalogue format. Raises ValueError when ``plugin_methods`` is absent."""
        plugin = data.get("plugin_methods")
        if not isinstance(plugin, Mapping):
            raise ValueError("a method catalogue needs a `plugin_methods` object")
        methods: dict[str, Optional[frozenset[str]]] = {}
        for name, entry in plugin.items():
            params = entry.get("params") if isinstance(entry, Mapping) else None
            methods[str(name)] = frozenset(params) if isinstance(params, list) else None
        for name in data.get("builtins", ()):
            methods.setdefault(str(name), None)
        return cls(methods, source or str(data.get("source", "")))

    @classmethod
    def load(cls, path: str) -> MethodCatalogue:
        """Read a catalogue file. Raises OSError or ValueError with the reason."""
        with open(path, encoding="utf-8") as handle:
            return cls.from_json(json.load(handle), path)

    @classmethod
    def from_method_list(
        cls, names: Iterable[str], source: str = "list_methods"
    ) -> MethodCatalogue:
        """A catalogue of names only, as a live plugin's ``list_methods`` reports them."""
        return cls({str(name): None for name in names}, source)

    def check_request(self, request: Request) -> list[Violation]:
        """Violations of this catalogue by one request."""
        params_read = self.methods.get(request.method, _MISSING)
        if params_read is _MISSING:
            return [
                violation(
                    R_UNKNOWN_METHOD,
                    f"the plugin does not register `{request.method}`",
                    "$.method",
                )
            ]
        if params_read is None or not isinstance(request.params, dict):
            return []
        assert isinstance(params_read, frozenset)
        return [
            violation(
                R_UNREAD_PARAM,
                f"the `{request.method}` handler does not read `{name}`",
                path_of("params", name),
            )
            for name in request.params
            if name not in params_read
        ]


_MISSING: Any = object()

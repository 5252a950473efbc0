"""Method catalogues shipped with golem-proxy, found by name (``golem-3dmcp@9819b31``) so
``--catalogue`` works outside the repository.

A shipped catalogue is the JSON file ``NAME@COMMIT.json`` in this package, built with
``golem-proxy catalogue build`` from that commit of the named project's sources.
"""

from __future__ import annotations

import json
import os
from importlib import resources

from golem_core.catalogue import MethodCatalogue

__all__ = ["CatalogueNotFound", "load_catalogue", "shipped"]


class CatalogueNotFound(ValueError):
    """Neither a file nor a shipped catalogue; the message lists the shipped names."""


def shipped() -> list[str]:
    """The names of the shipped catalogues (``project@commit``), sorted."""
    return sorted(
        entry.name[: -len(".json")]
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(".json")
    )


def _match(spec: str) -> str:
    names = shipped()
    project, _, commit = spec.partition("@")
    found = []
    for name in names:
        their_project, _, their_commit = name.partition("@")
        same_commit = not commit or (
            len(commit) >= 7
            and (commit.startswith(their_commit) or their_commit.startswith(commit))
        )
        if their_project == project and same_commit:
            found.append(name)
    if len(found) != 1:
        known = ", ".join(names) or "none"
        raise CatalogueNotFound(f"no such file or shipped catalogue (shipped: {known})")
    return found[0]


def load_catalogue(spec: str) -> MethodCatalogue:
    """The catalogue at path ``spec``, or the shipped one it names (``golem-3dmcp@9819b31``,
    a longer commit, or just ``golem-3dmcp`` when one is shipped).

    Raises OSError for a file that cannot be read, ValueError (CatalogueNotFound when the
    name matches nothing) for anything that is not a catalogue."""
    if os.path.exists(spec) or os.sep in spec or spec.endswith(".json"):
        return MethodCatalogue.load(spec)
    name = _match(spec)
    text = resources.files(__name__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    return MethodCatalogue.from_json(json.loads(text), name)

"""Figures: each robustness test fills the ``figures`` dict it is given; the dict is written
as JSON under $GOLEM_FIGURES_DIR (default: <tmp>/golem-proxy-figures) and shown at the end of
the run. ``bench/soak.py`` runs the same scenarios with bigger numbers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bench.robustness.figures import write_figures

_COLLECTED: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    found: dict[str, Any] = {}
    yield found
    if found:
        name = request.node.name.replace("[", "-").replace("]", "")
        path = write_figures(name, found)
        _COLLECTED.append((f"{name} → {path}", found))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _COLLECTED:
        return
    terminalreporter.section("robustness figures")
    for name, found in _COLLECTED:
        terminalreporter.write_line(f"{name}: {json.dumps(found, sort_keys=True)}")

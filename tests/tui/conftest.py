from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from golem_proxy.net.addresses import Address
from rhino_plugin import HeadlessPlugin, PluginOptions
from tests.support.sessions import demo_session, write_recording


@pytest.fixture(autouse=True)
def no_editor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing keys use the in-app editor unless a test sets ``$EDITOR`` itself (the
    developer's own editor must never open under a test)."""
    monkeypatch.delenv("EDITOR", raising=False)


@pytest.fixture
def demo_path(tmp_path: Path) -> str:
    """The demo session as a recording file."""
    path = str(tmp_path / "demo.jsonl")
    write_recording(path, demo_session())
    return path


@pytest.fixture
def plugin() -> Iterator[Address]:
    """The headless plugin on a free loopback port, stopped after the test: its address."""
    running = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=5))
    (host, port), _ = running.start()
    yield Address(host, port)
    running.stop()

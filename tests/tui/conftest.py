from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plugin_fixture import in_process_plugin_fixture
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


plugin = in_process_plugin_fixture(seed=5)

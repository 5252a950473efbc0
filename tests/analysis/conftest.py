"""The fake plugin-and-server checkout the catalogue builder tests read."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_catalogue_build import PLUGIN, SERVER, write_files


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout holding the fake plugin (PLUGIN) and MCP server (SERVER) sources."""
    root = tmp_path / "checkout"
    write_files(root, PLUGIN)
    write_files(root, SERVER)
    return root

"""Fixtures for the Scrybe profile tests: a short private directory for socket files."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from .server import short_socket_dir


@pytest.fixture
def sock_dir() -> Iterator[str]:
    path = short_socket_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)

"""Fixtures for the Scrybe profile tests: a short private directory for socket files."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from golem_proxy.testing.scrybe_server import short_socket_dir

from .cli import app_process


@pytest.fixture
def sock_dir() -> Iterator[str]:
    path = short_socket_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def app_socket(sock_dir: str) -> Iterator[str]:
    """The stand-in app in its own process, on ``<sock_dir>/app.sock``."""
    with app_process(os.path.join(sock_dir, "app.sock")) as path:
        yield path

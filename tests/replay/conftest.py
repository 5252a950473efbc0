"""Shared fixtures for the replay tests."""

from __future__ import annotations

import threading
import time

import pytest


@pytest.fixture
def single_threaded() -> None:
    """Wait until this process runs one thread: a trace is read by two processes only then
    (forking beside other threads is unsafe), and an earlier test may have left trio's idle
    worker thread behind for its few seconds of grace."""
    deadline = time.monotonic() + 30
    while threading.active_count() != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [thread.name for thread in threading.enumerate()]
    assert threading.active_count() == 1, f"threads still running: {alive}"

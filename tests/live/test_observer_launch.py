"""Starting an observing process (observer_launch.py) leaves nothing open when it fails: out of
descriptors (as an accept loop at its limit leaves the process), or cancelled as it starts.
Either way the forwarding process goes on; a failure is an `ObserverStartError`, which stops
observation, never forwarding."""

from __future__ import annotations

import errno
import os
import socket

import pytest
import trio

from golem_proxy.live import observer_launch
from golem_proxy.live.observer_launch import ObserverStartError, spawn

pytestmark = pytest.mark.trio


def _open_descriptors() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


async def test_out_of_descriptors_is_a_start_error_that_leaves_nothing_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def exhausted() -> tuple[socket.socket, socket.socket]:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(observer_launch.socket, "socketpair", exhausted)
    before = _open_descriptors()
    with pytest.raises(ObserverStartError, match="Too many open files"):
        await spawn(None, None)
    assert _open_descriptors() == before  # the pipe opened first is closed again


async def test_a_start_cancelled_leaves_nothing_open_and_nothing_running() -> None:
    before = _open_descriptors()
    with trio.CancelScope() as scope:
        scope.cancel()  # cancelled before the process is started
        await spawn(None, None)
    assert scope.cancelled_caught
    assert _open_descriptors() == before


async def test_a_spawned_process_is_discarded_whole() -> None:
    before = _open_descriptors()
    spawned = await spawn(None, None)
    assert spawned.process.poll() is None  # it waits for its setup
    await spawned.discard()
    assert spawned.process.returncode is not None
    assert _open_descriptors() == before

"""A function run in a forked child: its result or its exception comes back, a dead child is
reported, and forking is refused where it is not safe."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from golem_proxy.recording.forked import ForkedCall, ForkedCallError

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
        reason="forking is used on Linux with two CPUs or more",
    ),
    pytest.mark.usefixtures("single_threaded"),
]


def start(function: object) -> ForkedCall[object]:
    call = ForkedCall.start(function)  # type: ignore[arg-type]
    assert call is not None, "forking refused in a single-threaded test process"
    return call


def test_the_result_comes_back_from_the_child() -> None:
    parent = os.getpid()
    call = start(lambda: (os.getpid(), list(range(100_000))))
    pid, numbers = call.result()  # type: ignore[misc]
    assert pid != parent and numbers == list(range(100_000))


def test_the_childs_exception_is_raised_here() -> None:
    def fail() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        start(fail).result()


def test_a_child_that_dies_is_reported() -> None:
    with pytest.raises(ForkedCallError, match="status 7"):
        start(lambda: os._exit(7)).result()


def test_cancel_stops_a_busy_child() -> None:
    call = start(lambda: time.sleep(60))
    started = time.monotonic()
    call.cancel()
    call.cancel()  # idempotent
    assert time.monotonic() - started < 10  # not a speed: killed, not left to sleep its minute
    with pytest.raises(ChildProcessError):  # stopped and reaped, not left to sleep its minute
        os.waitpid(call._pid, os.WNOHANG)


def test_no_fork_while_another_thread_runs() -> None:
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert ForkedCall.start(lambda: 1) is None
    finally:
        release.set()
        thread.join()


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_fork_that_fails_leaves_the_work_here_and_no_descriptor_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_memory() -> int:
        raise OSError(12, "Cannot allocate memory")

    before = open_fds()
    monkeypatch.setattr(os, "fork", no_memory)
    assert ForkedCall.start(lambda: 1) is None
    assert open_fds() == before


def test_the_answer_arrives_when_sigchld_is_ignored() -> None:
    """Ignored SIGCHLD (inherited from a launcher) makes the kernel reap the child itself."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert start(lambda: "done").result() == "done"
        with pytest.raises(ForkedCallError):
            start(lambda: os._exit(7)).result()  # no answer: reported all the same
    finally:
        signal.signal(signal.SIGCHLD, previous)


def test_an_interrupt_while_waiting_stops_the_child_at_once() -> None:
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    call = start(lambda: time.sleep(60))
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            call.result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 10  # stopped at once, not after its minute
    with pytest.raises(ChildProcessError):  # reaped: no zombie left behind
        os.waitpid(call._pid, os.WNOHANG)

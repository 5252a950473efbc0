"""The MCP server of ``golem-proxy mcp`` dies with the wrapper, however the wrapper dies, and
so do the processes it started (golem_proxy/live/tied_child.py); not before: not when the trio
worker thread that might have started it exits, and not what it left running after an orderly
end."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trio

from golem_proxy.live.tied_child import _dies_with, start_tied
from tests.support.cli_helpers import ROOT, cli_env, reap

from .observer_child_helpers import process_gone, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

SERVER = str(Path(__file__).with_name("stubborn_server.py"))
# Nothing listens there: the server never calls GOLEM.
NOWHERE = ["--upstream", "127.0.0.1:9", "--gh-upstream", "127.0.0.1:9"]
OBSERVERS = pytest.mark.parametrize("observer", ["child-process", "in-process"])

SHORT_IDLE = (
    "import runpy, sys\n"
    "import trio._core._thread_cache as cache\n"
    "cache.IDLE_TIMEOUT = 0.1\n"
    "runpy.run_module('golem_proxy', run_name='__main__', alter_sys=True)\n"
)
"""``python -m golem_proxy`` with trio's worker threads exiting after 0.1 idle seconds rather
than 10 (`trio._core._thread_cache.IDLE_TIMEOUT`, read at each wait)."""


LAUNCHER = "import subprocess, sys\nsys.exit(subprocess.call(sys.argv[1:]))\n"
"""A launcher that runs the server as a child of its own rather than exec it, as ``uv run``
does."""

LEAVES_ONE_BEHIND = (
    "import subprocess, sys\n"
    "subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
    "for line in sys.stdin.buffer:\n"
    "    sys.stdout.buffer.write(line)\n"
    "    sys.stdout.buffer.flush()\n"
)
"""A server that starts a helper and exits at its stdin's end, leaving the helper running."""


def start_wrapper(
    launch: list[str], observer: str, pid_path: Path, *, via: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    """The wrapper serving the stubborn server, started by ``via`` (a ``python -c`` program)
    when given."""
    return subprocess.Popen(
        [*launch, "mcp", *NOWHERE, "--observer", observer, "--exit-timeout", "0.5", "--",
         *via, sys.executable, SERVER, str(pid_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=cli_env(),
    )  # fmt: skip


def server_pid(pid_path: Path) -> int:
    wait_for(pid_path.exists, what="the server's pid")
    return int(pid_path.read_text())


def echoed(wrapper: subprocess.Popen[bytes], line: bytes) -> bytes:
    """``line`` through the wrapper to the server, and what came back (a failure, not a hang,
    when nothing comes within 30 s)."""
    assert wrapper.stdin is not None and wrapper.stdout is not None
    wrapper.stdin.write(line)
    wrapper.stdin.flush()
    stdout = wrapper.stdout
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(30)
    assert got, "nothing came back through the wrapper within 30 s"
    return got[0]


def trio_workers(pid: int) -> set[int]:
    """The threads of ``pid`` that trio's thread cache runs (named "Trio thread N" when idle)."""
    tasks = Path(f"/proc/{pid}/task")
    with contextlib.suppress(FileNotFoundError):
        return {
            int(task.name)
            for task in tasks.iterdir()
            if (task / "comm").read_text().startswith("Trio thread")
        }
    return set()


def stop(wrapper: subprocess.Popen[bytes], server: int) -> None:
    """Nothing outlives the test (``server`` is 0 when it never said its pid)."""
    reap(wrapper)
    for stream in (wrapper.stdin, wrapper.stdout):
        if stream is not None:
            stream.close()
    if server > 0:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server, signal.SIGKILL)


@OBSERVERS
def test_the_server_dies_with_a_wrapper_killed_by_sigkill(tmp_path: Path, observer: str) -> None:
    pid_path = tmp_path / "server.pid"
    wrapper = start_wrapper([sys.executable, "-m", "golem_proxy"], observer, pid_path)
    server = 0
    try:
        server = server_pid(pid_path)
        assert echoed(wrapper, b"ping\n") == b"ping\n"
        wrapper.kill()
        assert wrapper.wait(30) == -signal.SIGKILL
        wait_for(lambda: process_gone(server), timeout=10, what="the server's end")
    finally:
        stop(wrapper, server)


@OBSERVERS
def test_what_the_server_started_dies_with_a_wrapper_killed_by_sigkill(
    tmp_path: Path, observer: str
) -> None:
    """A launcher killed with the wrapper leaves the real server it started (which ignores
    its stdin's end) without a parent: the guard kills the server's process group."""
    pid_path = tmp_path / "server.pid"
    via = (sys.executable, "-c", LAUNCHER)
    wrapper = start_wrapper([sys.executable, "-m", "golem_proxy"], observer, pid_path, via=via)
    server = 0
    try:
        server = server_pid(pid_path)
        assert echoed(wrapper, b"ping\n") == b"ping\n"
        wrapper.kill()
        assert wrapper.wait(30) == -signal.SIGKILL
        wait_for(lambda: process_gone(server), timeout=10, what="the real server's end")
    finally:
        stop(wrapper, server)


def guards_of(group: int) -> list[int]:
    """The guards (tied_child.py) waiting to kill process group ``group``."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"golem-proxy-guard" in argv and str(group).encode() in argv:
                found.append(int(entry.name))
    return found


def test_what_the_server_left_after_an_orderly_end_runs_on(tmp_path: Path) -> None:
    """As without the wrapper: the client closed stdin, the server exited, and the helper it
    left running is not killed when the wrapper exits in order."""
    pid_path = tmp_path / "helper.pid"
    via = (sys.executable, "-c", LEAVES_ONE_BEHIND)
    launch = [sys.executable, "-m", "golem_proxy"]
    wrapper = start_wrapper(launch, "child-process", pid_path, via=via)
    helper = 0
    try:
        helper = server_pid(pid_path)
        group = os.getpgid(helper)
        assert group not in (os.getpgid(0), os.getpgid(wrapper.pid))  # a group of its own
        assert guards_of(group)
        assert echoed(wrapper, b"ping\n") == b"ping\n"
        assert wrapper.stdin is not None
        wrapper.stdin.close()
        assert wrapper.wait(30) == 0
        wait_for(lambda: not guards_of(group), timeout=10, what="the guard's end")
        assert not process_gone(helper)
    finally:
        stop(wrapper, helper)


@OBSERVERS
def test_the_server_outlives_the_trio_worker_threads(tmp_path: Path, observer: str) -> None:
    """The kernel's parent-death signal follows the thread that forked the server: had a trio
    worker thread forked it, the server would be killed once that thread exits, idle."""
    pid_path = tmp_path / "server.pid"
    wrapper = start_wrapper([sys.executable, "-c", SHORT_IDLE], observer, pid_path)
    server = 0
    try:
        server = server_pid(pid_path)
        workers = trio_workers(wrapper.pid)
        wait_for(lambda: not workers & trio_workers(wrapper.pid), what="idle workers to exit")
        # A signal sent as a thread exits arrives before the thread is gone from /proc.
        assert echoed(wrapper, b"still here\n") == b"still here\n"
        assert wrapper.stdin is not None
        wrapper.stdin.close()  # ignored by the server: terminated after --exit-timeout
        assert wrapper.wait(30) == 128 + signal.SIGTERM
    finally:
        stop(wrapper, server)


@pytest.mark.trio
async def test_without_a_pidfd_the_exit_is_awaited_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(os, "pidfd_open")  # as on a kernel before 5.3
    child = start_tied([sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ))
    try:
        with trio.move_on_after(0.05):
            await child.wait()
        assert child.returncode is None
        child.send_signal(signal.SIGKILL)
        assert await child.wait() == -signal.SIGKILL
    finally:
        child.send_signal(signal.SIGKILL)
        child.release()
        for stream in (child.stdin, child.stdout, child.stderr):
            await stream.aclose()


def test_a_child_whose_parent_died_before_it_asked_is_killed_before_exec() -> None:
    """Between fork and the request for a signal at the parent's death, the parent may die:
    then nobody would signal the child, which kills itself rather than run the server."""
    not_its_parent = -1  # what getppid never returns (1 would be our parent running as init)
    child = subprocess.Popen(
        [sys.executable, "-c", "print('ran')"],
        stdout=subprocess.PIPE,
        preexec_fn=_dies_with(not_its_parent),
    )
    stdout, _ = child.communicate(timeout=30)
    assert (child.returncode, stdout) == (-signal.SIGKILL, b"")

"""``--record-dir DIR`` without ``--record``: each session gets a file of its own in DIR, even
when several start in the same second (an MCP client starting two servers, or restarting
one), and a session that never starts leaves no empty file there."""

from __future__ import annotations

import datetime
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from bench.robustness.crash import ThreadedUpstream
from golem_proxy.recording.safe_paths import resolve_record_path
from tests.support.cli_helpers import ROOT, cli_env, run_cli
from tests.tui.terminal import Terminal

ASK_AT_ONCE = """
import sys, time
from golem_proxy.recording.safe_paths import resolve_record_path
start = float(sys.argv[2])
while time.time() < start:  # all ask at the same instant; the parent's deadline bounds it
    time.sleep(0.0005)
print(resolve_record_path(None, sys.argv[1]))
"""


def taken_names(directory: Path, seconds: int = 90) -> dict[Path, str]:
    """Files at the default names of the last second and of the next ``seconds``, each with
    text of its own: a session starting in that time finds its name taken."""
    now = datetime.datetime.now()
    taken = {}
    for ahead in range(-1, seconds):
        stamp = (now + datetime.timedelta(seconds=ahead)).strftime("%Y%m%d-%H%M%S")
        path = directory / f"session-{stamp}.jsonl"
        path.write_text(f"precious {ahead}")
        taken[path] = f"precious {ahead}"
    return taken


def test_sessions_asking_at_once_each_get_a_file_of_their_own(tmp_path: Path) -> None:
    start = time.time() + 1.5
    asking = [
        subprocess.Popen(
            [sys.executable, "-c", ASK_AT_ONCE, str(tmp_path), repr(start)],
            cwd=ROOT,
            env=cli_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    paths = []
    for process in asking:
        out, _ = process.communicate(timeout=30)
        assert process.returncode == 0
        paths.append(out.strip())
    assert len(set(paths)) == 4, paths
    for path in paths:
        assert os.path.dirname(path) == str(tmp_path.resolve())
        assert os.path.basename(path).startswith("session-")
        info = os.lstat(path)
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600


def test_a_taken_name_gets_a_suffix_and_is_left_as_it_was(tmp_path: Path) -> None:
    taken = taken_names(tmp_path)
    path = Path(resolve_record_path(None, str(tmp_path)) or "")
    assert path not in taken and path.name.endswith("-2.jsonl"), path
    assert path.stat().st_size == 0
    assert {p: p.read_text() for p in taken} == taken


def test_a_proxy_that_never_starts_leaves_no_file_in_the_directory(tmp_path: Path) -> None:
    with ThreadedUpstream() as upstream, socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        in_use = busy.getsockname()[1]
        for route in (f"0.0.0.0:0={upstream.address}", f"127.0.0.1:{in_use}={upstream.address}"):
            done = run_cli("proxy", "--route", route, "--record-dir", str(tmp_path), timeout=30)
            assert done.returncode == 2, done.stdout + done.stderr
            assert list(tmp_path.iterdir()) == [], route


def test_a_tui_proxy_that_never_starts_leaves_no_file_in_the_directory(tmp_path: Path) -> None:
    # The TUI of one process (the default with --intercept) shows why it could not start and
    # exits with a code once quit, raising nothing: the reserved file must go all the same,
    # or `query DIR/*.jsonl` stops at it ("no recording header").
    directory = tmp_path / "recordings"
    directory.mkdir()
    with ThreadedUpstream() as upstream, socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        route = f"127.0.0.1:{busy.getsockname()[1]}={upstream.address}"
        for observer in ("in-process", "child-process"):
            terminal = Terminal(
                "proxy", "--tui", "--observer", observer, "--route", route,
                "--record-dir", str(directory), cwd=ROOT,
            )  # fmt: skip
            try:
                terminal.wait_for("Address already in use")
                if observer == "in-process":
                    terminal.type("q")  # nothing runs: q quits without asking
                code = terminal.exit_code(timeout=30)
            finally:
                terminal.close()
            assert code == 2, terminal.text()[-2000:]
            assert list(directory.iterdir()) == [], observer

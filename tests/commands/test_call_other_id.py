"""``golem-proxy call`` and ``resend`` against a server on 127.0.0.1 that answers at once, but
with an id it was never sent: the error says what came, at once where the profile's client
takes the next reply as its answer, after the timeout where replies go by id."""

from __future__ import annotations

import subprocess
import time
from functools import partial
from pathlib import Path

import trio

from golem_core.profiles import get_profile
from tests.support.cli_helpers import run_cli
from tests.support.peers import MisbehavingUpstream
from tests.support.traces import TraceBuilder


def against(profile: str, mode: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """The command line ``args`` with ``--target`` a `MisbehavingUpstream`, and its seconds."""

    async def main() -> tuple[subprocess.CompletedProcess[str], float]:
        upstream = MisbehavingUpstream(profile=get_profile(profile), mode=mode)
        async with trio.open_nursery() as nursery:
            address = await nursery.start(upstream.serve)
            started = time.monotonic()
            command = (*args, "--target", str(address))
            done = await trio.to_thread.run_sync(partial(run_cli, *command))
            nursery.cancel_scope.cancel()
        return done, time.monotonic() - started

    return trio.run(main)


def test_call_says_at_once_that_the_answer_has_another_id() -> None:
    done, seconds = against("golem", "wrong-id", "call", "ping", "--id", "ours", "--timeout", "20")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.endswith(' answered with another id ("nope-ours"), not ours ("ours")\n')
    assert len(done.stderr.splitlines()) == 1
    assert seconds < 10  # not the whole --timeout


def test_call_waits_for_its_id_where_replies_go_by_id_then_names_the_stray() -> None:
    done, _ = against("mcp", "wrong-id", "call", "ping", "--profile", "mcp", "--timeout", "1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.endswith(
        ' did not answer our id 1 (waited 1 s; 1 answer with another id: "nope-1")\n'
    )


def test_resend_says_at_once_that_the_answer_has_another_id(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceBuilder.create(str(path)) as trace:
        trace.call("ping", {}, {"echo": "ping"})
    done, seconds = against("golem", "wrong-id", "resend", str(path), "1", "--timeout", "20")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot send flow 1 again (" in done.stderr
    assert ' answered with another id ("nope-' in done.stderr
    assert seconds < 10


def test_call_names_the_replies_with_another_id_it_read_past() -> None:
    done, _ = against("mcp", "stray", "call", "ping", "--profile", "mcp", "--timeout", "20")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"echo": "ping"' in done.stdout
    assert done.stderr.endswith(' sent 1 answer with another id: "nope-1"\n')

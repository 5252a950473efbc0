"""A connection that opened, made its calls and closed while the observing process hung
(stopped, so it acknowledged none of it) is not in the recording once the watchdog replaces
that process (``proxy --observer child-process``, live/link_gone.py): the restart's line counts
it and says what it carried, as the forwarding process counted it, rather than "0
connections". The real command line, a real upstream, the observing process really stopped."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from bench.processes import observing_process
from golem_core.profiles import GOLEM
from golem_proxy.live.observer_link import STALL_LIMIT

from .observer_child_helpers import golem_calls, observed_proxy, process_gone, wait_for

CHILD = ("--observer", "child-process")


def _restart_detail(record: Path) -> str:
    for text in record.read_text().splitlines()[1:]:
        line = json.loads(text)
        if line["kind"] == "observation-restarted":
            return str(line["detail"])
    return ""


def test_a_connection_made_while_the_observer_hung_is_counted_with_its_bytes(
    tmp_path: Path,
) -> None:
    record = tmp_path / "r.jsonl"
    calls = [{"id": n, "method": "echo", "params": {"n": n}} for n in range(3)]
    with observed_proxy(record, *CHILD) as cli:
        golem_calls(cli.port, [{"id": "first", "method": "echo", "params": {}}])
        wait_for(lambda: '"kind":"exchange"' in record.read_text(), what="the first call")
        observer = observing_process(cli.process.pid)
        os.kill(observer, signal.SIGSTOP)
        try:
            golem_calls(cli.port, calls)  # opened, 3 calls, closed: all while it hangs
            wait_for(
                lambda: process_gone(observer),
                timeout=STALL_LIMIT + 30,
                what="the proxy to replace the stopped observing process",
            )
        finally:
            if not process_gone(observer):
                os.kill(observer, signal.SIGKILL)
        wait_for(lambda: bool(_restart_detail(record)), what="the restart line")
        cli.stop()
    assert "Traceback" not in cli.stderr, cli.stderr
    sent = sum(len(GOLEM.encode(call)) for call in calls)
    detail = _restart_detail(record)
    assert (
        f"1 connection opened and closed in between is not in this recording (#2 on main: "
        f"{sent} B in 3 frames → / " in detail
    ), detail
    assert "in 3 frames ←, handed to the observing process that stopped and never " in detail
    assert not [
        text for text in record.read_text().splitlines()[1:] if json.loads(text).get("conn") == 2
    ]

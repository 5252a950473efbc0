"""A Scrybe session recorded by the proxy command, then read back by the offline commands
(show, stats, check), served by ``replay --listen unix:PATH`` and re-sent by ``verify``, all as
subprocesses. Commands not present in this build are skipped."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from golem_proxy.testing import scrybe_client as contract_client
from golem_proxy.testing.scrybe_server import short_socket_dir
from golem_proxy.testing.scrybe_session import DISK, SESSION
from tests.support import cli_helpers
from tests.support.cli_helpers import interrupt

from .cli import app_process, env_with, start_cli, wait_for_line, wait_for_socket

Outcomes = list[contract_client.Outcome]
Recorded = tuple[str, Outcomes]


def needs(command: str) -> None:
    if importlib.util.find_spec(f"golem_proxy.commands.{command}") is None:
        pytest.skip(f"golem-proxy {command} is not in this build")


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return cli_helpers.run_cli(*args, env=env_with(), timeout=timeout)


@pytest.fixture(scope="module")
def recorded() -> Iterator[tuple[str, list[contract_client.Outcome]]]:
    """The session through ``golem-proxy proxy --record``; the recording and what the client
    got."""
    directory = short_socket_dir()
    record = os.path.join(directory, "scrybe.jsonl")
    listen = os.path.join(directory, "proxy.sock")
    with app_process(os.path.join(directory, "app.sock")) as app:
        route = f"unix:{listen}=unix:{app}"
        process = start_cli(
            "proxy", "--profile", "jsonrpc-ndjson", "--route", route, "--record", record
        )
        try:
            wait_for_line(process, r"(SCRYBE_SOCK=\S+)")
            outcomes = [contract_client.call(listen, m, p) for m, p in SESSION]
        finally:
            assert interrupt(process) == 0
    yield record, outcomes
    subprocess.run(["rm", "-rf", directory], check=False)


def test_show_names_methods_and_codes(recorded: Recorded) -> None:
    needs("show")
    done = run_cli("show", recorded[0])
    assert done.returncode == 0, done.stderr
    for word in ("section", "ERR_TAB_NOT_OPEN", "ERR_DIRTY_QUIT_REFUSED", "ERR_METHOD_NOT_FOUND"):
        assert word in done.stdout


def test_stats_count_every_method(recorded: Recorded) -> None:
    needs("stats")
    done = run_cli("stats", recorded[0])
    assert done.returncode == 0, done.stderr
    for method in ("open", "list_tabs", "set_theme", "view_mode", "logs"):
        assert method in done.stdout


def test_check_reports_the_bad_requests(
    recorded: Recorded,
) -> None:
    needs("check")
    done = run_cli("check", recorded[0])
    # The session sends an unknown method and a read without its path on purpose.
    assert done.returncode == 1, done.stderr
    assert "jsonrpc.method.unknown" in done.stdout and "jsonrpc.params.missing" in done.stdout


def replay_and_run(
    record: str, directory: str, *extra: str
) -> tuple[list[contract_client.Outcome], contract_client.Outcome, int]:
    listen = os.path.join(directory, "replay.sock")
    process = start_cli("replay", "--listen", f"unix:{listen}", *extra, record)
    try:
        wait_for_socket(listen)
        outcomes = [contract_client.call(listen, m, p) for m, p in SESSION]
        miss = contract_client.call(listen, "set_theme", {"theme": "never recorded"})
    finally:
        code = interrupt(process)
    return outcomes, miss, code


def test_replay_gives_the_client_identical_results(recorded: Recorded, sock_dir: str) -> None:
    needs("replay")
    record, live = recorded
    outcomes, miss, code = replay_and_run(record, sock_dir)
    assert [o.name for o in outcomes] == [o.name for o in live]
    assert [o.raw for o in outcomes] == [o.raw for o in live]
    # A request the trace does not know gets a JSON-RPC error, in this protocol's envelope.
    assert miss.name == "Remote(RpcError { code: -32601 })"
    reply = json.loads(miss.raw)
    assert reply["jsonrpc"] == "2.0" and reply["id"] == 1
    assert code == 0
    assert not os.path.lexists(os.path.join(sock_dir, "replay.sock"))


def test_replay_profile_override_is_accepted(recorded: Recorded, sock_dir: str) -> None:
    needs("replay")
    outcomes, _, code = replay_and_run(recorded[0], sock_dir, "--profile", "jsonrpc-ndjson")
    assert [o.raw for o in outcomes] == [o.raw for o in recorded[1]] and code == 0


def test_verify_passes_against_the_app_and_fails_against_a_changed_one(
    recorded: Recorded, sock_dir: str
) -> None:
    needs("verify")
    with app_process(os.path.join(sock_dir, "same.sock")) as same:
        done = run_cli("verify", recorded[0], "--target", f"unix:{same}")
    assert done.returncode == 0, done.stdout + done.stderr
    changed = dict(DISK, **{"/notes/a.md": "# Title\n\nrewritten\n"})
    with app_process(os.path.join(sock_dir, "changed.sock"), changed) as other:
        done = run_cli("verify", recorded[0], "--target", f"unix:{other}")
    assert done.returncode == 1, done.stdout + done.stderr

"""``golem-proxy resend FILE FLOW --target``: a recorded request sent again to the headless
plugin process, and the difference between the two answers."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import trio

from golem_core.messages import Response
from golem_proxy.testing.answering_server import answering
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import ROOT, run_cli
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy
from tests.support.plugin_fixture import plugin_fixture

plugin = plugin_fixture(seed=17)


@pytest.fixture(scope="module")
def recording(plugin: PluginProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("resend") / "session.jsonl"

    async def session() -> None:
        async with trio.open_nursery() as nursery:
            proxy = await start_proxy(nursery, plugin.main, record=str(path))
            client = GolemClient(await connect(proxy.listen))
            for ident, method, params in [
                ("r1", "ping", {}),
                ("r2", "scene.create_layer", {"name": "Once", "color": {"r": 1, "g": 2, "b": 3}}),
                ("r3", "operations.boolean_union", {"guids": []}),  # an error in the result
            ]:
                reply = await client.call({"id": ident, "method": method, "params": params})
                assert isinstance(reply, Response)
            await client.stream.aclose()
            await stop_proxy(proxy)

    trio.run(session)
    return path


def target(plugin: PluginProcess) -> str:
    return f"{plugin.main.host}:{plugin.main.port}"


def test_the_same_answer_exits_0(plugin: PluginProcess, recording: Path) -> None:
    done = run_cli("resend", str(recording), "1", "--target", target(plugin))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("flow 1 sent again: ping id ")
    assert "same answer as recorded" in done.stdout


def test_a_different_answer_is_listed_and_exits_1(plugin: PluginProcess, recording: Path) -> None:
    # The layer exists now: the plugin refuses to create it a second time.
    done = run_cli("resend", str(recording), "2", "--target", target(plugin))
    assert done.returncode == 1, done.stderr
    assert "→ APPLICATION_ERROR" in done.stdout
    assert "differences (recorded vs now):" in done.stdout
    assert "error (null vs {" in done.stdout


def test_errors_exit_2(plugin: PluginProcess, recording: Path) -> None:
    missing = run_cli("resend", str(recording), "7", "--target", target(plugin))
    assert missing.returncode == 2 and "has no request in flow 7" in missing.stderr
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    down = run_cli("resend", str(recording), "1", "--target", f"127.0.0.1:{port}")
    assert down.returncode == 2
    assert "cannot send flow 1 again (cannot reach 127.0.0.1:" in down.stderr


INVALID_UTF8_ANSWER = b'{"id": "\xff\xfe\xc0\xaf", "result": 1}'


def test_an_answer_that_is_not_utf8_is_malformed_and_exits_1(recording: Path) -> None:
    # Every answer is hostile input: resend reports it as call does, with no traceback.
    with answering(lambda request_id: INVALID_UTF8_ANSWER) as address:
        done = run_cli("resend", str(recording), "1", "--target", address, "--timeout", "10")
    assert done.returncode == 1, done.stderr
    assert "→ malformed:invalid-utf8" in done.stdout
    assert "malformed answer (invalid-utf8)" in done.stdout
    assert done.stderr == ""


def test_a_failure_inside_the_result_is_named_as_one(
    plugin: PluginProcess, recording: Path
) -> None:
    done = run_cli("resend", str(recording), "3", "--target", target(plugin))
    assert done.returncode == 0, done.stderr  # the same answer as recorded
    assert done.stdout.startswith("flow 3 sent again: operations.boolean_union id ")
    assert "→ INVALID_PARAMS (in result)" in done.stdout.splitlines()[0]


def test_a_flow_of_the_grasshopper_socket_goes_to_gh_target(plugin: PluginProcess) -> None:
    """It went to `main` without a word, asking the other socket (and a `gh.ping` there
    failed as a difference)."""
    sample = ROOT / "recordings" / "grasshopper-session.jsonl"
    refused = run_cli("resend", str(sample), "7", "--target", target(plugin))
    assert refused.returncode == 2
    assert "flow 7 came by route gh, the plugin's second socket" in refused.stderr
    assert "pass --gh-target HOST:PORT" in refused.stderr
    gh = f"{plugin.gh.host}:{plugin.gh.port}"
    done = run_cli("resend", str(sample), "7", "--target", target(plugin), "--gh-target", gh)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("flow 7 sent again: gh.ping id ")

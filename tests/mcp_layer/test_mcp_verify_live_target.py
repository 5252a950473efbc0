"""``golem-proxy mcp-verify --target`` with a live plugin that dies in the middle of the
replay: the call it fails is not the server build's difference, nor are the calls after it.
mcp-verify says so in one line and exits 2 (it could not verify), not 1 (the build differs);
a plugin that cannot be reached at all is said the same way before the server starts."""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path

import pytest
import trio

from golem_core.framing import Frame
from golem_core.profiles import GOLEM
from golem_proxy.net.addresses import Address
from golem_proxy.net.listeners import close_abortively, connect, open_listener
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import run_cli

from .mcp_helpers import SERVER_COMMAND, environment, recorded_session
from .test_mcp_verify_outage import _free_port

DIES_ON = "scene.create_layer"
"""The GOLEM method whose request kills the plugin (the second tool call, create_layer)."""


class DyingPlugin:
    """The headless plugin's main channel behind a loopback listener of ours, which dies as a
    plugin process does when `DIES_ON` comes: it stops listening (connections are refused)
    and its connections are reset."""

    def __init__(self, plugin: Address) -> None:
        self.plugin = plugin
        self.died = trio.Event()

    async def serve(
        self, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listener = await open_listener(Address("127.0.0.1", 0))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._die_when_told, listener, nursery.cancel_scope)
            task_status.started(listener.address)
            await trio.serve_listeners(self._handle, [listener.listener], handler_nursery=nursery)

    async def _die_when_told(self, listener: object, scope: trio.CancelScope) -> None:
        await self.died.wait()
        scope.cancel()

    async def _handle(self, server: trio.SocketStream) -> None:
        plugin = await connect(self.plugin)
        try:
            # Either side's end ends the connection: the plugin serves one at a time.
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._requests, server, plugin, nursery.cancel_scope)
                nursery.start_soon(self._answers, plugin, server, nursery.cancel_scope)
        finally:
            close_abortively(server)
            close_abortively(plugin)

    async def _requests(
        self, server: trio.SocketStream, plugin: trio.SocketStream, ended: trio.CancelScope
    ) -> None:
        decoder = GOLEM.new_decoder()
        async for chunk in server:
            decoder.receive_data(bytes(chunk))
            for event in decoder.events():
                if isinstance(event, Frame) and json.loads(event.payload)["method"] == DIES_ON:
                    self.died.set()  # read, never answered: the process is gone
                    await trio.sleep_forever()
            await plugin.send_all(chunk)
        ended.cancel()

    async def _answers(
        self, plugin: trio.SocketStream, server: trio.SocketStream, ended: trio.CancelScope
    ) -> None:
        async for chunk in plugin:
            await server.send_all(chunk)
        ended.cancel()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded_session(tmp_path_factory.mktemp("live-target") / "session.jsonl")


def mcp_verify(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "mcp-verify", *args, "--", *SERVER_COMMAND, env=environment(COLUMNS="200"), timeout=120
    )


def _verify_as_the_plugin_dies(
    recording: Path, *args: str, changed: bool = False
) -> subprocess.CompletedProcess[str]:
    """mcp-verify against a plugin that dies at `DIES_ON`; ``changed``: its document holds a
    layer the recording's did not, so the calls before differ."""

    async def main() -> subprocess.CompletedProcess[str]:
        with PluginProcess(seed=7) as plugin:
            if changed:
                with GolemClient(plugin.main.host or "127.0.0.1", plugin.main.port or 0) as client:
                    client.send_command("scene.create_layer", {"name": "not-recorded"})
            dying = DyingPlugin(plugin.main)
            async with trio.open_nursery() as nursery:
                main_address = await nursery.start(dying.serve)
                command = (
                    str(recording), "--target", str(main_address), "--gh-target", str(plugin.gh),
                    *args,
                )  # fmt: skip
                done = await trio.to_thread.run_sync(partial(mcp_verify, *command))
                nursery.cancel_scope.cancel()
        assert dying.died.is_set()
        return done

    return trio.run(main)


def test_a_live_plugin_that_dies_mid_replay_is_its_failure_not_the_builds(
    recording: Path,
) -> None:
    done = _verify_as_the_plugin_dies(recording)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("golem-proxy: mcp-verify: the live plugin at 127.0.0.1:")
    assert "(--target) went away during #" in line
    assert " create_layer: connection refused (#" in line
    assert " create_layer not compared, 4 tool calls after it not played)" in line
    assert "differs" not in done.stdout and "tool calls differ" not in done.stdout
    row = next(line for line in done.stdout.splitlines() if line.startswith("create_layer"))
    assert "not compared" in row and "went away" in row
    assert "layer_report" not in done.stdout  # not played


def test_the_builds_differences_before_the_plugin_went_away_stand(recording: Path) -> None:
    done = _verify_as_the_plugin_dies(recording, changed=True)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert " create_layer: connection refused (#" in line
    assert (
        "mcp-verify: 1 of the 1 tool calls compared before the live plugin went away differ: "
        "list_layers"
    ) in done.stdout


def test_json_says_where_the_live_plugin_went_away(recording: Path) -> None:
    done = _verify_as_the_plugin_dies(recording, "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False and report["differing"] == []
    lost = report["target_lost"]
    assert (lost["option"], lost["tool"], lost["reason"], lost["not_played"]) == (
        "--target", "create_layer", "connection refused", 4,
    )  # fmt: skip
    assert [check["tool"] for check in report["checks"] if check["tool"]] == [
        "list_layers", "create_layer",
    ]  # fmt: skip


def test_a_live_plugin_that_cannot_be_reached_is_one_line_and_exit_2(recording: Path) -> None:
    nothing = f"127.0.0.1:{_free_port()}"
    done = mcp_verify(str(recording), "--target", nothing)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"golem-proxy: mcp-verify: cannot reach the live plugin at {nothing} (--target) "
        "(connection refused)\n"
    )

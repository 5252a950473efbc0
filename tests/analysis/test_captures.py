"""Captured images: found in flows, and written by ``export --format images`` as private
files, never through a symbolic link. The captures come from the headless plugin through the
proxy, as a user records them."""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from golem_core.messages import Response
from golem_proxy.analysis.captures import PNG_SIGNATURE, captures
from golem_proxy.analysis.trace import open_flows
from golem_proxy.net.addresses import Address
from rhino_plugin import HeadlessPlugin, PluginOptions
from tests.support.cli_helpers import run_cli
from tests.support.harness import GolemClient, connect, start_proxy, stop_proxy


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[bytes]]]:
    """A recorded session with two captures; yields its path and the PNGs the client got."""
    path = tmp_path_factory.mktemp("captures") / "session.jsonl"
    plugin = HeadlessPlugin("127.0.0.1", 0, 0, PluginOptions(seed=4))
    (host, port), _ = plugin.start()
    pngs: list[bytes] = []

    async def session() -> None:
        async with trio.open_nursery() as nursery:
            proxy = await start_proxy(nursery, Address(host, port), record=str(path))
            client = GolemClient(await connect(proxy.listen))
            box = {
                "corner_x": 0,
                "corner_y": 0,
                "corner_z": 0,
                "width": 10,
                "depth": 5,
                "height": 3,
            }
            calls = [
                ("creation.create_box", box),
                ("viewport.capture", {"width": 64, "height": 48}),
                ("ping", {}),
                ("viewport.capture", {"width": 20, "height": 10, "view_name": "Top"}),
            ]
            for number, (method, params) in enumerate(calls):
                reply = await client.call({"id": f"r{number}", "method": method, "params": params})
                assert isinstance(reply, Response), reply
                if method == "viewport.capture":
                    pngs.append(base64.b64decode(reply.result["image"]))
            await client.stream.aclose()
            await stop_proxy(proxy)

    try:
        trio.run(session)
    finally:
        plugin.stop()
    yield path, pngs


def test_captures_are_found_with_their_flow_and_size(recording: tuple[Path, list[bytes]]) -> None:
    path, pngs = recording
    with open_flows(str(path)) as trace:
        flows = list(trace.flows())
    found = list(captures(flows))
    numbers = [f.number for f in flows if f.method == "viewport.capture"]
    assert [c.flow for c in found] == numbers
    assert [(c.width, c.height) for c in found] == [(64, 48), (20, 10)]
    assert [c.png for c in found] == pngs
    assert all(c.png.startswith(PNG_SIGNATURE) for c in found)


def test_export_images_writes_private_files_named_by_flow(
    recording: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    path, pngs = recording
    out = tmp_path / "images"
    done = run_cli("export", str(path), "--format", "images", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "wrote 2 images" in done.stderr
    files = sorted(out.iterdir())
    assert [f.name for f in files] == ["flow-2.png", "flow-4.png"]
    assert [f.read_bytes() for f in files] == pngs
    for file in files:
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert "flow-2.png  64x48" in done.stdout


def test_export_images_refuses_a_symbolic_link(
    recording: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    path, _ = recording
    out = tmp_path / "images"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.symlink(victim, out / "flow-2.png")
    done = run_cli("export", str(path), "--format", "images", "--out", str(out))
    assert done.returncode == 2
    assert "is a symbolic link, not followed here" in done.stderr
    assert victim.read_text() == "keep me"


def test_export_images_needs_a_directory(recording: tuple[Path, list[bytes]]) -> None:
    done = run_cli("export", str(recording[0]), "--format", "images")
    assert done.returncode == 2 and "--format images needs --out DIR" in done.stderr

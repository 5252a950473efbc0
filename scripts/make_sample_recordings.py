"""Regenerate the sample traces in recordings/: scripted GOLEM sessions recorded through the
proxy from the headless plugin.

    python scripts/make_sample_recordings.py [--seed 7] [--out recordings]

Three sessions: a modelling session (main channel), an error-heavy session (missing params,
unknown GUIDs and methods, a malformed frame) and a Grasshopper session (gh channel). With the
same seed the files hold the same requests, ids, GUIDs and answers; only the times differ.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import sys
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from golem_core.profiles import GOLEM  # noqa: E402
from golem_proxy.live.relay import ProxyOptions  # noqa: E402
from golem_proxy.live.session import ProxySession, SessionConfig  # noqa: E402
from golem_proxy.net.addresses import Address, Route  # noqa: E402
from golem_proxy.testing.client import GolemClient, RhinoCommandError  # noqa: E402
from golem_proxy.testing.plugin_process import PluginProcess  # noqa: E402

Session = Callable[[tuple[str, int], tuple[str, int]], None]


def _call(client: GolemClient, method: str, params: dict[str, Any]) -> Any:
    try:
        return client.send_command(method, params)
    except RhinoCommandError:
        return None  # the error is in the recording; the session goes on


def modelling(main: tuple[str, int], gh: tuple[str, int]) -> None:
    with GolemClient(*main) as rhino:
        _call(rhino, "scene.get_document_info", {})
        _call(rhino, "scene.create_layer", {"name": "Walls", "color": [200, 80, 40]})
        boxes = [
            _call(
                rhino,
                "geometry.create_box",
                {
                    "corner": [x, 0.0, 0.0],
                    "width": 40.0,
                    "depth": 10.0,
                    "height": 30.0,
                    "layer": "Walls",
                },
            )
            for x in (0.0, 50.0)
        ]
        sphere = _call(
            rhino, "geometry.create_sphere", {"center": [20.0, 5.0, 45.0], "radius": 8.0}
        )
        guids = [item["guid"] for item in (*boxes, sphere) if item]
        _call(rhino, "scene.list_objects", {"layer": "Walls"})
        _call(
            rhino, "manipulation.move_objects", {"guids": guids[:2], "translation": [0.0, 5.0, 0.0]}
        )
        _call(rhino, "operations.boolean_union", {"guids": guids[1:]})
        _call(rhino, "scene.list_objects", {})


def errors(main: tuple[str, int], gh: tuple[str, int]) -> None:
    with GolemClient(*main) as rhino:
        _call(rhino, "geometry.create_sphere", {"center": [0, 0, 0]})
        _call(rhino, "scene.get_object_info", {"guid": "00000000-0000-4000-8000-000000000000"})
        _call(rhino, "creation.create_hexagon", {"radius": 3.0})
        _call(rhino, "scene.create_layer", {"name": "Dup"})
        _call(rhino, "scene.create_layer", {"name": "Dup"})
        _call(rhino, "manipulation.align_objects", {"guids": [], "alignment": "left"})
    # A client bug: a frame that is not JSON. The plugin answers -32603 with a null id.
    with socket.create_connection(main, timeout=10) as raw:
        raw.sendall(GOLEM.frame_payload(b'{"id": "broken", "method": '))
        raw.recv(65536)


def grasshopper(main: tuple[str, int], gh: tuple[str, int]) -> None:
    with GolemClient(*gh) as channel:
        _call(channel, "grasshopper.open_definition", {"file_path": "demo/box.gh"})
        _call(channel, "grasshopper.list_components", {})
        _call(channel, "grasshopper.set_input", {"component_name": "Height", "value": 12.5})
        _call(channel, "grasshopper.recompute", {})
        _call(channel, "grasshopper.bake_objects", {"layer": "Default"})


SESSIONS: dict[str, Session] = {
    "modelling-session": modelling,
    "error-session": errors,
    "grasshopper-session": grasshopper,
}


async def record(path: Path, plugin: PluginProcess, session: Session) -> None:
    routes = [
        Route("main", Address("127.0.0.1", 0), plugin.main),
        Route("gh", Address("127.0.0.1", 0), plugin.gh),
    ]
    config = SessionConfig(
        routes=routes,
        profile=GOLEM,
        options=ProxyOptions(drain_timeout=1.0),
        record_path=str(path),
        overwrite=True,
    )
    proxy = ProxySession(config)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(proxy.run)
        main, gh = bound[0].listen, bound[1].listen
        await trio.to_thread.run_sync(session, (main.host, main.port), (gh.host, gh.port))
        proxy.stop()
        await proxy.finished.wait()


def _seeded_uuid4(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def main() -> int:
    parser = argparse.ArgumentParser(description="regenerate recordings/ sample traces")
    parser.add_argument("--seed", type=int, default=7, help="plugin and request-id seed")
    parser.add_argument("--out", default=str(ROOT / "recordings"), help="output directory")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, session in SESSIONS.items():
        # The client's request ids are uuid.uuid4(): in this script only, draw them from a
        # seeded generator so the files come out the same for the same seed.
        uuid.uuid4 = partial(_seeded_uuid4, random.Random(f"{args.seed}:{name}"))
        path = Path(args.out) / f"{name}.jsonl"
        with PluginProcess(seed=args.seed) as plugin:
            trio.run(record, path, plugin, session)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

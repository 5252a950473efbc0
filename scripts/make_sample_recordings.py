"""Regenerate the sample traces in recordings/: the scripted GOLEM sessions of
`golem_proxy.testing.demo_session` (the ones ``golem-proxy demo`` drives), each recorded
through the proxy from the headless plugin in its default behaviour (golem-3dmcp@9819b31).

    python scripts/make_sample_recordings.py [--seed 7] [--out recordings]

Three sessions: a modelling session, an error-heavy session (drift between what the MCP server
sends and what the plugin registers or reads, unknown GUIDs, a malformed frame) and a
Grasshopper session. With the same seed the files hold the same requests, ids, GUIDs and
answers; only the times differ.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import uuid
from functools import partial
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from golem_core.profiles import GOLEM  # noqa: E402
from golem_proxy.live.proxy_options import ProxyOptions  # noqa: E402
from golem_proxy.live.session import ProxySession, SessionConfig  # noqa: E402
from golem_proxy.net.addresses import Address, Route  # noqa: E402
from golem_proxy.testing.demo_session import SESSIONS, DemoOutcome, Script  # noqa: E402
from golem_proxy.testing.plugin_process import PluginProcess  # noqa: E402


async def record(path: Path, plugin: PluginProcess, session: Script) -> None:
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
        await trio.to_thread.run_sync(
            session, (main.host, main.port), (gh.host, gh.port), DemoOutcome()
        )
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

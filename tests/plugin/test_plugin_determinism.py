"""Same seed, same calls → same GUIDs; another seed → other GUIDs."""

from __future__ import annotations

from typing import Any, Callable


def _session(start_plugin: Callable[..., Any], connect: Callable[..., Any], seed: int) -> list[str]:
    client = connect(start_plugin(seed=seed).main_address)
    guids = [
        client.call("geometry.create_box", corner=[i, 0, 0], width=1, depth=1, height=1)["guid"]
        for i in range(3)
    ]
    guids.append(client.call("creation.create_point", x=1)["guid"])
    return guids


def test_seed_makes_guids_reproducible(
    start_plugin: Callable[..., Any], connect: Callable[..., Any]
) -> None:
    first = _session(start_plugin, connect, 42)
    assert first == _session(start_plugin, connect, 42)
    assert first != _session(start_plugin, connect, 43)
    assert len(set(first)) == 4 and all(g[14] == "4" for g in first)  # UUID version 4

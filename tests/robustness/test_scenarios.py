"""Load, chaos, slowloris and resource hygiene through the proxy, with figures (CI sizes;
``bench/soak.py`` runs the same scenarios longer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.robustness import scenarios

pytestmark = pytest.mark.trio


async def test_load_200_connections_nothing_lost_silently_or_mispaired(
    tmp_path: Path, figures: dict[str, Any]
) -> None:
    found = await scenarios.load(tmp_path, connections=200, seconds=5.0)
    figures.update(found)
    assert found["client_errors"] == 0
    assert found["exchanges_client"] > 1000
    # The clients run in the proxy's own trio loop here, so forwarding always has work ready
    # and the observer gets its smaller share: on a loaded machine it may shed. Whatever it
    # did not decode is on record as a gap on that very connection; nothing goes silently.
    assert found["mispaired"] == found["duplicates"] == 0
    assert found["lost_without_gap"] == 0
    assert found["exchanges_recorded"] + found["lost"] == found["exchanges_client"]
    assert found["missed_events"] == 0
    # Bounded: past the warm-up, memory does not grow with the number of exchanges.
    assert found["rss_end_kib"] - found["rss_warm_kib"] < 32 * 1024


async def test_chaos_recording_is_byte_exact(tmp_path: Path, figures: dict[str, Any]) -> None:
    found = await scenarios.chaos(tmp_path, runs=40, seed=1)
    figures.update(found)
    assert found["mismatches"] == 0, found["first_mismatches"]
    assert found["modes"].keys() == {"clean", "client-reset", "upstream-reset"}


async def test_slowloris_does_not_starve_others(figures: dict[str, Any]) -> None:
    found = await scenarios.slowloris(stallers=100, tricklers=20, seconds=3.0)
    figures.update(found)
    assert found["normal_round_trips"] > 50
    assert found["loaded_p99_ms"] < 100
    # Without --idle-timeout the proxy closes nobody: it is a transparent pipe.
    assert found["stallers_closed_by_proxy"] == found["idle_closes"] == 0
    assert found["tricklers_alive"] == 20


async def test_idle_timeout_closes_stalled_connections_only(figures: dict[str, Any]) -> None:
    found = await scenarios.slowloris(stallers=50, tricklers=10, seconds=2.5, idle_timeout=1.0)
    figures.update(found)
    assert found["stallers_closed_by_proxy"] == 50
    assert found["idle_closes"] == 50
    assert found["tricklers_alive"] == 10  # a byte every 0.2 s is activity


async def test_descriptors_and_tasks_return_to_baseline(figures: dict[str, Any]) -> None:
    found = await scenarios.hygiene(connections=120)
    figures.update(found)
    assert found["settled"], found
    assert found["fds_after"] <= found["fds_before"]
    assert found["tasks_after"] <= found["tasks_before"]
    assert found["closes_seen"] == 120

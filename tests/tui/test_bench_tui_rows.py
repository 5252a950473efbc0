"""bench_proxy's ``--tui`` rows: each golem-proxy with ``--tui`` draws on a pseudo-terminal
of its own, forwards byte-exact, and is quit by a Ctrl-C typed into its TUI, leaving a
recording that holds every exchange sent through it."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def rig() -> Iterator[ModuleType]:
    """The bench directory on the path, as when a script there runs; the rig module."""
    sys.path.insert(0, str(BENCH))
    import proxy_rig

    yield proxy_rig


def test_the_tui_rows_draw_forward_exactly_quit_and_record_everything(
    rig: ModuleType, tmp_path: Path
) -> None:
    import proxy_measures

    names = [rig.OURS_TUI, rig.OURS_CHILD_TUI]
    processes: dict[str, int] = {}
    with rig.configurations(tmp_path, None, names) as configs:
        for config in configs:
            if config.name not in names:
                continue
            assert config.terminal is not None
            assert proxy_measures.byte_exact(config.port)
            deadline = time.monotonic() + 30
            while config.terminal.drawn == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert config.terminal.drawn > 0  # the TUI drew on its terminal
            # What leaving the rig does first (`stop_config`): a Ctrl-C typed into the TUI
            # ends the session, which drains and flushes, and the process exits.
            config.terminal.type("\x03")
            processes[config.name] = config.process.wait(60)
    assert processes == dict.fromkeys(names, 0)
    for name in names:
        counts = proxy_measures.RecordingTail(tmp_path / rig.RECORDING[name]).count()
        assert counts is not None
        assert counts["exchange"] == proxy_measures.EXACT_REQUESTS, name
        assert counts["unobserved"] == counts["gap"] == 0, name

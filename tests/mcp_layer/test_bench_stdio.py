"""bench/bench_stdio.py runs at a tiny size (no timing): every hop answers every call (the
wrapper with both observers)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from .mcp_helpers import ROOT, environment

BENCH = ROOT / "bench" / "bench_stdio.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_stdio", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_hop_answers_every_call(tmp_path: Path) -> None:
    bench = load()
    record = str(tmp_path / "bench.jsonl")
    for command in bench.relay_hops(record).values():
        assert len(bench.round_trips(command, 5, environment())) == 5

"""bench/bench_stdio.py runs at a tiny size (no timing): its three hops answer every call."""

from __future__ import annotations

import importlib.util
import sys
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
    hops = (
        bench.SERVER,
        [sys.executable, str(BENCH), "--relay", *bench.SERVER],
        [
            sys.executable,
            "-m",
            "golem_proxy",
            "mcp",
            "--quiet",
            "--record",
            record,
            "--",
            *bench.SERVER,
        ],
    )
    for command in hops:
        assert len(bench.round_trips(command, 5, environment())) == 5

"""The codec benchmark's functions run and agree with each other at tiny sizes (no timing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_codec.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_codec", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_codec"] = module
    spec.loader.exec_module(module)
    return module


def test_contestants_agree(bench: ModuleType) -> None:
    stream = bench.make_requests(50)
    assert 150 < len(stream) / 50 < 260  # ≈200-byte requests
    for size in (7, 1000, bench.CHUNK):
        chunks = bench.chunks_of(stream, size)
        assert bench.ours_messages(chunks) == bench.minimal_messages(chunks) == 50
    big = bench.chunks_of(bench.make_big_frame(10_000), 333)
    assert bench.ours_framing(big) == bench.minimal_framing(big) == 10_000


def test_run_and_render(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    result = bench.run(frames=20, big=4096, rounds=2)
    assert result["ratio_fps"] > 0 and result["ratio_mbs"] > 0
    bench.render(result)
    out = capsys.readouterr().out
    assert "(a)" in out and "(b)" in out and "frames/s" in out

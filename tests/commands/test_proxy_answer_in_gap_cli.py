"""``golem-proxy proxy --observe-frame-limit`` in front of the headless plugin: an answer over
the limit (a viewport capture) is the answer of the request it pairs with, read from its id,
so its request reads answered, never unanswered, and `check` finds nothing failed."""

from __future__ import annotations

from pathlib import Path

from bench.robustness.proxy_cli import start_proxy_cli
from golem_proxy.events import ExchangeCompleted, FrameSeen, GapReason, ObservationLost
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import GolemClient
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import cli_env, run_cli
from tests.support.plugin_fixture import plugin_fixture

plugin = plugin_fixture(seed=3, scope="function")

CAPTURE = "viewport.capture"
ANSWERED = "answered (unobserved:frame-too-large)"


def test_a_golem_answer_too_large_to_observe_answers_its_request(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    record = tmp_path / "live.jsonl"
    cli = start_proxy_cli(
        "--route", f"main@127.0.0.1:0={plugin.main}", "--record", str(record),
        "--observe-frame-limit", str(1 / 1024),
    )  # fmt: skip
    try:
        with GolemClient("127.0.0.1", cli.port) as client:
            client.send_command("scene.get_document_info", {})
            capture = client.send_command(CAPTURE, {"width": 640, "height": 480})
            assert capture
            assert client.send_command("scene.get_document_info", {})
    finally:
        cli.stop()
    assert cli.process.returncode == 0, cli.stderr
    assert "without an answer" not in cli.stderr + "".join(cli.lines), cli.lines
    events = read_recording(str(record)).events
    gaps = [e for e in events if isinstance(e, ObservationLost)]
    (asked,) = [e.index for e in events if isinstance(e, FrameSeen) and e.method == CAPTURE]
    assert [(g.reason, g.answers) for g in gaps] == [(GapReason.FRAME_TOO_LARGE, asked)]
    paired = [e.request.index for e in events if isinstance(e, ExchangeCompleted)]
    assert asked not in paired and len(paired) >= 2

    show = run_cli("show", str(record), env=dict(cli_env(), COLUMNS="200"))
    assert show.returncode == 0, show.stderr
    rows = [line for line in show.stdout.splitlines() if CAPTURE in line]
    assert len(rows) == 1 and ANSWERED in rows[0], show.stdout
    assert "unanswered" not in show.stdout, show.stdout
    check = run_cli("check", str(record))
    assert check.returncode == 3, check.stdout + check.stderr
    assert "failed" not in check.stdout, check.stdout

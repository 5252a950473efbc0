"""Long reads show a progress bar on stderr when it is a terminal, and nothing when it is
piped (issue 22 point 8). The commands' output is the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem_proxy.commands._progress import MIN_BYTES
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import ROOT, run_cli, run_cli_tty
from tests.support.sessions import bulk_session, write_recording

COMMANDS = {
    "stats": ("reading", ("stats",)),
    "check": ("checking", ("check",)),
    "export": ("exporting", ("export", "--format", "jsonl")),
}


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("progress") / "large.jsonl"
    write_recording(str(path), bulk_session(15_000))
    assert path.stat().st_size > MIN_BYTES
    return path


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_terminal_sees_the_bytes_read_of_the_file(large: Path, tmp_path: Path, name: str) -> None:
    label, args = COMMANDS[name]
    out = tmp_path / "out"
    with out.open("wb") as stdout:
        code, stderr = run_cli_tty(args[0], str(large), *args[1:], columns=100, stdout=stdout)
    # The generated trace ends without its closing lines: check says it saw it incomplete.
    assert code in ((0, 1, 3) if name == "check" else (0, 1)), stderr
    assert label in stderr
    size = f"{large.stat().st_size / 1024 / 1024:.1f} MiB"
    assert f"/{size}" in stderr  # "2.1/10.6 MiB": read of the file's size
    printed = out.read_text("utf-8")
    assert "\x1b" not in printed  # the bar never reaches stdout
    if name == "export":
        assert printed.count("\n") == 15_000


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_piped_stderr_gets_no_bar(large: Path, name: str) -> None:
    _, args = COMMANDS[name]
    done = run_cli(args[0], str(large), *args[1:])
    assert done.returncode in ((0, 1, 3) if name == "check" else (0, 1))
    # No bar: at most the note that the generated trace ends without its closing lines.
    assert all(line.startswith("note: ") for line in done.stderr.splitlines()), done.stderr


def test_verify_counts_its_exchanges_on_a_terminal(tmp_path: Path) -> None:
    sample = str(ROOT / "recordings" / "modelling-session.jsonl")
    out = tmp_path / "out"
    with PluginProcess(seed=7) as plugin, out.open("wb") as stdout:
        args = ("verify", sample, "--target", str(plugin.main), "--gh-target", str(plugin.gh))
        code, stderr = run_cli_tty(*args, columns=100, stdout=stdout)
    assert code in (0, 1), stderr
    assert "verifying" in stderr
    printed = out.read_text("utf-8")
    assert "verify:" in printed and "\x1b" not in printed

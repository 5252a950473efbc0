"""Every error a user can cause, through the real command line: one line on stderr,
``golem-proxy: <what> (<why>)``, exit 2 (1 is kept for "found differences or violations"),
never a traceback unless ``--debug``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from golem_proxy.analysis.filters import FilterError, parse_filter
from golem_proxy.cli import main
from golem_proxy.commands import show
from golem_proxy.commands._common import CommandError, error_line
from golem_proxy.net.listeners import ListenError
from tests.support.cli_helpers import ROOT, run_cli, run_main

MODELLING = str(ROOT / "recordings" / "modelling-session.jsonl")
GRASSHOPPER = str(ROOT / "recordings" / "grasshopper-session.jsonl")
README = str(ROOT / "README.md")
NOT_A_RECORDING = "not a golem-proxy recording (its first line is not JSON)"


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The error line of a command that failed as a user error should; asserts the style."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception Group" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("golem-proxy: "), lines[0]
    return lines[0][len("golem-proxy: ") :]


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port that refuses connections: bound, never listening, so nobody else takes it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def test_replay_on_a_busy_port(busy_port: int) -> None:
    done = run_cli("replay", MODELLING, "--listen", f"127.0.0.1:{busy_port}")
    assert one_line_error(done) == f"cannot listen on 127.0.0.1:{busy_port}: Address already in use"


def test_replay_on_a_regular_file(tmp_path: Path) -> None:
    regular = tmp_path / "regular"
    regular.write_text("keep me")
    done = run_cli("replay", MODELLING, "--listen", f"unix:{regular}")
    assert "it exists and is not a socket" in one_line_error(done)
    assert regular.read_text() == "keep me"


def test_replay_on_a_public_address() -> None:
    done = run_cli("replay", MODELLING, "--listen", "0.0.0.0:0", "--gh-listen", "127.0.0.1:0")
    assert one_line_error(done) == (
        "refusing to listen on 0.0.0.0:0 "
        "(not a loopback address; pass --listen-public to listen there)"
    )


def test_proxy_on_a_busy_port(busy_port: int) -> None:
    done = run_cli("proxy", "--route", f"127.0.0.1:{busy_port}=127.0.0.1:1")
    assert one_line_error(done) == f"cannot listen on 127.0.0.1:{busy_port}: Address already in use"


def test_proxy_on_a_public_address() -> None:
    done = run_cli("proxy", "--route", "0.0.0.0:0=127.0.0.1:1")
    assert one_line_error(done) == (
        "refusing to listen on 0.0.0.0:0 "
        "(not a loopback address; pass --listen-public to listen there)"
    )


def test_proxy_record_to_an_existing_file_names_overwrite(tmp_path: Path) -> None:
    existing = tmp_path / "session.jsonl"
    existing.write_text("mine\n")
    done = run_cli("proxy", "--record", str(existing), "--route", "127.0.0.1:0=127.0.0.1:1")
    assert one_line_error(done) == f"{existing}: already exists (pass --overwrite to replace it)"
    assert existing.read_text() == "mine\n"


def test_demo_offers_only_the_profiles_it_runs() -> None:
    done = run_cli("demo", "--profile", "mcp")
    assert one_line_error(done) == (
        "demo --profile: invalid choice: 'mcp' (choose from 'golem', 'jsonrpc-ndjson')"
    )


def test_demo_out_to_an_existing_file_fails_before_starting(tmp_path: Path) -> None:
    existing = tmp_path / "demo.jsonl"
    existing.write_text("mine\n")
    done = run_cli("demo", "--out", str(existing))
    assert one_line_error(done) == f"{existing}: already exists (the demo never replaces a file)"
    assert "headless plugin" not in done.stdout
    assert existing.read_text() == "mine\n"


OPENING_A_RECORDING = [
    ["show"],
    ["stats"],
    ["replay"],
    ["verify", "--target", "127.0.0.1:1"],
    ["tui"],
    ["mcp-verify", "--", "true"],
]
"""The commands that refuse a text file as not a recording, each with the options it needs
besides the file (check and export are tested on a missing file only)."""


@pytest.mark.parametrize(
    "command", [*OPENING_A_RECORDING, ["check"], ["export", "--format", "jsonl"]]
)
def test_a_missing_file(command: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nofile.jsonl"
    done = run_cli(command[0], str(missing), *command[1:])
    assert one_line_error(done) == f"{missing}: no such file"


@pytest.mark.parametrize("command", OPENING_A_RECORDING)
def test_a_text_file_is_not_a_recording(command: list[str]) -> None:
    done = run_cli(command[0], README, *command[1:])
    assert one_line_error(done) == f"{README}: {NOT_A_RECORDING}"


def test_diff_says_which_trace_is_bad(tmp_path: Path) -> None:
    missing = str(tmp_path / "nofile.jsonl")
    assert one_line_error(run_cli("diff", MODELLING, missing)) == (
        f"trace B, {missing}: no such file"
    )
    assert one_line_error(run_cli("diff", missing, MODELLING)) == (
        f"trace A, {missing}: no such file"
    )
    assert one_line_error(run_cli("diff", MODELLING, README)) == (
        f"trace B, {README}: {NOT_A_RECORDING}"
    )


def test_a_bad_address_argument_reads_as_such() -> None:
    done = run_cli("replay", MODELLING, "--listen", "nonsense")
    line = one_line_error(done)
    assert line == (
        "replay --listen: 'nonsense': expected HOST:PORT or unix:PATH "
        "(see golem-proxy replay --help)"
    )
    assert "parse_address" not in line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["verify", MODELLING, "--target", "127.0.0.1:1", "--timeout", "soon"],
            "verify --timeout: 'soon' is not a number of seconds (see golem-proxy verify --help)",
        ),
        (
            ["show", MODELLING, "--limit", "ten"],
            "show --limit/-n: 'ten' is not an integer (see golem-proxy show --help)",
        ),
        (["show", MODELLING, "--limit", "-1"], "--limit must be 0 or more"),
        (
            ["show"],
            "show: the following arguments are required: FILE (see golem-proxy show --help)",
        ),
        (
            ["replay", MODELLING, "--on-miss", "bogus"],
            "replay --on-miss: 'bogus': expected error, close or forward HOST:PORT",
        ),
        (["proxy", "--route", "nonsense"], "proxy --route: 'nonsense': expected LISTEN=UPSTREAM"),
        (
            ["replay", MODELLING, "--timing", "xfast"],
            "replay --timing: 'xfast': expected none, original or xN (N a number)",
        ),
        (
            ["check", MODELLING, "--catalogue-live", "127.0.0.1:1"],
            "cannot ask list_methods at 127.0.0.1:1 (connection refused)",
        ),
        (
            ["export", MODELLING, "--format", "jsonl", "--out", MODELLING + "/x.jsonl"],
            f"cannot write {MODELLING}/x.jsonl (a part of the path is not a directory)",
        ),
    ],
)
def test_usage_errors(args: list[str], expected: str) -> None:
    assert one_line_error(run_cli(*args)) == expected


def test_an_unknown_command() -> None:
    line = one_line_error(run_cli("nosuch"))
    assert line.startswith("unknown command 'nosuch' (choose from demo, proxy, mcp, show,")


def test_an_unknown_error_code_in_a_filter() -> None:
    line = one_line_error(run_cli("show", MODELLING, "--filter", "~c NOPE"))
    assert line.startswith("bad filter: unknown error code 'NOPE' for ~c; use an integer or one")
    assert "OBJECT_NOT_FOUND" in line


def test_verify_against_nothing_could_not_run(refusing_port: int) -> None:
    # Before: ten "no answer" lines and "10 of 10 exchanges differ", exit 1: a regression to CI.
    done = run_cli("verify", MODELLING, "--target", f"127.0.0.1:{refusing_port}")
    assert one_line_error(done) == (
        f"cannot reach the plugin at 127.0.0.1:{refusing_port} for route main (connection refused)"
    )
    assert done.stdout == ""


def test_verify_a_grasshopper_trace_without_gh_target(refusing_port: int) -> None:
    done = run_cli("verify", GRASSHOPPER, "--target", f"127.0.0.1:{refusing_port}")
    line = one_line_error(done)
    assert line.startswith(f"{GRASSHOPPER} has ") and "on route gh" in line
    assert line.endswith("(pass --gh-target HOST:PORT)")


def test_the_proxy_profile_option_has_help() -> None:
    done = run_cli("proxy", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "--profile {golem,jsonrpc-ndjson,mcp} the protocol on the routes" in text


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    missing = str(tmp_path / "nofile.jsonl")
    done = run_cli("--debug", "replay", missing)
    assert done.returncode == 2
    assert "Traceback" in done.stderr and "FileNotFoundError" in done.stderr
    assert done.stderr.rstrip().endswith(f"golem-proxy: {missing}: no such file")
    after = run_cli("replay", missing, "--debug")
    assert after.returncode == 2 and "Traceback" in after.stderr


def test_a_bug_is_one_line_with_its_own_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object) -> int:
        raise KeyError("flow")

    monkeypatch.setattr(show, "run", broken)
    code, _, err = run_main(capsys, "show", MODELLING)
    assert code == 70
    assert err == (
        "golem-proxy: internal error: KeyError: 'flow' (rerun with --debug for the traceback)\n"
    )


def test_an_error_line_stays_one_inert_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = tmp_path / "x\x1b[31m\nsecond.jsonl"
    code, _, err = run_main(capsys, "replay", str(hostile))
    assert code == 2
    assert err == f"golem-proxy: {tmp_path}/x\\x1b[31m\\nsecond.jsonl: no such file\n"


def test_a_command_error_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "show", README)
    assert (code, out) == (2, "")
    assert err == f"golem-proxy: {README}: {NOT_A_RECORDING}\n"
    assert main(["show", MODELLING, "--limit", "0"]) == 0


def _group_from_nurseries(*errors: BaseException) -> BaseException:
    """What trio raises when tasks in nested nurseries fail with ``errors``."""

    async def fail(error: BaseException) -> None:
        raise error

    async def nested() -> None:
        async with trio.open_nursery() as outer:
            async with trio.open_nursery() as inner:
                for error in errors:
                    inner.start_soon(fail, error)
            outer.start_soon(trio.sleep, 0)

    with pytest.raises(BaseException) as caught:
        trio.run(nested)
    return caught.value


def test_exception_groups_are_unwrapped() -> None:
    inner = ListenError("cannot listen on 127.0.0.1:9876: Address already in use")
    nested = _group_from_nurseries(inner)
    assert nested is not inner
    assert error_line(nested) == str(inner)
    assert error_line(CommandError("what", "why")) == "what (why)"
    with pytest.raises(FilterError) as bad_filter:
        parse_filter("~c NOPE")
    assert error_line(bad_filter.value).startswith("bad filter: unknown error code 'NOPE'")
    assert error_line(FileNotFoundError(2, "No such file or directory", "x.jsonl")) == (
        "x.jsonl: no such file"
    )
    two = _group_from_nurseries(ListenError("one"), ValueError("other"))
    assert error_line(two) is None  # several failures: not one line's worth
    assert error_line(KeyError("bug")) is None


def _dev(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "dev"), *args], capture_output=True, text=True, timeout=30, cwd=cwd
    )


def test_dev_rejects_an_unknown_command_with_its_usage() -> None:
    done = _dev("nosuch")
    assert done.returncode == 2
    assert done.stderr.startswith("dev: unknown command 'nosuch'\n")
    assert "./dev test [ARGS]" in done.stderr
    helped = _dev("help")
    assert helped.returncode == 0 and "./dev run ARGS" in helped.stdout
    assert "set -euo" not in helped.stdout and "#" not in helped.stdout
    assert _dev("bench").returncode == 2


def test_dev_run_reads_and_writes_paths_in_the_callers_directory(tmp_path: Path) -> None:
    """`dev run` used to run in the clone: `--record debug.jsonl` from elsewhere landed there."""
    shutil.copy(ROOT / "recordings" / "modelling-session.jsonl", tmp_path / "s.jsonl")
    done = _dev(
        "run", "export", "s.jsonl", "--format", "jsonl", "--out", "flows.jsonl", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "flows.jsonl").stat().st_size > 0
    assert not (ROOT / "flows.jsonl").exists()


def test_the_headless_plugin_names_its_busy_port(busy_port: int) -> None:
    for flags in (
        ["--port", str(busy_port), "--gh-port", "0"],
        ["--port", "0", "--gh-port", str(busy_port)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "rhino_plugin", "--headless", *flags],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        assert done.returncode == 2
        assert done.stderr == (
            f"rhino_plugin: cannot listen on 127.0.0.1:{busy_port} (address already in use)\n"
        )


def _imported_by_show_help(which: str) -> str:
    """The modules ``golem-proxy show --help`` imported, in a fresh interpreter, that the
    expression ``which`` (over a module name ``m``) keeps, as a sorted list's text."""
    probe = (
        "import sys; from golem_proxy.cli import main; main(['show', '--help']); "
        f"print(sorted(m for m in sys.modules if {which}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False
    )
    return result.stdout.strip().splitlines()[-1]


def test_a_command_run_imports_its_own_module_only() -> None:
    """Each start of the command line imports the command it runs, not every command's."""
    commands = "m.startswith('golem_proxy.commands.') and not m.split('.')[-1].startswith('_')"
    assert _imported_by_show_help(commands) == "['golem_proxy.commands.show']"


def test_reading_a_recording_imports_no_part_of_the_live_proxy() -> None:
    assert _imported_by_show_help("m.startswith(('golem_proxy.live', 'trio'))") == "[]"


def test_the_help_before_a_command_lists_every_command() -> None:
    result = run_cli("--help", "show")
    assert result.returncode == 0
    assert "mcp-verify" in result.stdout and "proxy" in result.stdout


@pytest.mark.parametrize("argv", [["mcp_verify"], ["--", "show"]])
def test_what_names_no_command_still_lists_every_command(argv: list[str]) -> None:
    result = run_cli(*argv)
    assert result.returncode == 2
    assert "mcp-verify" in result.stderr and "proxy" in result.stderr

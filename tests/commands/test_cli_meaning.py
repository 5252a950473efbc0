"""Interfaces that say what they mean, through the real command line as a user types it: one
catalogue resolver for every command, the summary `proxy` ends with, messages that name the
real cause, plurals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from golem_proxy.catalogues import load_catalogue
from golem_proxy.recording.format import read_recording
from golem_proxy.testing.client import GolemClient, RhinoCommandError
from golem_proxy.testing.plugin_process import PluginProcess
from tests.support.cli_helpers import ROOT, reap, run_cli, start_cli, wait_for_line
from tests.support.plugin_fixture import plugin_fixture

SHIPPED = "golem-3dmcp@9819b31"


plugin = plugin_fixture(seed=3)


def _proxy_session(
    plugin: PluginProcess, tmp_path: Path, *extra: str
) -> tuple[subprocess.Popen[str], str, str]:
    """Run `proxy` from a directory outside the checkout, send a session of three exchanges
    (the handshake ping and two calls, one of a method the plugin does not register), stop it
    with Ctrl-C; returns the process, stdout, stderr."""
    process = start_cli("proxy", "--route", f"main@127.0.0.1:0={plugin.main}", *extra, cwd=tmp_path)
    try:
        port = int(wait_for_line(process, r"main\S*: 127\.0\.0\.1:(\d+) →").group(1))
        with GolemClient("127.0.0.1", port) as client:
            client.send_command("scene.get_document_info")
            with pytest.raises(RhinoCommandError):
                client.send_command("manipulation.move_objects", {"object_ids": []})
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        reap(process)
    return process, out, err


def test_proxy_takes_a_shipped_catalogue_by_name_outside_the_checkout(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    """`proxy --catalogue golem-3dmcp@9819b31` (the README's spelling) resolves as `check`
    does; it used to say "no such file"."""
    process, out, err = _proxy_session(plugin, tmp_path, "--catalogue", SHIPPED)
    assert process.returncode == 0, err
    assert "catalogue.unknown-method" in out and "manipulation.move_objects" in out


@pytest.mark.parametrize("command", ["proxy", "check"])
def test_every_command_resolves_catalogue_names_alike(command: str, tmp_path: Path) -> None:
    args = {
        "proxy": ["--route", "main@127.0.0.1:0=127.0.0.1:1"],
        "check": [str(ROOT / "recordings" / "error-session.jsonl")],
    }[command]
    done = run_cli(command, *args, "--catalogue", "golem-3dmcp@0000000")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"golem-proxy: {command} --catalogue: golem-3dmcp@0000000: no such file or shipped "
        f"catalogue (shipped: {SHIPPED})"
    )


def test_proxy_ends_with_a_summary_of_what_it_recorded(
    plugin: PluginProcess, tmp_path: Path
) -> None:
    record = tmp_path / "session.jsonl"
    process, _, err = _proxy_session(
        plugin, tmp_path, "--record", str(record), "--catalogue", SHIPPED
    )
    assert process.returncode == 0, err
    assert err.splitlines()[-1] == (
        f"golem-proxy proxy: recorded 3 exchanges (1 error, 1 violation) to {record}"
    )
    process, _, err = _proxy_session(plugin, tmp_path)
    assert err.splitlines()[-1] == (
        "golem-proxy proxy: 3 exchanges (1 error, 0 violations), not recorded (no --record)"
    )


def test_plugin_subcommand_runs_the_headless_plugin(tmp_path: Path) -> None:
    """`golem-proxy plugin` takes `python -m rhino_plugin --headless`'s options and prints its
    ready line; its errors are golem-proxy's one line."""
    process = start_cli("plugin", "--port", "0", "--gh-port", "0", "--seed", "1", cwd=tmp_path)
    try:
        ready = wait_for_line(
            process, r"headless ready: main=127\.0\.0\.1:(\d+) gh=127\.0\.0\.1:(\d+) seed=1 "
        )
        with GolemClient("127.0.0.1", int(ready.group(1))) as client:
            assert client.send_command("scene.get_document_info")
        with GolemClient("127.0.0.1", int(ready.group(2)), ping_method="gh.ping") as client:
            assert client.send_command("gh.ping") is not None
        process.send_signal(signal.SIGINT)
        assert process.wait(20) == 0
    finally:
        reap(process)
    done = run_cli("plugin", "--host", "10.1.2.3")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "golem-proxy: refusing to listen on 10.1.2.3 (not a loopback address; pass "
        "--listen-public to listen there)"
    )


@pytest.mark.parametrize("observer", ["in-process", "child-process"])
@pytest.mark.parametrize("direction", ["c2s", "s2c"])
def test_a_delay_fault_counts_in_the_latency_the_client_saw(
    plugin: PluginProcess, tmp_path: Path, direction: str, observer: str
) -> None:
    """A 200 ms `delay` on the request is part of the exchange's latency, as on the response
    (docs/faults.md): the request used to be timed when the proxy sent it on (~1 ms logged).
    The same when the observing process is a child: the time handed on is the client's."""
    record = tmp_path / "delayed.jsonl"
    fault = f"delay:ms=200,dir={direction},method=scene.get_document_info"
    process, out, err = _proxy_session(
        plugin, tmp_path, "--record", str(record), "--fault", fault, "--observer", observer
    )
    assert process.returncode == 0, err
    delayed = [
        e for e in read_recording(str(record)).exchanges() if e.method == "scene.get_document_info"
    ]
    assert len(delayed) == 1 and delayed[0].latency >= 0.2, delayed
    logged = re.search(r"scene\.get_document_info +ok +(\S+) (\S+) ", out)
    assert logged is not None and logged.group(2) == "ms" and float(logged.group(1)) >= 200, out


def test_demo_narrates_in_order_with_its_log_and_explains_its_count(tmp_path: Path) -> None:
    """Each `»` line comes after the log lines of what the client did before it (it used to
    print "session done" before half the log), and the closing lines say why the recording
    has more exchanges than the session made tool calls."""
    process = start_cli("demo", "--out", str(tmp_path / "demo.jsonl"), cwd=tmp_path)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    lines = out.splitlines()

    def first(pattern: str) -> int:
        return next(i for i, line in enumerate(lines) if re.search(pattern, line))

    logged = [i for i, line in enumerate(lines) if re.match(r"\d\d:\d\d:\d\d\.\d{3} ", line)]
    done = first(r"^» session done: ")
    assert logged and max(logged) < done
    assert first(r"#1 +closed: ") < first(r"^» the calls that go wrong") < first(r"#2 +connected")
    assert first(r"#3 +closed: ") < first(r"^» a Grasshopper definition") < first(r"#4 +connected")
    said = re.search(r"session done: (\d+) tool calls", lines[done])
    assert said is not None
    explained = re.search(
        r"the (\d+) exchanges: (\d+) tool calls, (\d+) pings \(the client's handshake on each "
        r"connection\), (\d+) malformed frame",
        out,
    )
    assert explained is not None, out
    total, tool_calls, pings, malformed = map(int, explained.groups())
    assert tool_calls == int(said.group(1)) and total == tool_calls + pings + malformed
    assert f"{total} exchanges on 5 connections" in out


def test_ctrl_c_to_the_demo_says_it_was_interrupted(tmp_path: Path) -> None:
    """Ctrl-C reaches the demo and its plugin (one process group): the demo says it was
    interrupted, not what failed after it ("no ping answer", "cannot reach")."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    process = subprocess.Popen(
        [sys.executable, "-m", "golem_proxy", "demo", "--out", "demo.jsonl"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a terminal's Ctrl-C sees it
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("proxy gh: "):  # the session is about to start
                os.killpg(process.pid, signal.SIGINT)
                break
        _, err = process.communicate(timeout=60)
    finally:
        reap(process)
    assert process.returncode == 130, err
    assert err.splitlines()[-1].startswith("golem-proxy: demo interrupted (Ctrl-C)"), err
    assert "ping" not in err and "cannot reach" not in err


def test_record_paths_that_cannot_be_created_say_why(tmp_path: Path) -> None:
    """A directory is not "already exists (pass --overwrite)", a missing directory is not "no
    such file": the message names what is wrong."""
    route = ["--route", "main@127.0.0.1:0=127.0.0.1:1"]
    done = run_cli("proxy", *route, "--record", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"golem-proxy: {tmp_path}: is a directory (--record takes a file name, e.g. "
        f"{tmp_path / 'session.jsonl'})"
    )
    missing = tmp_path / "nonexistent" / "dir"
    done = run_cli("proxy", *route, "--record", str(missing / "x.jsonl"), "--overwrite")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"golem-proxy: {missing / 'x.jsonl'}: the directory {missing} does not exist"
    )
    done = run_cli("demo", "--out", str(missing / "x.jsonl"))
    assert done.returncode == 2 and "plugin" not in done.stdout  # refused before it starts
    assert done.stderr.strip().endswith(f"the directory {missing} does not exist")
    existing = tmp_path / "kept.jsonl"
    existing.write_text("keep")
    done = run_cli("proxy", *route, "--record", str(existing))
    assert done.stderr.strip().endswith("already exists (pass --overwrite to replace it)")
    assert existing.read_text() == "keep"


def test_counts_are_singular_for_one(tmp_path: Path) -> None:
    """`show`, `export` and the rest say "1 flow", "wrote 1 image", not "1 flows"."""
    error_session = str(ROOT / "recordings" / "error-session.jsonl")
    done = run_cli("show", error_session, "--filter", "~m ^scene\\.get_object_info$")
    assert done.returncode == 0 and "\n1 flow matching " in done.stdout, done.stdout
    modelling = str(ROOT / "recordings" / "modelling-session.jsonl")
    done = run_cli("export", modelling, "--format", "images", "--out", str(tmp_path / "png"))
    assert done.returncode == 0 and "wrote 1 image to " in done.stderr, done.stderr
    done = run_cli("check", error_session)
    assert re.search(r"\b1 error, \d+ warnings? in \d+ flows", done.stdout), done.stdout


def test_call_help_names_a_method_the_plugin_has() -> None:
    done = run_cli("call", "--help")
    example = re.search(r"e\.g\.\s+(\S+)\)?", done.stdout)
    assert example is not None, done.stdout
    assert example.group(1) in load_catalogue(SHIPPED).methods

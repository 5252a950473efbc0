"""``golem-proxy samples`` and ``sample:NAME``: the sample recordings reachable by name, from
the package when installed, from recordings/ in a checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from golem_proxy.recording import samples
from tests.support.cli_helpers import ROOT, run_cli, run_main

NAMES = ["error-session", "grasshopper-session", "modelling-session"]


def test_a_checkout_serves_its_recordings_without_the_demo_ones(tmp_path: Path) -> None:
    found = samples.samples()
    assert list(found) == sorted(found)
    assert set(NAMES) <= set(found)
    assert not any(name.startswith("demo-") for name in found)
    assert found["modelling-session"] == ROOT / "recordings" / "modelling-session.jsonl"


def test_an_installed_package_serves_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site-packages" / "golem_proxy"
    (package / "samples").mkdir(parents=True)
    shutil.copy(ROOT / "recordings" / "error-session.jsonl", package / "samples")
    monkeypatch.setattr(samples, "_PACKAGE", package)
    assert samples.samples() == {"error-session": package / "samples" / "error-session.jsonl"}
    monkeypatch.setattr(samples, "_PACKAGE", tmp_path / "nowhere" / "golem_proxy")
    assert samples.samples() == {}


def test_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "samples")
    assert code == 0
    for name in NAMES:
        assert name in out
    assert "sample:NAME" in out


def test_path_and_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "samples", "--path", "modelling-session")
    assert (code, out) == (0, f"{ROOT / 'recordings' / 'modelling-session.jsonl'}\n")
    code, out, _ = run_main(capsys, "samples", "--copy", "error-session.jsonl", str(tmp_path))
    copied = tmp_path / "error-session.jsonl"
    assert (code, out) == (0, f"{copied}\n")
    assert copied.read_bytes() == (ROOT / "recordings" / "error-session.jsonl").read_bytes()
    code, _, err = run_main(capsys, "samples", "--copy", "error-session", str(tmp_path))
    assert code == 2
    assert err == f"golem-proxy: {copied}: already exists (samples never replaces a file)\n"


def test_an_unknown_sample_lists_the_known_ones() -> None:
    done = run_cli("samples", "--path", "nope")
    assert done.returncode == 2
    assert done.stderr == (
        f"golem-proxy: no sample recording named 'nope' (samples: {', '.join(samples.samples())})\n"
    )


def test_commands_take_a_sample_by_name() -> None:
    done = run_cli("show", "sample:error-session", "--filter", "~c APPLICATION_ERROR")
    assert done.returncode == 0, done.stderr
    assert "scene.get_object_info" in done.stdout
    stats = run_cli("diff", "sample:modelling-session", "sample:modelling-session")
    assert stats.returncode == 0, stats.stderr
    missing = run_cli("stats", "sample:nope")
    assert missing.returncode == 2
    assert missing.stderr.startswith("golem-proxy: stats FILE: no sample recording named 'nope'")


def test_verify_does_not_update_a_shipped_sample() -> None:
    done = run_cli("verify", "sample:modelling-session", "--target", "127.0.0.1:1", "--update")
    assert done.returncode == 2
    assert "is a sample shipped with golem-proxy" in done.stderr
    assert "samples --copy NAME DIR" in done.stderr

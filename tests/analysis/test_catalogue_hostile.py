"""``golem-proxy catalogue build`` on hostile trees, run as a user runs it: every file it walks
is untrusted. A file that cannot be read or parsed costs that file only (one note on stderr,
listed under ``unparsed``); nothing blocks, nothing is read without bound."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import run_cli

from .test_catalogue_build import write_files


def _build(root: Path, out: Path) -> tuple[int, list[str], dict[str, Any]]:
    done = run_cli("catalogue", "build", str(root), "--out", str(out))
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    built = json.loads(out.read_text()) if done.returncode == 0 else {}
    return done.returncode, notes, built


def _intact(built: dict[str, Any]) -> None:
    assert "shapes.box" in built["plugin_methods"]
    assert "layers.create" in built["client_methods"]


def test_a_fifo_named_like_a_module_is_skipped_without_blocking(
    checkout: Path, tmp_path: Path
) -> None:
    os.mkfifo(checkout / "plug" / "pipe.py")
    code, notes, built = _build(checkout, tmp_path / "out.json")
    assert code == 0
    assert notes == [f"note: {checkout}/plug/pipe.py skipped (a FIFO, not a regular file)"]
    assert built["built_from"]["unparsed"] == ["plug/pipe.py"]
    _intact(built)


def test_unparseable_oversized_and_device_files_cost_only_themselves(
    checkout: Path, tmp_path: Path
) -> None:
    plug = checkout / "plug"
    (plug / "minus.py").write_text("x = " + "-" * 100_000 + "1\n")  # MemoryError in the parser
    with (plug / "huge.py").open("wb") as huge:  # sparse: 9 MiB on no disk
        huge.truncate(9 * 1024 * 1024)
    (plug / "zero.py").symlink_to("/dev/zero")
    (plug / "nul.py").write_bytes(b"x = 1\0\n")
    code, notes, built = _build(checkout, tmp_path / "out.json")
    assert code == 0
    assert notes == [
        f"note: {plug}/huge.py skipped (larger than 8.0 MiB)",
        f"note: {plug}/minus.py skipped (too deeply nested or too complex to parse)",
        f"note: {plug}/nul.py skipped (not valid Python: source code string cannot contain "
        "null bytes)",
        f"note: {plug}/zero.py skipped (a character device, not a regular file)",
    ]
    unparsed = ["plug/huge.py", "plug/minus.py", "plug/nul.py", "plug/zero.py"]
    assert built["built_from"]["unparsed"] == unparsed
    _intact(built)


def test_dangling_links_and_link_loops_are_skipped_and_the_build_goes_on(
    checkout: Path, tmp_path: Path
) -> None:
    plug = checkout / "plug"
    (plug / "dangling.py").symlink_to("nowhere.py")
    (plug / "a.py").symlink_to("b.py")
    (plug / "b.py").symlink_to("a.py")
    (plug / "up").symlink_to(checkout)  # a directory link (here a cycle) is not walked
    code, notes, built = _build(checkout, tmp_path / "out.json")
    assert code == 0
    assert notes == [
        f"note: {plug}/up skipped (a symbolic link to a directory)",
        f"note: {plug}/a.py skipped (a symbolic link loop)",
        f"note: {plug}/b.py skipped (a symbolic link loop)",
        f"note: {plug}/dangling.py skipped (a dangling symbolic link)",
    ]
    assert built["built_from"]["unparsed"] == ["plug/a.py", "plug/b.py", "plug/dangling.py"]
    _intact(built)


def test_a_tree_without_handlers_or_tools_is_an_error(tmp_path: Path) -> None:
    root = tmp_path / "other"
    write_files(root, {"lib/__init__.py": "", "lib/maths.py": "def add(a, b):\n    return a + b\n"})
    done = run_cli("catalogue", "build", str(root))
    assert done.returncode == 2
    assert done.stderr == (f"golem-proxy: found no plugin handlers and no MCP tools under {root}\n")
    assert done.stdout == ""


def test_a_tree_nested_deeper_than_the_recursion_limit_is_walked(
    checkout: Path, tmp_path: Path
) -> None:
    # os.walk recursed: 1,100 nested directories were an internal error (exit 70).
    deep = checkout / "deep"
    deep.mkdir()
    levels = [os.open(deep, os.O_RDONLY)]
    try:
        for _ in range(1100):  # relative to a descriptor: no path grows past PATH_MAX here
            os.mkdir("d", dir_fd=levels[-1])
            levels.append(os.open("d", os.O_RDONLY, dir_fd=levels[-1]))
        os.close(os.open("leaf.py", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=levels[-1]))
        code, notes, built = _build(checkout, tmp_path / "out.json")
    finally:
        # Removed here, bottom up: pytest's own clean-up (shutil.rmtree) recurses too.
        os.unlink("leaf.py", dir_fd=levels[-1])
        while levels:
            os.close(levels.pop())
            if levels:
                os.rmdir("d", dir_fd=levels[-1])
    assert code == 0 and notes == []
    _intact(built)


@pytest.mark.parametrize("head", ["fifo", "ref: refs/../../../secret", "ref: refs/heads/main"])
def test_a_hostile_git_directory_leaves_the_commit_unknown(
    checkout: Path, tmp_path: Path, head: str
) -> None:
    # A FIFO for HEAD hung the build; a ref pointing out of .git, or a ref file holding
    # something else than a commit id, must not put that text in the catalogue.
    git = checkout / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (tmp_path / "secret").write_text("ab" * 20 + "\n")
    (git / "refs" / "heads" / "main").write_text("not a commit id\n")
    if head == "fifo":
        os.mkfifo(git / "HEAD")
    else:
        (git / "HEAD").write_text(head + "\n")
    code, notes, built = _build(checkout, tmp_path / "out.json")
    assert code == 0 and notes == []
    assert built["built_from"]["commit"] is None
    _intact(built)

"""``golem-proxy samples``: the sample recordings shipped with the package.

The wheel carries the repository's ``recordings/*.jsonl`` samples as ``golem_proxy/samples/``
(pyproject.toml's hatch ``force-include``), so they are there outside a checkout too; in a
checkout they are read from ``recordings/``. Wherever a command expects a trace, ``sample:NAME``
names one (`trace_path_arg` in ``_common``).
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Optional

from rich.table import Table

from ._common import EXIT_OK, CommandError, console

NAME = "samples"
HELP = "list the sample recordings shipped with golem-proxy, print one's path or copy it out"
ORDER = 70

SAMPLE_PREFIX = "sample:"
_PACKAGE = Path(__file__).resolve().parent.parent


def samples_dir() -> Optional[Path]:
    """Where the samples are: inside the installed package, else the checkout's recordings/."""
    for candidate in (_PACKAGE / "samples", _PACKAGE.parent / "recordings"):
        if candidate.is_dir():
            return candidate
    return None


def samples() -> dict[str, Path]:
    """Sample name (the file name without ``.jsonl``) → path, sorted by name. A checkout's
    ``demo-*`` recordings are the user's own, not samples."""
    directory = samples_dir()
    if directory is None:
        return {}
    found = {
        path.name[: -len(".jsonl")]: path
        for path in directory.glob("*.jsonl")
        if path.is_file() and not path.name.startswith("demo-")
    }
    return dict(sorted(found.items()))


def sample_path(name: str) -> Path:
    """The path of sample ``name`` (``modelling-session``; ``.jsonl`` optional). Raises
    CommandError listing the samples there are."""
    if name.endswith(".jsonl"):
        name = name[: -len(".jsonl")]
    known = samples()
    if name not in known:
        names = ", ".join(known) or "none are installed"
        raise CommandError(f"no sample recording named {name!r}", f"samples: {names}")
    return known[name]


def is_sample(path: str) -> bool:
    """True when ``path`` is one of the shipped samples (which commands must not modify)."""
    real = os.path.realpath(path)
    return any(os.path.realpath(sample) == real for sample in samples().values())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--path", metavar="NAME", help="print the path of sample NAME")
    action.add_argument(
        "--copy",
        nargs=2,
        metavar=("NAME", "DIR"),
        help="copy sample NAME into directory DIR (as NAME.jsonl; never replaces a file)",
    )


def run(args: argparse.Namespace) -> int:
    if args.path:
        print(sample_path(args.path))
        return EXIT_OK
    if args.copy:
        name, directory = args.copy
        print(copy_sample(name, directory))
        return EXIT_OK
    known = samples()
    if not known:
        raise CommandError("no sample recordings found", "this installation has none")
    table = Table(title="sample recordings", title_justify="left")
    table.add_column("name")
    table.add_column("exchanges", justify="right")
    table.add_column("path", overflow="fold")
    for name, path in known.items():
        table.add_row(name, str(_exchanges(path)), str(path))
    table.caption = "sample:NAME names one wherever a trace is expected; --copy NAME DIR copies it"
    table.caption_justify = "left"
    console().print(table)
    return EXIT_OK


def copy_sample(name: str, directory: str) -> str:
    """Copy sample ``name`` into ``directory`` as ``NAME.jsonl``; return the new path. Raises
    CommandError when the directory is missing or the file exists already."""
    source = sample_path(name)
    if not os.path.isdir(directory):
        raise CommandError(f"{directory}: not a directory", "give an existing directory")
    target = os.path.join(directory, source.name)
    try:
        with open(source, "rb") as reading, open(target, "xb") as writing:
            shutil.copyfileobj(reading, writing)
    except FileExistsError:
        raise CommandError(f"{target}: already exists", "samples never replaces a file") from None
    return target


def _exchanges(path: Path) -> int:
    """How many exchanges the recording holds (its exchange lines, counted without parsing)."""
    with open(path, "rb") as stream:
        return sum(1 for line in stream if b'"kind":"exchange"' in line[:200])

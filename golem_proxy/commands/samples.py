"""``golem-proxy samples``: list the sample recordings shipped with the package (see
`golem_proxy.recording.samples`), print one's path or copy it out."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from rich.text import Text

from ..recording.samples import SampleNotFound, samples
from ..recording.samples import sample_path as find_sample
from ..table_layout import Column, print_table
from ._common import EXIT_OK, CommandError, console

NAME = "samples"
HELP = "list the sample recordings shipped with golem-proxy, print one's path or copy it out"
ORDER = 70


def add_arguments(parser: argparse.ArgumentParser) -> None:
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--path", metavar="NAME", help="print the path of sample NAME")
    action.add_argument(
        "--copy",
        nargs=2,
        metavar=("NAME", "DIR"),
        help="copy sample NAME into directory DIR (as NAME.jsonl; never replaces a file)",
    )


def sample_path(name: str) -> Path:
    """`find_sample`, its error in the command line's style."""
    try:
        return find_sample(name)
    except SampleNotFound as exc:
        raise CommandError(str(exc)) from None


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
    out = console()
    columns = (
        Column("name", wrap=True, priority=1),
        Column("exchanges", right=True, short="n"),
        Column("path", wrap=True, priority=0, floor=16),
    )
    rows = [[name, str(_exchanges(path)), str(path)] for name, path in known.items()]
    print_table(out, columns, rows, Text("sample recordings", style="italic"))
    note = "sample:NAME names one wherever a trace is expected; --copy NAME DIR copies it"
    out.print(Text(note, style="dim"), soft_wrap=True)
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

"""The comparison options that ``diff``, ``verify`` and ``mcp-verify`` share, and the
`Comparator` they describe."""

from __future__ import annotations

import argparse

from ..replay.diffing import Comparator
from ..replay.matching import IgnoreRules
from ._common import CommandError, number_arg


def add_comparison_arguments(
    parser: argparse.ArgumentParser, *, ignore_metavar: str, ignore_help: str
) -> None:
    """Add ``--ignore`` (repeatable) and ``--float-tolerance`` to `parser`; each command words
    ``--ignore`` for what it compares."""
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar=ignore_metavar,
        help=ignore_help,
    )
    parser.add_argument(
        "--float-tolerance",
        type=number_arg,
        default=0.0,
        metavar="X",
        help="numbers within X of each other are equal",
    )


def comparator_from(args: argparse.Namespace) -> Comparator:
    """The `Comparator` that ``--ignore`` and ``--float-tolerance`` describe.

    Raises `CommandError` for an ``--ignore`` rule that does not parse."""
    try:
        return Comparator(IgnoreRules.parse(args.ignore), float_tolerance=args.float_tolerance)
    except ValueError as exc:
        raise CommandError(f"bad --ignore: {exc}") from None

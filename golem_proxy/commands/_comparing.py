"""The comparison options that ``diff``, ``verify`` and ``mcp-verify`` share, and the
`Comparator` they describe."""

from __future__ import annotations

import argparse

from ..replay.diffing import Comparator
from ..replay.matching import WILDCARD, IgnoreRules
from ._common import CommandError, tolerance_arg


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
        type=tolerance_arg,
        default=0.0,
        metavar="X",
        help="numbers within X of each other are equal",
    )


ROOTS = ("params", "result", "error", "id")
"""Where an ``--ignore`` path starts: a member of the envelope (or ``*``, any of them)."""


def comparator_from(args: argparse.Namespace) -> Comparator:
    """The `Comparator` that ``--ignore`` and ``--float-tolerance`` describe.

    Raises `CommandError` for an ``--ignore`` rule that does not parse or cannot match (its
    path starts at no member of the envelope: it would leave nothing out, silently)."""
    try:
        rules = IgnoreRules.parse(args.ignore)
    except ValueError as exc:
        raise CommandError(f"bad --ignore: {exc}") from None
    for rule in rules.rules:
        root = rule.path[0]
        if root != WILDCARD and root not in ROOTS:
            raise CommandError(
                f"bad --ignore: {str(rule)!r} starts at {root!r}, no member of an answer",
                "a path starts at params., result., error. or id (METHOD:result.x for one method)",
            )
    return Comparator(rules, float_tolerance=args.float_tolerance)

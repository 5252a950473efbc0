"""``golem-proxy plugin``: the headless GOLEM-3DMCP plugin, so that the whole stack runs
without Rhino. The options, their checks and the ready line are ``python -m rhino_plugin
--headless``'s own (`rhino_plugin.__main__`), shared rather than copied."""

from __future__ import annotations

import argparse

from rhino_plugin import __main__ as headless

NAME = "plugin"
HELP = "run the headless plugin (GOLEM-3DMCP over an in-memory document; no Rhino needed)"
ORDER = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    headless.add_arguments(parser, require_headless=False)


def run(args: argparse.Namespace) -> int:
    return headless.run(args, prog="golem-proxy")

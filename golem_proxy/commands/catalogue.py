"""``golem-proxy catalogue build PATH…``: a method catalogue from the GOLEM-3DMCP sources
(plugin handlers and MCP server tools), read with `ast`, never imported."""

from __future__ import annotations

import argparse
import json
import os
import sys

from rich.text import Text

from ..analysis.catalogue_build import build_catalogue
from ..terminal import safe_text
from ._common import EXIT_OK, console, fail

NAME = "catalogue"
HELP = "build a method catalogue from plugin and MCP server sources"
ORDER = 34


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = sub.add_parser(
        "build",
        help="read a checkout and write the catalogue JSON",
        description="Find the plugin's handlers and the MCP server's tools by their code "
        "shape and write what each method reads, requires and is sent.",
    )
    build.add_argument("paths", nargs="+", metavar="PATH", help="a checkout (or part of one)")
    build.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    build.add_argument(
        "--commit",
        metavar="SHA",
        help="the commit the files come from, for an exported tree without .git",
    )
    build.add_argument("--source", metavar="TEXT", help="a one-line description of the source")


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        return fail(f"{missing[0]}: no such file or directory")
    notes = console(stderr=True)

    def note(line: str) -> None:
        notes.print(Text(f"note: {safe_text(line)}", style="yellow"), soft_wrap=True)

    catalogue = build_catalogue(args.paths, args.commit, args.source or "", note)
    if not (catalogue["plugin_methods"] or catalogue["builtins"] or catalogue["client_methods"]):
        # An empty catalogue would pass for "this plugin has no methods": say what happened.
        where = ", ".join(args.paths)
        return fail(f"found no plugin handlers and no MCP tools under {where}")
    text = json.dumps(catalogue, ensure_ascii=False, indent=1) + "\n"
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        return fail(f"{args.out}: {exc.strerror or exc}")
    plugin, client = catalogue["plugin_methods"], catalogue["client_methods"]
    missing_methods = catalogue["client_methods_missing_in_plugin"]
    summary = (
        f"{args.out}: {len(plugin)} plugin methods, {len(client)} client methods "
        f"({len(missing_methods)} not registered by the plugin), "
        f"commit {catalogue['built_from']['commit'] or 'unknown (file digests only)'}"
    )
    console(stderr=True).print(Text(summary))
    return EXIT_OK

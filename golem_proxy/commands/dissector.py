"""``golem-proxy dissector --out FILE``: a Wireshark dissector in Lua, generated from the
protocol profile (docs/interop.md)."""

from __future__ import annotations

import argparse
import sys

from rich.text import Text

from golem_core.profiles import PROFILES

from ..interop.dissector import (
    DissectorError,
    default_ports,
    generate_dissector,
    protocol_name,
)
from ..recording.format import write_private
from ..terminal import safe_text
from ._common import EXIT_OK, add_overwrite, check_output, console, fail, os_reason
from ._options import add_profile

NAME = "dissector"
HELP = "write a Wireshark dissector (Lua) for the protocol, generated from its profile"
ORDER = 34


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a TCP port (1-65535)")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", "-o", metavar="FILE", required=True, help="the Lua file to write ('-': stdout)"
    )
    add_overwrite(parser, "Lua file")
    add_profile(parser, "the protocol (default: golem)")
    parser.add_argument(
        "--port",
        type=_port,
        action="append",
        default=[],
        metavar="PORT",
        help="also decode this TCP port (repeatable; the profile's default ports always are)",
    )


def run(args: argparse.Namespace) -> int:
    profile = PROFILES[args.profile]
    try:
        source = generate_dissector(profile, args.port)
    except DissectorError as exc:
        return fail(str(exc))
    if args.out == "-":
        sys.stdout.write(source)
        return EXIT_OK
    check_output(args.out, overwrite=args.overwrite)
    try:
        write_private(args.out, source.encode("utf-8"), overwrite=args.overwrite)
    except OSError as exc:
        return fail(f"cannot write {args.out} ({os_reason(exc)})")
    ports = ", ".join(str(port) for port in default_ports(profile) + args.port)
    # The fields' prefix, when it is not the profile's name (Wireshark has an ``mcp``).
    proto = protocol_name(profile)
    named = profile.name if proto == profile.name else f"{profile.name} as {proto}.*"
    console(stderr=True).print(Text(f"wrote {safe_text(args.out)}: {named} on TCP ports {ports}"))
    return EXIT_OK

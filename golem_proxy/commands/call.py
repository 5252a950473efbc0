"""``golem-proxy call METHOD [PARAMS_JSON]``: send one request to a plugin and print its answer.

A one-shot client ("curl for GOLEM"). The request is encoded, and the answer decoded, with the
profile's own codec (`golem_core`), so what goes on the wire is what the protocol's reference
client would send. Exit codes: 0 for a success answer, 1 for a failed one (an error or
malformed answer, or a success envelope whose result reports a failure), 2 when the call
could not be made (bad arguments, no connection, no answer in time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import partial
from typing import Any, Optional

import trio
from rich.text import Text

from golem_core.messages import Response, Role
from golem_core.outcome import Outcome
from golem_core.profiles import PROFILES, Profile
from golem_core.profiles.base import json_type_name

from ..net.addresses import Address, parse_address
from ..net.request_client import RequestFailed, request_answer
from ..terminal import safe_text
from ._answers import print_answer
from ._common import EXIT_FINDINGS, CommandError, address_arg, console, seconds_arg

NAME = "call"
HELP = "send one request to a plugin (or any server of the profile) and print the answer"
ORDER = 45


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("method", metavar="METHOD", help="the method to call, e.g. scene.info")
    parser.add_argument(
        "params",
        metavar="PARAMS_JSON",
        nargs="?",
        help="the params as JSON (an object, or an array where the profile allows it); "
        "- reads them from stdin (default: {})",
    )
    parser.add_argument(
        "--target",
        type=address_arg,
        metavar="HOST:PORT",
        help="the server: HOST:PORT or unix:PATH (default: the profile's main upstream, "
        "golem 127.0.0.1:9876)",
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="golem",
        help="the protocol: golem (length-prefixed, the default) or jsonrpc-ndjson",
    )
    parser.add_argument(
        "--id",
        dest="request_id",
        metavar="ID",
        help="the request id (an integer is sent as a number; default: a fresh id minted as "
        "the profile's reference client does)",
    )
    parser.add_argument(
        "--raw", action="store_true", help="write the exact bytes of the response frame"
    )
    parser.add_argument(
        "--timeout",
        type=seconds_arg,
        default=30.0,
        help="seconds to wait for the connection and the answer (default 30)",
    )


def run(args: argparse.Namespace) -> int:
    profile = PROFILES[args.profile]
    params = parse_params(args.params, sys.stdin)
    request_id = parse_id(args.request_id) if args.request_id is not None else None
    if request_id is None:
        request_id = next(profile.request_ids())
    target: Address = args.target or default_target(profile)
    payload = profile.encode_payload(profile.request(request_id, args.method, params))
    wanted = profile.correlation_key(profile.parse(payload, Role.REQUEST))
    ask = partial(request_answer, timeout=args.timeout)
    try:
        answer = trio.run(ask, target, profile.frame_payload(payload), profile, wanted)
    except RequestFailed as exc:
        raise CommandError(exc.what, exc.why) from None
    if args.raw:
        sys.stdout.buffer.write(answer.frame.raw)
        sys.stdout.buffer.flush()
    else:
        print_answer(answer.message, profile, console())
    message = answer.message
    outcome = profile.outcome(profile.parse(payload, Role.REQUEST), message)
    if isinstance(message, Response) and outcome.failed:
        # The answer is a success envelope reporting a failure: say so, the JSON alone is
        # easy to misread as a success.
        note = f"the answer reports a failure in its result: {safe_text(outcome.text, 120)}"
        console(stderr=True).print(Text(f"golem-proxy: {note}", style="red"), soft_wrap=True)
    return exit_code(outcome)


def exit_code(outcome: Outcome) -> int:
    """0 for an answer whose outcome is ok; 1 (`EXIT_FINDINGS`) for any failure: an error
    envelope, an error or ``success: false`` in the result, a malformed answer."""
    return EXIT_FINDINGS if outcome.failed else 0


def parse_params(text: Optional[str], stdin: Any) -> Any:
    """The params value from the argument, or from ``stdin`` for ``-``. Raises CommandError
    when it is not JSON or not a structured value."""
    source = "PARAMS_JSON"
    if text is None:
        return {}
    if text == "-":
        source = "params on stdin"
        text = stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"{source} is not JSON", str(exc)) from None
    if not isinstance(value, (dict, list)):
        raise CommandError(f"{source} must be an object or an array, not {json_type_name(value)}")
    return value


def parse_id(text: str) -> Any:
    """``--id 7`` is the number 7, anything else a string (``²`` and a number too long for
    ``int`` included)."""
    stripped = text.strip()
    digits = stripped[1:] if stripped.startswith("-") else stripped
    if digits.isascii() and digits.isdigit():
        try:
            return int(stripped)
        except ValueError:  # more digits than int() accepts: an id all the same
            return text
    return text


def default_target(profile: Profile) -> Address:
    routes = profile.default_routes(os.environ)
    if not routes:
        raise CommandError(f"--profile {profile.name} has no default server", "give --target")
    return parse_address(routes[0].upstream)

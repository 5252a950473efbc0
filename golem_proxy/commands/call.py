"""``golem-proxy call METHOD [PARAMS_JSON]``: send one request to a plugin and print its answer.

A one-shot client ("curl for GOLEM"). The request is encoded, and the answer decoded, with the
profile's own codec (`golem_core`), so what goes on the wire is what the protocol's reference
client would send. Exit codes: 0 for a success answer, 1 for a failed one (an error or
malformed answer, or a success envelope whose result reports a failure), 2 when the call
could not be made (bad arguments, no connection, no answer in time, an answer with another id).
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

from golem_core.messages import Malformed, Response, Role
from golem_core.outcome import Outcome
from golem_core.profiles import PROFILES, Profile
from golem_core.profiles.members import json_type_name

from ..events import Direction
from ..net.addresses import Address, parse_address
from ..net.request_client import (
    Answer,
    NoAnswerInTime,
    RequestFailed,
    Unreachable,
    request_answer,
    strays_text,
)
from ..terminal import safe_text
from ._answers import print_answer
from ._common import EXIT_FINDINGS, CommandError, console
from ._options import add_address, add_profile, add_timeout

NAME = "call"
HELP = "send one request to a plugin (or any server of the profile) and print the answer"
ORDER = 45

PROBE_AFTER = 2.0
"""Seconds of silence on a Unix socket after which `call` asks whether the server speaks
another profile. A TCP target is never asked for silence alone: a GOLEM plugin is silent for
ordinary reasons (one client per channel, a request held by ``--intercept``, a slow handler),
and another profile's bytes on that link are a bad frame to it, and to a proxy between."""
PROBE_TIMEOUT = 1.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "method", metavar="METHOD", help="the method to call, e.g. scene.get_document_info"
    )
    parser.add_argument(
        "params",
        metavar="PARAMS_JSON",
        nargs="?",
        help="the params as JSON (an object, or an array where the profile allows it); "
        "- reads them from stdin (default: {})",
    )
    add_address(
        parser,
        "--target",
        "the server: HOST:PORT or unix:PATH (default: the profile's main upstream, "
        "golem 127.0.0.1:9876)",
    )
    add_profile(parser, "the protocol: golem (length-prefixed, the default) or jsonrpc-ndjson")
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
    add_timeout(parser, "seconds to wait for the connection and the answer (default 30)")


def run(args: argparse.Namespace) -> int:
    profile = PROFILES[args.profile]
    params = parse_params(args.params, sys.stdin)
    request_id = parse_id(args.request_id) if args.request_id is not None else None
    if request_id is None:
        request_id = next(profile.request_ids())
    target: Address = args.target or default_target(profile)
    payload = profile.encode_payload(profile.request(request_id, args.method, params))
    wanted = profile.correlation_key(profile.parse(payload, Role.REQUEST))
    frame = profile.frame_payload(payload)
    answer = trio.run(partial(_ask, target, frame, profile, wanted, args.timeout))
    if args.raw:
        sys.stdout.buffer.write(answer.frame.raw)
        sys.stdout.buffer.flush()
    else:
        print_answer(answer.message, profile, console())
    if answer.stray_count:
        # Read past, as the protocol's client does; a server that sends them is worth knowing.
        note = f"before the answer, {target} sent {strays_text(answer.strays, answer.stray_count)}"
        console(stderr=True).print(Text(f"golem-proxy: {safe_text(note)}", style="yellow"))
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


async def _ask(
    target: Address, frame: bytes, profile: Profile, wanted: Any, timeout: float
) -> Answer:
    """The answer to ``frame``. When the server closes without a byte, or a Unix socket has
    sent nothing for `PROBE_AFTER` seconds (a server of the other profile waits for a frame it
    never gets), ask once whether it speaks another profile: CommandError names that profile."""
    heard = trio.Event()

    def observe(direction: Direction, chunk: bytes, now: float) -> None:
        if direction is Direction.S2C and chunk:
            heard.set()

    answer: Optional[Answer] = None
    failure: Optional[RequestFailed] = None
    suspicion: Optional[CommandError] = None
    async with trio.open_nursery() as nursery:

        async def suspect() -> None:
            nonlocal suspicion
            with trio.move_on_after(PROBE_AFTER):
                await heard.wait()
                return
            try:
                await _suspect_other_profile(target, profile)
            except CommandError as exc:
                suspicion = exc
                nursery.cancel_scope.cancel()

        if target.is_unix:
            nursery.start_soon(suspect)
        try:
            answer = await request_answer(
                target, frame, profile, wanted, timeout=timeout, observe=observe
            )
        except RequestFailed as exc:
            failure = exc
        nursery.cancel_scope.cancel()
    if suspicion is not None:
        raise suspicion
    if failure is not None:
        if not heard.is_set() and not isinstance(failure, (Unreachable, NoAnswerInTime)):
            await _suspect_other_profile(target, profile)  # closed without a byte
        raise CommandError(failure.what, failure.why) from None
    assert answer is not None
    return answer


async def _suspect_other_profile(target: Address, profile: Profile) -> None:
    """Raise CommandError naming the profile the server at ``target`` does answer (a ``ping``
    of that profile on a connection of its own; a JSON-RPC server answers it with "method not
    found", an answer all the same), when one does; return when none does."""
    for other in PROFILES.values():
        if other.name == profile.name:
            continue
        payload = other.encode_payload(other.request(next(other.request_ids()), "ping", {}))
        wanted = other.correlation_key(other.parse(payload, Role.REQUEST))
        try:
            answer = await request_answer(
                target, other.frame_payload(payload), other, wanted, timeout=PROBE_TIMEOUT
            )
        except RequestFailed:
            continue
        if not isinstance(answer.message, Malformed):
            raise CommandError(
                f"{target} does not answer {profile.name} requests; it answers {other.name}",
                f"pass --profile {other.name}",
            )

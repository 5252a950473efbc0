"""``golem-proxy call METHOD [PARAMS_JSON]``: send one request to a plugin and print its answer.

A one-shot client ("curl for GOLEM"). The request is encoded, and the answer decoded, with the
profile's own codec (`golem_core`), so what goes on the wire is what the protocol's reference
client would send. Exit codes: 0 for a success answer, 1 for an error (or malformed) answer,
2 when the call could not be made (bad arguments, no connection, no answer in time).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any, Optional

from rich.highlighter import JSONHighlighter
from rich.text import Text

from golem_core.framing import EndOfStream, Frame, FrameError
from golem_core.messages import ABSENT, ErrorResponse, Malformed, Message, Response, Role
from golem_core.profiles import PROFILES, Profile
from golem_core.profiles.base import json_type_name

from ..net.addresses import Address, parse_address
from ..terminal import safe_text
from ._common import EXIT_FINDINGS, CommandError, address_arg, console, os_reason, seconds_arg

NAME = "call"
HELP = "send one request to a plugin (or any server of the profile) and print the answer"
ORDER = 45

RECV_SIZE = 65536
PROBE_AFTER = 2.0
"""Seconds of silence after which `call` asks whether the server speaks another profile."""
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
    answer = exchange(
        target,
        profile.frame_payload(payload),
        profile,
        wanted,
        args.timeout,
        on_silence=lambda: _suspect_other_profile(target, profile),
    )
    message = profile.parse(answer.payload, Role.RESPONSE)
    if args.raw:
        sys.stdout.buffer.write(answer.raw)
        sys.stdout.buffer.flush()
    else:
        print_answer(message, profile)
    return 0 if isinstance(message, Response) else EXIT_FINDINGS


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
    """``--id 7`` is the number 7, anything else a string."""
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    return text


def default_target(profile: Profile) -> Address:
    routes = profile.default_routes(os.environ)
    if not routes:
        raise CommandError(f"--profile {profile.name} has no default server", "give --target")
    return parse_address(routes[0].upstream)


def _connect(target: Address, timeout: float) -> socket.socket:
    if target.is_unix:
        assert target.path is not None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(target.path)
        except BaseException:
            sock.close()
            raise
        return sock
    return socket.create_connection((target.host, target.port), timeout=timeout)


def exchange(
    target: Address,
    frame: bytes,
    profile: Profile,
    wanted: Any,
    timeout: float,
    on_silence: Optional[Callable[[], None]] = None,
) -> Frame:
    """Send ``frame`` to ``target`` and return the frame whose id has the correlation key
    ``wanted`` (or the server's answer to a request it could not read, which carries no id).
    Frames that answer something else (notifications) are skipped. ``on_silence`` is called
    when the server has sent nothing for `PROBE_AFTER` seconds, or closed without a byte; it
    may raise to end the wait. Raises CommandError when the server cannot be reached, closes
    first, sends bytes that are no frame, or stays silent for ``timeout``."""
    deadline = time.monotonic() + timeout
    try:
        sock = _connect(target, timeout)
    except socket.timeout:
        raise CommandError(
            f"cannot reach {target}", f"no connection within {timeout:g} s"
        ) from None
    except OSError as exc:
        raise CommandError(f"cannot reach {target}", os_reason(exc)) from None
    decoder = profile.new_decoder(skip_oversized=False)
    probe_at = time.monotonic() + PROBE_AFTER if on_silence is not None else None
    with sock:
        try:
            sock.sendall(frame)
            while True:
                for event in decoder.events():
                    if isinstance(event, Frame):
                        message = profile.parse(event.payload, Role.RESPONSE)
                        key = profile.correlation_key(message)
                        if key == wanted or (key is None and not _is_notification(message)):
                            return event
                    elif isinstance(event, FrameError):
                        raise CommandError(f"{target} sent a bad frame", event.detail)
                    elif isinstance(event, EndOfStream):
                        if probe_at is not None and on_silence is not None:
                            on_silence()
                        raise CommandError(f"{target} closed the connection without answering")
                now = time.monotonic()
                remaining = deadline - now
                if remaining <= 0:
                    raise socket.timeout
                wait = remaining if probe_at is None else min(remaining, probe_at - now)
                sock.settimeout(max(wait, 0.001))
                try:
                    chunk = sock.recv(RECV_SIZE)
                except socket.timeout:
                    if probe_at is None or on_silence is None or time.monotonic() >= deadline:
                        raise
                    probe_at = None  # once: a slow server of the right profile then gets its time
                    on_silence()
                    continue
                if chunk:
                    probe_at = None  # it speaks: no need to ask what
                    decoder.receive_data(chunk)
                else:
                    decoder.receive_eof()
        except socket.timeout:
            raise CommandError(f"{target} did not answer", f"waited {timeout:g} s") from None
        except OSError as exc:
            raise CommandError(f"connection to {target} failed", os_reason(exc)) from None


def _suspect_other_profile(target: Address, profile: Profile) -> None:
    """Raise CommandError naming the profile the server at ``target`` does answer (a ``ping``
    of that profile on a connection of its own; a JSON-RPC server answers it with "method not
    found", an answer all the same), when one does; return when none does."""
    for other in PROFILES.values():
        if other.name == profile.name:
            continue
        payload = other.encode_payload(other.request(next(other.request_ids()), "ping", {}))
        wanted = other.correlation_key(other.parse(payload, Role.REQUEST))
        try:
            frame = exchange(target, other.frame_payload(payload), other, wanted, PROBE_TIMEOUT)
        except CommandError:
            continue
        if not isinstance(other.parse(frame.payload, Role.RESPONSE), Malformed):
            raise CommandError(
                f"{target} does not answer {profile.name} requests; it answers {other.name}",
                f"pass --profile {other.name}",
            )


def _is_notification(message: Message) -> bool:
    return isinstance(message.obj, dict) and "method" in message.obj


def print_answer(message: Message, profile: Profile) -> None:
    """A success's result as highlighted JSON; an error with its code's registry name."""
    out = console()
    if isinstance(message, Response):
        out.print(_json_text(message.result), soft_wrap=True)
        return
    if isinstance(message, ErrorResponse):
        error = message.error
        name = profile.registry.name_of(error.code)
        code = safe_text(str(error.code), 80)
        label = code if name == str(error.code) else f"{safe_text(name, 80)} ({code})"
        line = Text("error ", style="bold red")
        line.append(label, style="bold red")
        line.append(f": {safe_text(str(error.message))}")
        out.print(line, soft_wrap=True)
        for member, value in (("details", error.details), ("data", error.data)):
            if value is not ABSENT:
                out.print(Text(f"{member}:", style="dim"))
                out.print(_json_text(value), soft_wrap=True)
        return
    assert isinstance(message, Malformed)
    line = Text("malformed answer ", style="bold magenta")
    line.append(f"({message.kind.value}): {safe_text(message.detail)}")
    out.print(line, soft_wrap=True)


def _json_text(value: Any) -> Text:
    """``value`` as indented JSON, every line made inert, highlighted (never read as markup)."""
    lines = json.dumps(value, indent=2, ensure_ascii=False).split("\n")
    text = Text("\n".join(safe_text(line) for line in lines))
    JSONHighlighter().highlight(text)
    return text

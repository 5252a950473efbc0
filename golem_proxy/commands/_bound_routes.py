"""What a session says about its bound routes when it starts: each route as bound, the
client environment that points at them, which upstreams do not accept yet, and with
``--intercept`` what is held. ``proxy`` and ``mcp`` both print them; ``mcp`` and
``mcp-verify`` hand the environment to the child."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.text import Text

from golem_core.profiles import Profile

from ..live.intercept import InterceptEngine
from ..live.proxy_options import BoundRoute
from ..net.listeners import probe
from ..terminal import safe_text

STARTUP_PROBE_TIMEOUT = 0.5
"""How long the start-up check of each upstream waits for it to accept."""


def print_intercept(console: Console, engine: InterceptEngine, commands: str) -> None:
    """One line: the frames ``engine`` holds, for how long, and ``commands``, where the user
    decides about them."""
    limit = f", at most {engine.timeout:g} s" if engine.timeout else ""
    console.print(
        Text.assemble(
            ("intercept", "bold blue"),
            f": {safe_text(str(engine.filter))} (held until decided{limit}; {commands})",
        ),
        soft_wrap=True,
    )


def print_routes(console: Console, bound: list[BoundRoute]) -> None:
    """One line per bound route: its name, where it listens and where it forwards."""
    # Route names and paths come from the command line: Text, not markup, so a `[` in a
    # socket path prints as itself.
    for item in bound:
        console.print(
            Text.assemble(
                (safe_text(item.route.name), "bold"),
                f": {safe_text(str(item.listen))} → {safe_text(str(item.route.upstream))}",
            ),
            soft_wrap=True,
        )


def client_environment(bound: list[BoundRoute], profile: Profile) -> dict[str, str]:
    """The client's environment variables that point it at the proxy (``SCRYBE_SOCK``,
    ``GOLEM_RHINO_HOST``, ``GOLEM_RHINO_PORT``, …): the profile says which variable points at
    which route."""
    variables = {d.name: d for d in profile.default_routes(os.environ)}
    found: dict[str, str] = {}
    for item in bound:
        default = variables.get(item.route.name)
        if default is None or not default.client_env:
            continue
        listen = item.listen
        if default.client_env_value == "path" and listen.is_unix:
            found[default.client_env] = str(listen.absolute().path)
        elif default.client_env_value == "port" and not listen.is_unix:
            if default.client_host_env:
                found[default.client_host_env] = str(listen.host)
            found[default.client_env] = str(listen.port)
    return found


def environment_hint(bound: list[BoundRoute], profile: Profile) -> str:
    """What the client needs in its environment to go through the proxy, as ``NAME=VALUE``
    words (see `client_environment`)."""
    return " ".join(f"{name}={value}" for name, value in client_environment(bound, profile).items())


async def warn_of_silent_upstreams(bound: list[BoundRoute]) -> None:
    """Say on stderr, one line each, which upstreams do not accept a connection now: the
    proxy starts anyway (the plugin may come up later), but a user waiting for traffic
    knows why none comes."""
    for item in bound:
        upstream = item.route.upstream
        reason = await probe(upstream, STARTUP_PROBE_TIMEOUT)
        if reason is not None:
            line = (
                f"golem-proxy: upstream {upstream} is not listening yet ({reason}); "
                f"{item.route.name} relays once it answers"
            )
            sys.stderr.write(safe_text(line) + "\n")
            sys.stderr.flush()

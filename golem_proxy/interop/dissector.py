"""A Wireshark dissector in Lua, generated from a protocol profile so it cannot drift from it.

What the profile decides goes into the script as data: the protocol's name (the field prefix,
``golem.method`` …: `protocol_name`), the framing (GOLEM's length header: its size and byte
order are read off `Profile.frame_payload`, not restated; NDJSON's line terminator), the
largest frame it accepts, and the ports its traffic is on (`default_ports`). The Lua around
that data is fixed: frames are reassembled across TCP segments with ``dissect_tcp_pdus``, the
envelope's ``id``, ``method`` and ``error.code`` are read with a small scanner of the
top-level JSON members (nested objects are skipped, so a ``method`` inside ``params`` is
never taken for the request's), and a payload small enough (`JSON_TREE_BYTES`,
`JSON_TREE_TOKENS`, `JSON_TREE_DEPTH`) is handed to Wireshark's JSON dissector. Requests and
responses are linked by id within a TCP stream and its direction on the first pass; the links
(``response_in``, ``request_in``, ``time``) show once Wireshark dissects again (the GUI
always; tshark with ``-2``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from golem_core.framing import Framing
from golem_core.profiles import GOLEM, Profile
from golem_core.profiles.base import DefaultRoute

from .. import __version__
from .lua_template import LENGTH_PREFIXED_LENGTH, LINE_LENGTH, TEMPLATE
from .tcp_export import PSEUDO_BASE_PORT, parse_endpoint

__all__ = [
    "ENVELOPE_SCAN_BYTES",
    "ENVELOPE_TAIL_BYTES",
    "JSON_TREES_PER_PACKET",
    "JSON_TREE_BYTES",
    "JSON_TREE_DEPTH",
    "JSON_TREE_TOKENS",
    "DissectorError",
    "default_ports",
    "generate_dissector",
    "protocol_name",
]

# What Wireshark's JSON dissector is handed (tshark 4.0 measured): it adds up to 3 tree items
# per value or member, and a packet of more than 1,000,000 items (Wireshark's default limit)
# killed tshark under our Lua (SIGSEGV at 100,000 [x, y, z] vertices, 340,000 numbers or
# 170,000 members). 50,000 tokens are at most 150,000 items: with what else one packet can
# complete (a segment holds at most 64 KiB more of frames), well under the limit.
JSON_TREE_BYTES = 1 << 20
"""A body larger than this gets no JSON tree (its envelope fields still show)."""
JSON_TREE_TOKENS = 50_000
"""Nor one with more values and members than this, counted as the ``[``, ``{``, ``,`` and
``:`` outside its strings."""
JSON_TREE_DEPTH = 100
"""Nor one nested deeper than this: two tree levels a level, under Wireshark's 500 (4.0's
JSON dissector shows a body nested past about 20 levels as text anyway)."""
ENVELOPE_SCAN_BYTES = 1 << 20
"""The envelope (id, method, error) is read from a body's first this many bytes: never fewer
than `JSON_TREE_BYTES`, as the count of a body handed to the JSON dissector reads it whole."""
ENVELOPE_TAIL_BYTES = 64 * 1024
"""And from the last this many bytes of a body longer than `ENVELOPE_SCAN_BYTES`: the scalar
members that end it (an ``id`` written after the ``result``)."""
JSON_TREES_PER_PACKET = 200
"""At most this many frames that one packet completes get a JSON tree: each adds a layer to
the packet, and tshark 4.0 died (SIGSEGV) past Wireshark's 500 (``gui.max_tree_depth``), when
one 17 KB segment finished 500 small GOLEM frames. The rest show ``json_skipped``."""
_LINE_SEARCH_BYTES = 256 * 1024
"""A line's newline is looked for in its last this many bytes as its segments arrive: more
than one TCP segment (at most 64 KiB) holds."""

_WIRESHARK_NAMES = {"mcp": "mcp_stdio"}
"""Profiles whose name Wireshark already gives a protocol of its own (``mcp``: the Miscabling
Protocol), so that a second one is refused, and the name their dissector takes instead."""


class DissectorError(ValueError):
    """The profile's framing is not one the generated Lua can express."""


def protocol_name(profile: Profile) -> str:
    """The dissector's protocol name in Wireshark, the prefix of its fields (``golem``,
    ``jsonrpc_ndjson``, ``mcp_stdio``): one no protocol built into Wireshark has."""
    return _WIRESHARK_NAMES.get(profile.name, profile.name.replace("-", "_"))


def default_ports(profile: Profile) -> list[int]:
    """The TCP ports of the profile's default routes, servers first, then the proxy's. A
    server on a Unix socket counts with the pseudo port a pcapng export gives it
    (`tcp_export.PSEUDO_BASE_PORT` + its index), so an export of such a recording decodes as
    it is. A tool layer (MCP) has no route of its own: ``golem-proxy mcp`` records its stdio
    hop after GOLEM's routes, and the export gives it the pseudo port of that place."""
    if profile.tool_layer:
        return [PSEUDO_BASE_PORT + len(GOLEM.channels)]
    ports: list[int] = []
    routes = profile.default_routes({}) or _channel_routes(profile)
    for index, route in enumerate(routes):
        end = parse_endpoint(route.upstream)
        port = end.port if end is not None else PSEUDO_BASE_PORT + index
        if port not in ports:
            ports.append(port)
    for route in routes:
        end = parse_endpoint(route.listen)
        if end is not None and end.port not in ports:
            ports.append(end.port)
    return ports


def _channel_routes(profile: Profile) -> tuple[DefaultRoute, ...]:
    # A profile with no default routes still has channels; each is a Unix-socket-like server.
    return tuple(DefaultRoute(name, "", "") for name in profile.channels)


def _length_header(profile: Profile) -> tuple[int, str]:
    """The size of the profile's length header and its byte order, read off its framing."""
    sample = 0x010203
    framed = profile.frame_payload(b"x" * sample)
    size = len(framed) - sample
    if size <= 0 or framed[size:] != b"x" * sample:
        raise DissectorError(f"profile {profile.name}: the length header is not a plain prefix")
    for order in ("big", "little"):
        if framed[:size] == sample.to_bytes(size, order):
            return size, order
    raise DissectorError(f"profile {profile.name}: the length header is not a byte count")


def _lua_string(text: str) -> str:
    # A JSON string literal with only ASCII is a valid Lua string literal with the same text.
    return json.dumps(text, ensure_ascii=True)


def generate_dissector(profile: Profile, extra_ports: Iterable[int] = ()) -> str:
    """The Lua source of a Wireshark dissector for ``profile``, registered on its default
    ports and ``extra_ports``. Raises DissectorError for a framing it cannot express."""
    proto = protocol_name(profile)
    ports = default_ports(profile)
    ports += [port for port in extra_ports if port not in ports]
    if profile.framing is Framing.LENGTH_PREFIXED:
        size, order = _length_header(profile)
        reader = "uint" if order == "big" else "le_uint"
        length = LENGTH_PREFIXED_LENGTH.substitute(header=size, reader=reader)
        header = size
    elif profile.framing is Framing.LINE:
        length = LINE_LENGTH.substitute(line_search=_LINE_SEARCH_BYTES)
        header = 0
    else:  # pragma: no cover - every Framing is handled above
        raise DissectorError(f"profile {profile.name}: framing {profile.framing.value}")
    return TEMPLATE.substitute(
        version=__version__,
        profile=profile.name,
        proto=proto,
        proto_name=_lua_string(proto),
        description=_lua_string(f"{profile.name} JSON RPC ({profile.framing.value} framing)"),
        framing=profile.framing.value,
        header=header,
        cap=profile.default_cap,
        scan_bytes=ENVELOPE_SCAN_BYTES,
        tail_bytes=ENVELOPE_TAIL_BYTES,
        json_trees=JSON_TREES_PER_PACKET,
        json_bytes=JSON_TREE_BYTES,
        json_tokens=JSON_TREE_TOKENS,
        json_depth=JSON_TREE_DEPTH,
        length_function=length,
        ports=", ".join(str(port) for port in ports),
    )

"""Protocol profiles: `golem` (GOLEM-3DMCP), `jsonrpc-ndjson` (Scrybe 0.6 contract) and `mcp`
(the Model Context Protocol's stdio transport)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .base import DefaultRoute, Profile
from .golem import GolemProfile
from .jsonrpc_ndjson import JsonRpcNdjsonProfile
from .mcp import McpProfile

__all__ = [
    "GOLEM",
    "JSONRPC_NDJSON",
    "MCP",
    "PROFILES",
    "DefaultRoute",
    "GolemProfile",
    "JsonRpcNdjsonProfile",
    "McpProfile",
    "Profile",
    "get_profile",
    "profile_table",
]


def profile_table(*profiles: Profile) -> Mapping[str, Profile]:
    """A read-only mapping name → profile. Raises ValueError when two share a name."""
    table: dict[str, Profile] = {}
    for profile in profiles:
        if table.setdefault(profile.name, profile) is not profile:
            raise ValueError(f"duplicate profile name {profile.name!r}")
    return MappingProxyType(table)


GOLEM = GolemProfile()
JSONRPC_NDJSON = JsonRpcNdjsonProfile()
MCP = McpProfile()
PROFILES = profile_table(GOLEM, JSONRPC_NDJSON, MCP)
"""Every profile this version speaks, by name (built once, never changed)."""


def get_profile(name: str) -> Profile:
    """Return the profile called ``name``. Raises KeyError naming the known profiles."""
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise KeyError(f"unknown profile {name!r} (known: {known})") from None

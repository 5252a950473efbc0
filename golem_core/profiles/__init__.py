"""Protocol profiles: `golem` (GOLEM-3DMCP) and `jsonrpc-ndjson` (Scrybe 0.6 contract)."""

from __future__ import annotations

from .base import DefaultRoute, Profile
from .golem import GolemProfile
from .jsonrpc_ndjson import JsonRpcNdjsonProfile

__all__ = [
    "GOLEM",
    "JSONRPC_NDJSON",
    "PROFILES",
    "DefaultRoute",
    "GolemProfile",
    "JsonRpcNdjsonProfile",
    "Profile",
    "get_profile",
]

GOLEM = GolemProfile()
JSONRPC_NDJSON = JsonRpcNdjsonProfile()
PROFILES: dict[str, Profile] = {GOLEM.name: GOLEM, JSONRPC_NDJSON.name: JSONRPC_NDJSON}


def get_profile(name: str) -> Profile:
    """Return the profile called ``name``. Raises KeyError naming the known profiles."""
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise KeyError(f"unknown profile {name!r} (known: {known})") from None

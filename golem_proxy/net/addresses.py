"""Endpoints and routes: ``HOST:PORT``, ``[IPv6]:PORT`` or ``unix:PATH``."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Optional

__all__ = ["Address", "Route", "parse_address", "parse_route"]


@dataclass(frozen=True)
class Address:
    """A TCP endpoint (``host``, ``port``) or a Unix socket path (``path``)."""

    host: str = ""
    port: int = 0
    path: Optional[str] = None

    @property
    def is_unix(self) -> bool:
        return self.path is not None

    def is_loopback(self) -> bool:
        """True for Unix sockets and loopback hosts; "" / 0.0.0.0 / :: listen everywhere."""
        if self.is_unix:
            return True
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def absolute(self) -> Address:
        """The same endpoint with a Unix socket path made absolute: what a hint prints, so
        that it works from any directory (TCP endpoints are returned as they are)."""
        if self.path is None:
            return self
        return Address(path=os.path.abspath(self.path))

    def __str__(self) -> str:
        if self.path is not None:
            return f"unix:{self.path}"
        if ":" in self.host:
            return f"[{self.host}]:{self.port}"
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Route:
    """Listen on ``listen`` and relay each connection to ``upstream``."""

    name: str
    listen: Address
    upstream: Address

    def __str__(self) -> str:
        return f"{self.name}: {self.listen} → {self.upstream}"


def parse_address(text: str) -> Address:
    """Parse ``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` (loopback) or ``unix:PATH``.

    Raises ValueError with a message fit for the command line."""
    text = text.strip()
    if text.startswith("unix:"):
        path = text[5:]
        if not path:
            raise ValueError(f"{text!r}: unix: needs a socket path")
        return Address(path=os.path.expanduser(path))
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"{text!r}: expected [IPv6]:PORT")
        port_text = rest[1:]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ValueError(f"{text!r}: expected HOST:PORT or unix:PATH")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: port must be a number from 0 to 65535")
    return Address(host or "127.0.0.1", int(port_text))


def parse_route(text: str, name: Optional[str] = None) -> Route:
    """Parse ``LISTEN=UPSTREAM`` (optionally ``NAME@LISTEN=UPSTREAM``)."""
    if "@" in text.split("=", 1)[0]:
        name, _, text = text.partition("@")
    listen, sep, upstream = text.partition("=")
    if not sep:
        raise ValueError(f"{text!r}: expected LISTEN=UPSTREAM")
    return Route(name or "route", parse_address(listen), parse_address(upstream))

"""The images in a session: ``viewport.capture`` answers carry a PNG, base64, in
``result.image`` (the real plugin and the headless one alike). This module finds them in flows
and writes them out; the TUI shows them and ``export --format images`` saves them.
"""

from __future__ import annotations

import base64
import binascii
import errno
import json
import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Optional

from ..recording.files import open_private
from ..recording.frame_skeleton import over_parse_budget
from .flows import Flow

__all__ = ["PNG_SIGNATURE", "Capture", "capture_of", "captures", "png_in", "write_captures"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_SIGNATURE_BASE64 = "iVBORw0KGgo"  # what a base64 string holding a PNG starts with
_IMAGE_MEMBER = b'"image"'


@dataclass(frozen=True)
class Capture:
    """One captured image: the flow it came with, the PNG bytes and their declared size."""

    flow: int
    png: bytes
    width: int
    height: int

    @property
    def filename(self) -> str:
        return f"flow-{self.flow}.png"


def png_in(obj: Any) -> Optional[bytes]:
    """The PNG bytes of a capture in ``obj`` (a response, its ``result``, or a result with
    ``image``: base64), or None when there is none."""
    if isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        obj = obj["result"]
    image = obj.get("image") if isinstance(obj, dict) else None
    if not isinstance(image, str) or not image.startswith(_SIGNATURE_BASE64):
        return None
    try:
        return base64.b64decode(image, validate=True)
    except (binascii.Error, ValueError):
        return None


def capture_of(flow: Flow) -> Optional[Capture]:
    """The PNG a flow's response carries in ``result.image``, or None. Read from the payload
    (a live view may hold the message with its long strings left out)."""
    response = flow.response
    if response is None or _IMAGE_MEMBER not in response.payload:
        return None
    if response.elided and over_parse_budget(response.payload, 0):
        return None  # too large to parse, as a reader (a viewport capture never is)
    try:
        obj = json.loads(response.payload)
    except (ValueError, RecursionError):
        return None
    png = png_in(obj.get("result") if isinstance(obj, dict) else None)
    if png is None or png[12:16] != b"IHDR" or len(png) < 24:
        return None
    width, height = struct.unpack("!II", png[16:24])
    return Capture(flow.number, png, width, height)


def captures(flows: Iterable[Flow]) -> Iterator[Capture]:
    """Every captured image of ``flows``, in flow order."""
    for flow in flows:
        found = capture_of(flow)
        if found is not None:
            yield found


def write_captures(found: Iterable[Capture], directory: str) -> Iterator[Capture]:
    """Write each capture to ``directory/flow-N.png`` as it comes (the directory is created,
    private, when missing), yielding it once written. The files are private, and a symbolic
    link or another user's file in their place is refused, never followed
    (`golem_proxy.recording.files.open_private`). Raises OSError."""
    if os.path.islink(directory):
        raise OSError(errno.ELOOP, f"refusing to write through symlink {directory}", directory)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    for capture in found:
        with open_private(os.path.join(directory, capture.filename), overwrite=True) as handle:
            handle.write(capture.png)
        yield capture

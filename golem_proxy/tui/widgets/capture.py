"""The picture in a `viewport.capture` answer, drawn in the detail pane in half blocks.

Decoding is pure Python (a plugin's PNG filters every scanline), so it runs in a worker thread
and the pane says so meanwhile; the last few decoded images are kept, so moving back to a
capture shows it at once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional, Union

from rich.console import Group
from rich.text import Text
from textual import work
from textual.widgets import Static

from ...analysis.flows import Flow
from ..png import PngError, PngImage, PngPreview, decode_png, find_png

__all__ = ["CapturePreview"]

KEPT = 8
"""Decoded images kept (by flow number)."""
PREVIEW_ROWS = 16
"""At most this many lines high (32 pixel rows)."""


class CapturePreview(Static):
    """Hidden unless the flow's response carries a PNG image."""

    def __init__(self, *, id: Optional[str] = None) -> None:
        super().__init__("", id=id)
        self.flow: Optional[Flow] = None
        self._decoded: OrderedDict[int, Union[PngImage, str]] = OrderedDict()

    def show(self, flow: Optional[Flow]) -> None:
        """Show the image in ``flow``'s response, if it has one."""
        self.flow = flow
        data = _png_of(flow)
        if flow is None or data is None:
            self.display = False
            return
        self.display = True
        known = self._decoded.get(flow.number)
        if known is not None:
            self._draw(known)
            return
        self.update(Text(f"Image: decoding {len(data):,} bytes of PNG…", style="dim"))
        self._decode(flow, data)

    @work(thread=True, exclusive=True, group="capture")
    def _decode(self, flow: Flow, data: bytes) -> None:
        try:
            result: Union[PngImage, str] = decode_png(data)
        except PngError as exc:
            result = str(exc)
        self.app.call_from_thread(self._decoded_one, flow, result)

    def _decoded_one(self, flow: Flow, result: Union[PngImage, str]) -> None:
        self._decoded[flow.number] = result
        while len(self._decoded) > KEPT:
            self._decoded.popitem(last=False)
        if flow is self.flow:
            self._draw(result)

    def _draw(self, result: Union[PngImage, str]) -> None:
        if isinstance(result, str):
            self.update(Text(f"Image: not shown ({result})", style="dim"))
            return
        title = Text(f"Image  {result.width}x{result.height} PNG", style="bold")
        self.update(Group(title, PngPreview(result, PREVIEW_ROWS)))


def _png_of(flow: Optional[Flow]) -> Optional[bytes]:
    if flow is None or flow.response is None:
        return None
    return find_png(getattr(flow.response.message, "obj", None))

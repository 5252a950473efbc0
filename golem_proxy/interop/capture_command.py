"""``golem-proxy export FILE --format pcapng --out FILE``: the command's side of `tcp_export`."""

from __future__ import annotations

from rich.text import Text

from ..analysis.trace import FlowReader
from ..commands._common import EXIT_OK, console
from ..recording.format import replacing
from ..terminal import safe_text
from .tcp_export import write_pcapng

__all__ = ["export_pcapng"]


def export_pcapng(trace: FlowReader, out: str) -> int:
    """Write ``trace`` to ``out`` as pcapng (private, written whole: a damaged line further on
    leaves no half file) and say what was written on stderr. Returns the exit code; raises
    TraceError and OSError."""
    with replacing(out, overwrite=True) as stream:
        summary = write_pcapng(trace.events(), trace.header, trace.profile, stream)
    line = (
        f"wrote {summary.packets} packets of {summary.connections} connections "
        f"({summary.payload_bytes} payload bytes) to {safe_text(out)}"
    )
    if summary.gaps:
        line += f"; {summary.gaps} gaps ({summary.gap_bytes} bytes crossed unobserved)"
    console(stderr=True).print(Text(line))
    return EXIT_OK

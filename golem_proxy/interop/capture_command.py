"""``golem-proxy export FILE --format pcapng|parquet --out FILE``: the command's side of
`tcp_export` and `flow_table`."""

from __future__ import annotations

from rich.text import Text

from ..analysis.trace import FlowReader
from ..commands._common import EXIT_OK, console, fail
from ..recording.format import replacing
from ..terminal import safe_text
from .flow_table import FlowTableError, write_parquet
from .tcp_export import write_pcapng

__all__ = ["export_parquet", "export_pcapng"]


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


def export_parquet(trace: FlowReader, name: str, out: str) -> int:
    """Write the flows of ``trace`` to ``out`` as Parquet, its ``trace`` column ``name``, and
    say so on stderr. Returns the exit code; raises TraceError and OSError."""
    try:
        count = write_parquet(trace, name, out)
    except FlowTableError as exc:
        return fail(f"cannot write {out} ({exc})")
    console(stderr=True).print(Text(f"wrote {count} flows to {safe_text(out)}"))
    return EXIT_OK

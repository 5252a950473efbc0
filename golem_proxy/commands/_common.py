"""What the commands share: consoles, the one error style, argument types, status colours.

Every error a user can cause (a bad argument, a missing or damaged file, a busy port) ends as
one line on stderr, ``golem-proxy: <what> (<why>)``, and exit code 2; exit 1 is kept for "the
command ran and found differences or violations". Commands raise `CommandError` (or let an
OSError / RecordingError through) and `golem_proxy.cli` prints it: see `error_line`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Callable, Optional

from rich.console import Console
from rich.text import Text

from golem_core.catalogue import MethodCatalogue
from golem_core.contract import Severity
from golem_core.profiles import Profile
from golem_core.regular_files import FileTooLarge, NotARegularFile

from ..analysis.filters import Filter, FilterError, parse_filter
from ..analysis.flows import Flow
from ..analysis.reading_notes import reading_notes
from ..analysis.tool_calls import mcp_routes
from ..analysis.trace import FlowReader, TraceError, open_flows
from ..catalogues import CatalogueNotFound, load_catalogue
from ..net.addresses import Address, parse_address
from ..recording.format import RecordingError
from ..recording.samples import SampleNotFound, sample_path
from ..status_tone import TONE_STYLES
from ..terminal import safe_text

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
"""A bug, not the user's doing (sysexits' EX_SOFTWARE): kept apart from 2 so that it shows."""

AT_LEAST = "≥"
"""Before a size that is only the least that went by (`Flow.size_at_least`)."""


class CommandError(Exception):
    """A usage, setup or input error, printed as ``golem-proxy: <what> (<why>)``, exit 2."""

    def __init__(self, what: str, why: Optional[str] = None) -> None:
        super().__init__(f"{what} ({why})" if why else what)
        self.what = what
        self.why = why


_OS_REASONS: dict[int, str] = {
    errno.ENOENT: "no such file",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EEXIST: "already exists",
    errno.ELOOP: "is a symbolic link, not followed here (or a loop of them)",  # O_NOFOLLOW; a loop
    errno.ENOSPC: "no space left on the device",
}


def os_reason(exc: OSError) -> str:
    """Why an OSError happened, in words (``no such file``), without ``[Errno N]``."""
    if exc.errno in _OS_REASONS:
        return _OS_REASONS[exc.errno]
    if exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or ``[exc]`` itself. trio wraps what a
    nursery's task raised in a group; the user should see the one error inside it."""
    inner = getattr(exc, "exceptions", None)
    if not isinstance(exc, BaseException) or not isinstance(inner, tuple):
        return [exc]
    found: list[BaseException] = []
    for item in inner:
        found.extend(_leaves(item))
    return found


def unwrap(exc: BaseException) -> BaseException:
    """The single error inside ``exc``'s exception groups; ``exc`` when there are several."""
    leaves = _leaves(exc)
    return leaves[0] if len(leaves) == 1 else exc


def error_line(exc: BaseException) -> Optional[str]:
    """The one-line message for an error the user caused (without the ``golem-proxy:``
    prefix), or None for anything else: a bug, which deserves its traceback."""
    exc = unwrap(exc)
    if isinstance(exc, FilterError):  # a --filter of show, stats or tui
        return f"bad filter: {exc}"
    if isinstance(exc, (CommandError, TraceError, RecordingError)):
        return str(exc)
    if isinstance(exc, OSError):
        # ListenError and friends carry a sentence of their own; a raw OSError does not.
        if exc.errno is None and exc.strerror is None:
            return str(exc) or type(exc).__name__
        if exc.filename is not None:
            return f"{exc.filename}: {os_reason(exc)}"
        return os_reason(exc)
    return None


def add_overwrite(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--overwrite`` option of a command that writes ``what`` to a file."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace an existing {what} (never a file the command reads)",
    )


def check_output(path: Optional[str], *, overwrite: bool, inputs: Sequence[str] = ()) -> None:
    """Refuse to write ``path`` (raises CommandError) over a file the command reads, always: a
    recording replaced by its own export or report is lost; and over any other existing file
    unless ``overwrite``. Nothing to check for stdout (``-``) or no path."""
    if not path or path == "-" or not os.path.lexists(path):
        return
    if os.path.isdir(path):  # no --overwrite replaces a directory: say so before it is asked
        raise CommandError(f"{path}: is a directory", "name a file to write")
    for source in inputs:
        with contextlib.suppress(OSError):  # an input that cannot be stat'ed is not this one
            if os.path.samefile(path, source):
                raise CommandError(f"{path}: is a file this command reads, not replaced")
    if not overwrite:
        raise CommandError(f"{path}: already exists", "pass --overwrite to replace it")


def print_error(message: str) -> None:
    """Print ``golem-proxy: message`` on stderr (the one error style). The message may quote a
    file name or a trace's text: control characters are shown escaped, never sent as such,
    and the error stays on one line."""
    line = Text(f"golem-proxy: {safe_text(message)}", style="bold red")
    console(stderr=True).print(line, soft_wrap=True)


@contextmanager
def reading(path: str, role: Optional[str] = None) -> Iterator[None]:
    """Turn the errors of opening or reading the recording at ``path`` into a `CommandError`
    that names it (and ``role``, e.g. "trace B", when a command reads several)."""
    prefix = f"{role}, " if role else ""
    try:
        yield
    except OSError as exc:
        raise CommandError(f"{prefix}{path}: {os_reason(exc)}") from exc
    except (RecordingError, TraceError) as exc:
        text = str(exc)
        # Some readers already name the file; do not say it twice.
        named = text if text.startswith(f"{path}:") else f"{path}: {text}"
        raise CommandError(f"{prefix}{named}") from exc


def address_arg(text: str) -> Address:
    """argparse type for ``HOST:PORT``, ``[V6]:PORT`` or ``unix:PATH`` with a readable error
    (argparse would otherwise print its function name: ``invalid parse_address value``)."""
    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def trace_path_arg(text: str) -> str:
    """argparse type for a trace: a path as given, or ``sample:NAME`` for a sample recording
    shipped with the package (``golem-proxy samples`` lists them)."""
    if not text.startswith("sample:"):
        return text
    try:
        return str(sample_path(text[len("sample:") :]))
    except SampleNotFound as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


CATALOGUE_METAVAR = "FILE|NAME"
CATALOGUE_HELP = "a JSON file or a shipped one by name (golem-3dmcp@9819b31)"


def catalogue_arg(spec: str) -> MethodCatalogue:
    """argparse type for ``--catalogue``, the one resolver of every command: a catalogue
    file, or the name of one shipped with golem-proxy (``golem-3dmcp@9819b31``), loaded. The
    error says which it could not be (``no such file or shipped catalogue``, ``not a method
    catalogue``)."""
    try:
        return load_catalogue(spec)
    except CatalogueNotFound as exc:
        raise argparse.ArgumentTypeError(f"{spec}: {exc}") from None
    except NotARegularFile as exc:  # worded as for a recording (`open_recording`)
        raise argparse.ArgumentTypeError(f"{spec}: is {exc.kind}, not a catalogue file") from None
    except FileTooLarge as exc:
        raise argparse.ArgumentTypeError(
            f"{spec}: too large for a method catalogue ({exc})"
        ) from None
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{spec}: {os_reason(exc)}") from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{spec}: not a method catalogue ({exc})") from None


def _number_arg(
    kind: type, words: str, *, minimum: Optional[float] = None
) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {words}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{text!r} is not {words}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is below {minimum:g}")
        return value  # type: ignore[no-any-return]

    convert.__name__ = words
    return convert


class _Console(Console):
    """A rich Console whose closed output raises BrokenPipeError (rich's own handling exits
    with status 1 from deep inside a print): `golem_proxy.cli` ends every command the same
    way when its reader went away."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the output was closed")


def console(*, stderr: bool = False) -> Console:
    """A rich console. Piped, it has a wide fixed width for what wraps (a panel, a long
    note); tables ignore it there and print every value whole (`golem_proxy.table_layout`).
    A closed output raises BrokenPipeError, which the command line ends quietly."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or "COLUMNS" in os.environ else 160
    return _Console(file=stream, width=width, highlight=False)


seconds_arg = _number_arg(float, "a number of seconds", minimum=0)
tolerance_arg = _number_arg(float, "a number", minimum=0)
count_arg = _number_arg(int, "a whole number", minimum=0)
integer_arg = _number_arg(int, "an integer")


def fail(message: str) -> int:
    """Print ``golem-proxy: message`` on stderr and return the usage/IO exit code."""
    print_error(message)
    return EXIT_USAGE


def note_truncated(reader: FlowReader) -> None:
    """The notes of a recording read to its end (`reading_notes`: restarts, where
    observation stopped, a file cut short) on stderr, one line each."""
    print_notes(reading_notes(reader))


def print_notes(notes: list[str]) -> None:
    """Notes on stderr, one line each, in the notes' colour."""
    for note in notes:
        console(stderr=True).print(Text(note, style="yellow"), soft_wrap=True)


def plural(count: int, noun: str) -> str:
    """``1 connection``, ``2 connections``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def filtered_flows(
    path: str,
    expression: Optional[str],
    see: Optional[Callable[[Flow], None]] = None,
    catalogue: Optional[MethodCatalogue] = None,
) -> tuple[FlowReader, Iterator[Flow], Optional[Filter]]:
    """Open the recording at ``path``; return it, its flows matching ``expression`` (all for
    None) as they are read, and the parsed filter. ``see`` is shown every flow, matching or
    not, before it is filtered. With ``catalogue`` and a recording without an MCP layer,
    ``~tool`` guesses from the catalogue's method → tool map.

    Raises FilterError for a bad filter (checked before the file), TraceError for a file
    that cannot be opened; reading the flows may raise TraceError. `golem_proxy.cli` prints
    either as one line (`error_line`)."""
    chosen = parse_filter(expression) if expression is not None else None
    reader = open_flows(path)
    if expression is not None and catalogue is not None and not mcp_routes(reader.route_profiles):
        # Parsed again, now that the recording is known to carry no attribution of its own.
        try:
            chosen = parse_filter(expression, catalogue.likely_tools)
        except FilterError:
            reader.close()
            raise
    flows = reader.flows()
    if see is not None:
        flows = _seen(flows, see)
    if chosen is not None:
        # Each flow is judged with its route's profile (a two-layer recording has two).
        profile_for = reader.profile_for
        flows = (f for f in flows if chosen.matches(f, profile_for(f.route)))
    return reader, flows, chosen


def _seen(flows: Iterator[Flow], see: Callable[[Flow], None]) -> Iterator[Flow]:
    for flow in flows:
        see(flow)
        yield flow


def status_text(flow: Flow, profile: Profile) -> Text:
    """The status cell, styled by the flow's tone (`golem_proxy.status_tone`)."""
    return Text(safe_text(flow.status(profile)), style=TONE_STYLES[flow.tone])


def violation_marker(flow: Flow) -> Text:
    severity = flow.worst_severity
    if severity is None:
        return Text("")
    style = "bold red" if severity is Severity.ERROR else "yellow"
    return Text(f"⚠ {len(flow.violations)}", style=style)


def severity_text(severity: Severity) -> Text:
    return Text(severity.value, style="bold red" if severity is Severity.ERROR else "yellow")


def ms(seconds: Optional[float]) -> str:
    return "" if seconds is None else f"{seconds * 1000:.1f}"


def size(value: Optional[int], at_least: bool = False) -> str:
    """A size cell: empty without one, ``≥N`` where it is only the least that went by
    (`Flow.size_at_least`)."""
    if value is None:
        return ""
    return f"{AT_LEAST}{value}" if at_least else str(value)

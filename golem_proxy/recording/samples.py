"""The sample recordings shipped with the package.

The wheel carries the repository's ``recordings/*.jsonl`` samples as ``golem_proxy/samples/``
(a hatch build hook, hatch_build.py), so they are there outside a checkout too; in a checkout
they are read from ``recordings/``. ``sample:NAME`` names one wherever a trace is expected.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

__all__ = ["SAMPLE_PREFIX", "SampleNotFound", "is_sample", "sample_path", "samples", "samples_dir"]

SAMPLE_PREFIX = "sample:"
_PACKAGE = Path(__file__).resolve().parent.parent


class SampleNotFound(LookupError):
    """No shipped sample has that name; the message lists the ones there are."""


def samples_dir() -> Optional[Path]:
    """Where the samples are: inside the installed package, else the checkout's recordings/."""
    for candidate in (_PACKAGE / "samples", _PACKAGE.parent / "recordings"):
        if candidate.is_dir():
            return candidate
    return None


def samples() -> dict[str, Path]:
    """Sample name (the file name without ``.jsonl``) → path, sorted by name. A checkout's
    ``demo-*`` recordings are the user's own, not samples."""
    directory = samples_dir()
    if directory is None:
        return {}
    found = {
        path.name[: -len(".jsonl")]: path
        for path in directory.glob("*.jsonl")
        if path.is_file() and not path.name.startswith("demo-")
    }
    return dict(sorted(found.items()))


def sample_path(name: str) -> Path:
    """The path of sample ``name`` (``modelling-session``; ``.jsonl`` optional). Raises
    SampleNotFound listing the samples there are."""
    if name.endswith(".jsonl"):
        name = name[: -len(".jsonl")]
    known = samples()
    if name not in known:
        names = ", ".join(known) or "none are installed"
        raise SampleNotFound(f"no sample recording named {name!r} (samples: {names})")
    return known[name]


def is_sample(path: str) -> bool:
    """True when ``path`` is one of the shipped samples (which commands must not modify)."""
    real = os.path.realpath(path)
    return any(os.path.realpath(sample) == real for sample in samples().values())

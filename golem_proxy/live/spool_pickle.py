"""Unpickling what a spool holds (`safe_loads`): the setup in its header and the events in its
records, pickled by the forwarding process (handoff.py, spool_header.py).

Between the proxy's own processes pickle is safe: the pipe and the spool's descriptor are
inherited, the spool made 0600 with O_EXCL. A spool left on disk after a ``kill -9`` is read
back by ``golem-proxy recover`` from a path, though, and a pickle may name any callable: a
crafted one would run code as whoever recovers. So a spool's pickles may name only what the
forwarding process pickles: the project's own record classes, built without running code of
theirs (an enum looks a member up; a dataclass's generated ``__init__`` stores its fields; a
class with neither ``__init__`` nor ``__new__`` of its own is built empty), and a few builtin
containers. Anything else is refused in one line (`SpoolPickleError`) before it is called.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import io
import pickle
import sys
from typing import Any, Union

__all__ = ["SpoolPickleError", "safe_loads"]

_PACKAGES = ("golem_proxy.", "golem_core.")
_BUILTINS = frozenset(
    {"bool", "bytearray", "bytes", "complex", "dict", "float", "frozenset", "int", "list"}
    | {"range", "set", "slice", "str", "tuple"}
)
"""Builtins a pickle may name (pickle's own opcodes cover most): containers, inert to build."""


class SpoolPickleError(pickle.UnpicklingError):
    """A pickle in a spool names something the proxy never pickles there: not loaded."""


def safe_loads(data: Union[bytes, memoryview]) -> Any:
    """``pickle.loads(data)``, naming only the classes a spool's pickles hold (see the module
    docstring). Raises SpoolPickleError (and what pickle raises for a damaged pickle)."""
    return _Restricted(io.BytesIO(data)).load()


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _allowed(module, name)
        if found is None:
            raise SpoolPickleError(
                f"it names {module}.{name}, which the proxy never pickles there: refused, "
                "nothing of it run"
            )
        return found


@functools.lru_cache(maxsize=512)
def _allowed(module: str, name: str) -> Any:
    """The global ``module.name`` when a spool's pickle may name it, else None. A module
    named is imported as pickle imports it, but only the project's own (and never its
    ``__main__``, which runs the command line)."""
    if not name.isidentifier():  # "a.b" would walk attributes to anything
        return None
    if module == "builtins":
        return getattr(sys.modules["builtins"], name) if name in _BUILTINS else None
    if not module.startswith(_PACKAGES) or "__main__" in module.split("."):
        return None
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    if not isinstance(found, type) or found.__module__ != module:
        return None  # a function, an instance, or a class imported from elsewhere
    return found if _inert(found) else None


def _inert(cls: type) -> bool:
    """Building ``cls`` as pickle does runs none of the project's code but storing values."""
    if issubclass(cls, enum.Enum):
        return True
    if issubclass(cls, BaseException) or cls.__new__ is not object.__new__:
        return False
    init = cls.__init__
    if init is object.__init__:
        return True
    # A dataclass's generated __init__ (compiled from "<string>") only stores its fields.
    code = getattr(init, "__code__", None)
    return (
        dataclasses.is_dataclass(cls)
        and code is not None
        and code.co_filename == "<string>"
        and not hasattr(cls, "__post_init__")
    )

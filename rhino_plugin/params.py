"""Parameter readers for handlers: each returns a typed value or raises `InvalidParams` naming
the parameter (so the answer carries ``details.param``).

Numbers accept int or float and reject bool and str, as the real handlers' casts do in effect.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

from golem_core.errors import InvalidParams

__all__ = [
    "Point",
    "first_present",
    "opt_bool",
    "opt_int",
    "opt_number",
    "opt_point",
    "opt_str",
    "req_guid_list",
    "req_int",
    "req_number",
    "req_point",
    "req_points",
    "req_str",
]

Point = tuple[float, float, float]
Params = dict[str, Any]


def _missing(name: str) -> InvalidParams:
    return InvalidParams(f"Required parameter '{name}' is missing.", name)


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidParams(f"Parameter '{name}' must be a number.", name)
    number = float(value)
    if not math.isfinite(number):
        raise InvalidParams(f"Parameter '{name}' must be a finite number.", name)
    return number


def first_present(params: Params, *names: str) -> Optional[str]:
    """The first of ``names`` present (and not null) in ``params``, or None."""
    for name in names:
        if params.get(name) is not None:
            return name
    return None


def req_number(params: Params, name: str, *, positive: bool = False) -> float:
    """``params[name]`` as a float. Raises InvalidParams when missing, not a number, or (with
    ``positive``) not greater than zero."""
    if params.get(name) is None:
        raise _missing(name)
    number = _number(name, params[name])
    if positive and number <= 0:
        raise InvalidParams(f"Parameter '{name}' must be greater than zero.", name)
    return number


def opt_number(params: Params, name: str, default: float, *, positive: bool = False) -> float:
    """Like `req_number`, but ``default`` when the parameter is absent or null."""
    if params.get(name) is None:
        return default
    return req_number(params, name, positive=positive)


def req_int(
    params: Params, name: str, *, minimum: Optional[int] = None, maximum: Optional[int] = None
) -> int:
    """``params[name]`` as an int (a float with an integral value is accepted). Raises
    InvalidParams when missing, not integral, or outside ``minimum..maximum``."""
    number = req_number(params, name)
    if not number.is_integer():
        raise InvalidParams(f"Parameter '{name}' must be an integer.", name)
    value = int(number)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        low = "-inf" if minimum is None else minimum
        high = "inf" if maximum is None else maximum
        bounds = f"{low}..{high}"
        raise InvalidParams(f"Parameter '{name}' must be in the range {bounds}.", name)
    return value


def opt_int(
    params: Params,
    name: str,
    default: int,
    *,
    minimum: Optional[int] = None,
    maximum: Optional[int] = None,
) -> int:
    """Like `req_int`, but ``default`` when the parameter is absent or null."""
    if params.get(name) is None:
        return default
    return req_int(params, name, minimum=minimum, maximum=maximum)


def req_str(params: Params, name: str, *, allow_empty: bool = False) -> str:
    """``params[name]`` as a string. Raises InvalidParams when missing, not a string or empty."""
    if params.get(name) is None:
        raise _missing(name)
    value = params[name]
    if not isinstance(value, str):
        raise InvalidParams(f"Parameter '{name}' must be a string.", name)
    if not allow_empty and not value.strip():
        raise InvalidParams(f"Parameter '{name}' must not be empty.", name)
    return value


def opt_str(params: Params, name: str, default: Optional[str] = None) -> Optional[str]:
    """``params[name]`` as a string, or ``default`` when absent or null. Raises InvalidParams
    when present but not a string."""
    if params.get(name) is None:
        return default
    return req_str(params, name, allow_empty=True)


def opt_bool(params: Params, name: str, default: bool) -> bool:
    """``params[name]`` as a bool, or ``default`` when absent or null. Raises InvalidParams when
    present but not a JSON boolean."""
    if params.get(name) is None:
        return default
    value = params[name]
    if not isinstance(value, bool):
        raise InvalidParams(f"Parameter '{name}' must be a boolean.", name)
    return value


def _point(name: str, value: Any) -> Point:
    if isinstance(value, dict) and all(key in value for key in ("x", "y", "z")):
        value = [value["x"], value["y"], value["z"]]
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3):
        raise InvalidParams(f"Parameter '{name}' must be a point [x, y, z].", name)
    coords = [_number(name, coord) for coord in value]
    if len(coords) == 2:
        coords.append(0.0)
    return (coords[0], coords[1], coords[2])


def req_point(params: Params, name: str) -> Point:
    """``params[name]`` as a 3D point: ``[x, y, z]``, ``[x, y]`` (z = 0) or ``{x, y, z}``.
    Raises InvalidParams when missing or malformed."""
    if params.get(name) is None:
        raise _missing(name)
    return _point(name, params[name])


def opt_point(params: Params, name: str, default: Point) -> Point:
    """Like `req_point`, but ``default`` when absent or null."""
    if params.get(name) is None:
        return default
    return _point(name, params[name])


def req_points(params: Params, name: str, *, minimum: int) -> list[Point]:
    """``params[name]`` as a list of at least ``minimum`` points. Raises InvalidParams."""
    if params.get(name) is None:
        raise _missing(name)
    value = params[name]
    if not isinstance(value, list) or len(value) < minimum:
        raise InvalidParams(
            f"Parameter '{name}' must be a list of at least {minimum} points.", name
        )
    return [_point(name, item) for item in value]


def req_guid_list(params: Params, names: Sequence[str] = ("guids", "ids")) -> tuple[str, list[str]]:
    """The GUID list from the first present of ``names`` (client and plugin spellings), as
    ``(param_name, guids)``. Raises InvalidParams naming the first spelling when none is
    present, or naming the one given when it is not a non-empty list of strings."""
    name = first_present(params, *names)
    if name is None:
        raise _missing(names[0])
    value = params[name]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(g, str) for g in value):
        raise InvalidParams(f"Parameter '{name}' must be a non-empty list of GUID strings.", name)
    return name, list(value)

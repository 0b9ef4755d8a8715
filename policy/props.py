"""Reads resource properties the way the policy engine hands them over, preview unknowns included.

During `pulumi preview` a property computed from another resource's output (an email, an id)
is not known yet. pulumi-policy wraps `props` in proxies that raise `UnknownValueError` on
access to such a value (pulumi_policy/proxy.py), and a rule that lets it escape is skipped with
an advisory note instead of being evaluated. `plain()` turns the proxies into ordinary dicts and
lists with the `UNKNOWN` marker in place of each unknown, so a rule can still judge every value
that is known and decide, case by case, what an unknown means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import proxy
from pulumi_policy.proxy import UnknownValueError

_SENTINELS = frozenset(
    {
        proxy.UNKNOWN_ARCHIVE_VALUE,
        proxy.UNKNOWN_ARRAY_VALUE,
        proxy.UNKNOWN_ASSET_VALUE,
        proxy.UNKNOWN_BOOLEAN_VALUE,
        proxy.UNKNOWN_NUMBER_VALUE,
        proxy.UNKNOWN_OBJECT_VALUE,
        proxy.UNKNOWN_STRING_VALUE,
    }
)


class _Unknown:
    """A value that is only known after the resource it comes from exists."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown until apply>"


UNKNOWN: Any = _Unknown()


def _read(container: Any, key: Any) -> Any:
    try:
        value = container[key]
    except UnknownValueError:
        return UNKNOWN
    return UNKNOWN if isinstance(value, str) and value in _SENTINELS else value


def plain(value: Any) -> Any:
    """A plain copy of `value` (dicts, lists, scalars) with `UNKNOWN` for every unknown."""
    if isinstance(value, str):
        return UNKNOWN if value in _SENTINELS else value
    if isinstance(value, Mapping):
        return {key: plain(_read(value, key)) for key in value}
    if isinstance(value, Sequence):
        return [plain(_read(value, index)) for index in range(len(value))]
    return value


def dig(value: Any, *path: str | int) -> Any:
    """`value[p0][p1]...` on plain data; None when a step is missing, UNKNOWN when unknown."""
    for step in path:
        if value is UNKNOWN:
            return UNKNOWN
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return None
        elif not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


def as_list(value: Any) -> list[Any]:
    """`value` if it is a list, else an empty list (missing or unknown lists hold nothing to judge)."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a dict, else an empty dict."""
    return value if isinstance(value, dict) else {}


def walk_strings(value: Any) -> list[str]:
    """Every known string in `value`, keys excluded."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in walk_strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in walk_strings(item)]
    return []


def network_name(reference: Any) -> str | None:
    """The network's name from a name, an id (`projects/p/global/networks/n`) or a self link."""
    if not isinstance(reference, str):  # missing, or UNKNOWN during preview
        return None
    if "/networks/" in reference:
        return reference.rsplit("/networks/", 1)[1].strip("/")
    return reference

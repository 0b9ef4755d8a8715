"""The metrics a PromQL query selects, read from its syntax tree by a real PromQL parser (promql-parser)."""

from __future__ import annotations

from typing import Any

import promql_parser

# Placeholders the dashboards' own front ends fill in before a query runs: Cloud Monitoring's
# `${__interval}` (its PromQL charts), Grafana's `$__rate_interval` / `$__interval`.
_PLACEHOLDERS = {"${__interval}": "5m", "$__rate_interval": "5m", "$__interval": "5m"}


def selected_metrics(query: str) -> set[str]:
    """Every metric name the query selects; raises ValueError when the query does not parse."""
    for placeholder, value in _PLACEHOLDERS.items():
        query = query.replace(placeholder, value)
    found: set[str] = set()
    _walk(promql_parser.parse(query), found)
    return found


def _walk(node: Any, found: set[str]) -> None:
    if isinstance(node, promql_parser.VectorSelector):
        found.add(node.name)
        return
    for child in ("expr", "lhs", "rhs", "vector_selector", "param"):
        value = getattr(node, child, None)
        if value is not None and not isinstance(value, (int, float, str)):
            _walk(value, found)
    for arg in getattr(node, "args", None) or []:
        _walk(arg, found)

"""`list --status S --since T --limit N`: which of the listed runs are shown.

Pure: the rows `state.group` (or `record_view.listing`) made, the filters as typed, the time now;
the rows kept, newest first as they came. Every bad value is refused naming the flag, the value
and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from jobs.common.errors import UsageError

_AGO = re.compile(r"^(?P<n>\d+(\.\d+)?)\s*(?P<unit>[smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_ms(text: str, now_s: float) -> int:
    """`2h`, `30m`, `3d` (ago) or an ISO date/time (`2026-12-01`, `2026-12-01T08:00`, UTC unless
    it says otherwise) as epoch milliseconds."""
    given = text.strip().lower()
    if m := _AGO.match(given):
        return int((now_s - float(m["n"]) * _UNIT_S[m["unit"]]) * 1000)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--since {text!r} is neither a time ago nor a date",
            "write --since 2h (s, m, h, d or w ago) or --since 2026-12-01T08:00 (UTC)",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def status_of(text: str, known: Sequence[str]) -> str:
    """The status as the listing spells it (case does not matter)."""
    wanted = text.strip().upper().replace("-", "_")
    if wanted not in known:
        raise UsageError(f"--status {text!r} is not a run status", f"use one of {', '.join(known)}")
    return wanted


def apply(
    rows: list[dict[str, Any]],
    status: str | None = None,
    since: int | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The rows with that status, started at or after `since` (ms), the first `limit` of them."""
    kept = [
        r
        for r in rows
        if (status is None or r["status"] == status)
        and (since is None or (r.get("started") or 0) >= since)
    ]
    return kept if limit is None else kept[:limit]

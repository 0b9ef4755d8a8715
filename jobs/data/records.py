"""Reading dataset records from local files: JSON lines, one record a line (standard library only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """Input that cannot be converted; the message names the file and what is wrong."""


def iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Each non-blank line of `path` as a record; a line that is not JSON is a DataError that
    names the file and the line."""
    with path.open() as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(f"{path} line {number} is not JSON: {e.msg}") from None

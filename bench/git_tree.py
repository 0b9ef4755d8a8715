"""A commit of this repository unpacked into a folder (`git archive | tar -x`): the baseline a
benchmark runs beside this tree in the same run."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def unpack(commit: str, target: Path) -> Path:
    """`commit`'s files in `target` (created); the folder returned."""
    target.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target

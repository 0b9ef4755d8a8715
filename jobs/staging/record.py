"""The staged-model record: which commit of a model is on Lustre, its files, and when it was staged.

Written last, atomically (a temporary file renamed over the old one), so a record on disk always
describes a snapshot that was complete when it was written; `is_intact` re-checks the files, since
a snapshot can lose files afterwards (a user's `rm`, a cache clean-up).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from jobs.staging import layout


@dataclass(frozen=True)
class StagedModel:
    """A model snapshot staged in the Hugging Face home, pinned to one commit."""

    model: str
    revision: str  # what was asked for: a branch, a tag or a commit
    commit: str  # what it resolved to, and what runs load
    files: dict[str, int] = field(default_factory=dict)  # path in the snapshot -> bytes
    staged_at: str = ""

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())

    def is_intact(self, home: Path) -> bool:
        """Every recorded file is still in the snapshot with its recorded size."""
        root = layout.snapshot_dir(home, self.model, self.commit)
        for name, size in self.files.items():
            try:
                if (root / name).stat().st_size != size:
                    return False
            except OSError:
                return False
        return bool(self.files)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_atomic(path: Path, data: dict[str, object]) -> None:
    """Replace `path` with `data` as JSON so a reader sees the old or the new, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def save(home: Path, staged: StagedModel) -> Path:
    path = layout.record_file(home, staged.model)
    write_atomic(path, asdict(staged))
    return path


def load(home: Path, model: str) -> StagedModel | None:
    """The model's record, or None when there is none or it cannot be read (then: not staged)."""
    try:
        data = json.loads(layout.record_file(home, model).read_text(encoding="utf-8"))
        staged = StagedModel(**data)
    except (OSError, ValueError, TypeError):
        return None
    ok = (
        staged.model == model
        and isinstance(staged.files, dict)
        and all(isinstance(v, int) for v in staged.files.values())
    )
    return staged if ok else None

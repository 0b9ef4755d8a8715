"""An evaluation in shards: the held-out file cut into fixed pieces, each piece's scored samples
kept on the runs root, so an eval job run again after a lost node redoes only unfinished pieces.

The eval job (jobs/head/eval_job.py) runs the framework's evaluation once per shard, its command
rewritten so the argument naming the held-out file names the shard's file and the argument naming
the output folder names the shard's own. A shard's samples are written (atomically) once the
framework ends; a shard whose samples are there for the same fingerprint (the settings, the
shard size and the framework's command) is not run again. Shards are contiguous runs of whole
problems in the file's order, so the samples read back in shard order are laid out as the whole
file's would be, and the result (jobs/head/eval_result.py) is the same bytes whether the job ran
through or was cut and run again.
Runs on the cluster: standard library only (pyarrow, which veRL's image carries, for a parquet file).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.head import eval_result

PARTS_DIR = "parts"


@dataclass(frozen=True)
class Shard:
    index: int  # from 1
    data: Path | None  # the shard's held-out file; None: the command's own (one shard)
    raw: Path  # where the framework writes this shard's samples
    samples: Path  # this shard's scored samples, kept


def fingerprint(settings: eval_result.Settings, shard_size: int, command: Sequence[str]) -> str:
    """What a kept shard must have been asked with to count: settings, shard size, command."""
    key = [settings.metric, settings.k, settings.n, settings.seed, settings.data_revision]
    key += [settings.model_revision, shard_size, list(command)]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]


def parts_dir(out_dir: Path, step: int | None, digest: str) -> Path:
    """Where one evaluation's shards are kept: `<out dir>/parts/step_N-<fingerprint>`."""
    name = eval_result.name_of(step).removesuffix(".json")
    return out_dir / PARTS_DIR / f"{name}-{digest}"


def _rows(data: Path) -> list[Any]:
    """The held-out file's problems in order: JSON lines (kept as text), or parquet rows."""
    if data.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(data)
        return [table.slice(i, 1) for i in range(table.num_rows)]
    return [line for line in data.read_text().splitlines() if line.strip()]


def _write_rows(target: Path, rows: list[Any]) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if target.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.concat_tables(rows), tmp)
    else:
        tmp.write_text("".join(f"{r}\n" for r in rows))
    os.replace(tmp, target)


def plan(folder: Path, raw: Path, data: Path | None, shard_size: int) -> list[Shard]:
    """The shards of `data` (`shard_size` problems each; 0, or no file: one shard of the whole),
    each shard's file written under `folder` unless a previous run of the job wrote it."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        rows = _rows(data) if data is not None and shard_size > 0 else []
    except ImportError:  # no pyarrow where the job runs: the file is evaluated whole
        rows = []
    if len(rows) <= shard_size or data is None:  # (shard_size 0 and no rows meet here too)
        return [Shard(1, None, raw / "shard-1", folder / "shard-1.json")]
    shards = []
    for number, start in enumerate(range(0, len(rows), shard_size), start=1):
        piece = folder / f"data-{number}{data.suffix}"
        if not piece.is_file():
            _write_rows(piece, rows[start : start + shard_size])
        shards.append(
            Shard(number, piece, raw / f"shard-{number}", folder / f"shard-{number}.json")
        )
    return shards


def command_for(
    command: Sequence[str], shard: Shard, data: Path | None, raw: Path
) -> list[str] | None:
    """The framework's command for `shard`: `KEY=<held-out file>` and `KEY=<raw>` made the
    shard's. None when the command names no held-out file to swap (it cannot be sharded)."""
    out, swapped = [], shard.data is None
    for arg in command:
        key, sep, value = arg.partition("=")
        if sep and value == str(raw):
            arg = f"{key}={shard.raw}"
        elif sep and data is not None and shard.data is not None and value == str(data):
            arg, swapped = f"{key}={shard.data}", True
        out.append(arg)
    return out if swapped else None


def kept(shard: Shard) -> list[eval_result.Sample] | None:
    """The shard's samples when a run of the job finished it; None otherwise."""
    try:
        rows = json.loads(shard.samples.read_text())
        return [eval_result.Sample(str(p), float(s)) for p, s in rows]
    except (OSError, ValueError, TypeError):
        return None


def keep(shard: Shard, samples: Sequence[eval_result.Sample]) -> None:
    """The shard's samples on the runs root, renamed into place (never half a file)."""
    tmp = shard.samples.with_name(f".{shard.samples.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps([[s.prompt, s.score] for s in samples]))
    os.replace(tmp, shard.samples)


def drop(out_dir: Path, step: int | None) -> None:
    """Once the result is written, its shards go (every fingerprint's): a result removed by hand
    is then evaluated afresh, not rebuilt from parts."""
    name = eval_result.name_of(step).removesuffix(".json")
    for folder in sorted((out_dir / PARTS_DIR).glob(f"{name}-*")):
        shutil.rmtree(folder, ignore_errors=True)

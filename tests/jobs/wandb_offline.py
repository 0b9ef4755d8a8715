"""W&B offline run folders as a test reads them: the run id each was written for, and the steps
its history records logged.

An offline run writes `<WANDB_DIR>/wandb/offline-run-<YYYYmmdd_HHMMSS>-<id>/run-<id>.wandb`: a
7-byte header (`:W&B`, a magic, a version) then LevelDB's log format (32 KiB blocks of records,
each a 7-byte header: checksum, length, type FULL/FIRST/MIDDLE/LAST), each record one
`wandb_internal_pb2.Record` (as wandb 0.31.0 writes it: read here from its own output). Checksums
are not checked: a torn tail (a driver killed mid-write) ends the scan.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

_HEADER = 7
_BLOCK = 32 * 1024
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


@dataclass(frozen=True)
class OfflineRun:
    folder: Path
    run_id: str  # from the run record inside, not the folder's name
    steps: list[int]  # each history record's step, in the order written


def _records(data: bytes) -> list[bytes]:
    out: list[bytes] = []
    pos, pending = _HEADER, b""
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            pos += left
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        if len(chunk) < length:
            break
        pos += 7 + length
        if kind == _FULL:
            out.append(chunk)
        elif kind == _FIRST:
            pending = chunk
        elif kind == _MIDDLE:
            pending += chunk
        elif kind == _LAST:
            out.append(pending + chunk)
            pending = b""
    return out


def read(folder: Path) -> OfflineRun:
    from wandb.proto import wandb_internal_pb2 as pb

    [log] = folder.glob("run-*.wandb")
    data = log.read_bytes()
    assert data[:4] == b":W&B", f"{log} is not a W&B run log"
    run_id, steps = "", []
    for raw in _records(data):
        record = pb.Record()
        record.ParseFromString(raw)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run_id = record.run.run_id
        elif kind == "history":
            steps.append(int(record.history.step.num))
    return OfflineRun(folder, run_id, steps)


def runs(wandb_dir: Path) -> list[OfflineRun]:
    """Every offline run under `wandb_dir` (WANDB_DIR), oldest first (their folders are named by
    their start time)."""
    folders = sorted((wandb_dir / "wandb").glob("offline-run-*"), key=lambda p: p.name)
    return [read(f) for f in folders]

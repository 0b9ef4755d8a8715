"""deepmind/code_contests records -> veRL RLHFDataset parquet, split by Codeforces rating tier.

Input: the dataset's own files (*.parquet, or *.jsonl with one record a line) in a directory.
Output: OUT/<tier>/train.parquet for tier in easy (800-1000), hard (1100-2200), expert (2300-3500),
the tiers of the CodeFu recipe (AWS blog "Train CodeFu-7B with veRL and Ray on Amazon SageMaker
Training jobs"; it trains on easy). Problems rated below 800 (most non-Codeforces sources carry 0),
outside every tier, or without private tests are dropped.

Rows follow veRL's RLHFDataset (v0.6.0 verl/utils/dataset/rl_dataset.py): `data_source`, `prompt`
(chat messages), `ability`, `reward_model` {style: rule, ground_truth}, `extra_info`. The ground
truth is a JSON string (name, cf_rating, time_limit in seconds, memory_limit_bytes, private and
public tests) so rows with differently shaped tests share one arrow schema; the limits are
clamped into the sandbox's bounds (jobs/rewards/sandbox.py `Limits`), as the reward clamps them;
jobs/rewards/code_contests.py reads either form. Reference solutions are never copied.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.data.records import iter_jsonl
from jobs.rewards.code_contests import memory_limit_bytes, time_limit_seconds
from jobs.rewards.sandbox import clamp_limits

DATA_SOURCE = "code_contests"  # the name the reward is dispatched on (CodeFu sample)
ABILITY = "coding-cp"
TIERS: dict[str, tuple[int, int]] = {
    "easy": (800, 1000),
    "hard": (1100, 2200),
    "expert": (2300, 3500),
}
MIN_RATING = 800
OUTPUT_FILE = "train.parquet"
# Fields every deepmind/code_contests record has (its dataset card's schema) and `to_row` reads;
# a record without them is another dataset's, not a problem to drop.
REQUIRED = frozenset({"description", "cf_rating", "private_tests", "public_tests"})

PROMPT = """Solve the following competitive programming problem in C++17.

{description}

Time limit: {time_s:g} seconds per test. Memory limit: {memory_mb} MB.
Read the input from standard input and write the answer to standard output.

First reason step by step inside <think> and </think>. Then give your complete solution inside
<code> and </code>, as a single ```cpp fenced block."""


def read_records(input_dir: Path) -> Iterator[dict[str, Any]]:
    """Every record of every *.parquet and *.jsonl file in `input_dir`, in name order."""
    import pyarrow.parquet as pq

    for path in sorted(input_dir.iterdir()):
        if path.suffix == ".parquet":
            columns = [
                c
                for c in pq.read_schema(path).names
                if c not in ("solutions", "incorrect_solutions")
            ]
            for batch in pq.ParquetFile(path).iter_batches(batch_size=256, columns=columns):
                yield from batch.to_pylist()
        elif path.suffix == ".jsonl":
            yield from iter_jsonl(path)


def tier_of(rating: int) -> str | None:
    for name, (low, high) in TIERS.items():
        if low <= rating <= high:
            return name
    return None


def _tests(value: Any) -> dict[str, list[str]]:
    value = value or {}
    inputs, outputs = list(value.get("input") or []), list(value.get("output") or [])
    if len(inputs) != len(outputs):
        raise ValueError(f"{len(inputs)} test inputs but {len(outputs)} outputs")
    return {"input": [str(x) for x in inputs], "output": [str(x) for x in outputs]}


def to_row(record: Mapping[str, Any], index: int) -> tuple[str, dict[str, Any]] | str:
    """(tier, veRL row), or the reason the record is dropped."""
    rating = int(record.get("cf_rating") or 0)
    if rating < MIN_RATING:
        return "rating below 800"
    tier = tier_of(rating)
    if tier is None:
        return "rating outside the tiers"
    name = str(record.get("name") or f"record-{index}")
    try:
        private, public = _tests(record.get("private_tests")), _tests(record.get("public_tests"))
        # Clamped into the sandbox's bounds: the prompt states the limits the
        # reward will apply, and the reward never meets limits it cannot run.
        time_s, memory = clamp_limits(
            time_limit_seconds(record.get("time_limit")),
            memory_limit_bytes(record.get("memory_limit_bytes")),
        )
    except ValueError as e:
        raise ValueError(f"record {name!r}: {e}") from None
    if not private["input"]:
        return "no private tests"
    truth = {
        "name": name,
        "cf_rating": rating,
        "time_limit": time_s,
        "memory_limit_bytes": memory,
        "private_tests": private,
        "public_tests": public,
    }
    prompt = PROMPT.format(
        description=str(record.get("description") or "").strip(),
        time_s=time_s,
        memory_mb=memory // 10**6,
    )
    return tier, {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": prompt}],
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": json.dumps(truth)},
        "extra_info": {"index": index, "name": name, "cf_rating": rating, "tier": tier},
    }


@dataclass
class Summary:
    written: dict[str, int] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)
    paths: dict[str, str] = field(default_factory=dict)


def convert(input_dir: Path, out_dir: Path) -> Summary:
    """Read every record, then write one parquet per non-empty tier (each via a temporary file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TIERS}
    summary = Summary()
    for index, record in enumerate(read_records(input_dir)):
        missing = REQUIRED - set(record)
        if missing:
            raise ValueError(
                f"record {index + 1} has no {', '.join(sorted(missing))}: these are "
                f"not deepmind/code_contests records (fields: "
                f"{', '.join(sorted(record)[:6])})"
            )
        outcome = to_row(record, index)
        if isinstance(outcome, str):
            summary.dropped[outcome] += 1
        else:
            rows[outcome[0]].append(outcome[1])
    if not any(rows.values()):
        # Nothing is written (and no earlier output removed) when no record is usable.
        why = ", ".join(f"{n} {r}" for r, n in sorted(summary.dropped.items())) or "no records"
        raise ValueError(f"no problem falls in a tier ({why}); nothing written")
    for tier, tier_rows in rows.items():
        summary.written[tier] = len(tier_rows)
        path = out_dir / tier / OUTPUT_FILE
        if not tier_rows:
            path.unlink(missing_ok=True)  # a previous run's file would now be stale
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".parquet.partial")
        pq.write_table(pa.Table.from_pylist(tier_rows), partial)
        partial.replace(path)
        summary.paths[tier] = str(path)
    return summary

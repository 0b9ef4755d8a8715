"""GSM8K in the row formats the recipes read: NeMo RL JSONL and veRL parquet, versioned.

- NeMo RL v0.4.0 (`ResponseDataset` + `run_grpo_math.py`): JSONL loaded with the `datasets` JSON
  loader (nemo_rl/data/datasets/utils.py `load_dataset_from_path`); the recipe's data config
  names `input_key=question` and `output_key=answer`; `AllTaskProcessedDataset.__getitem__`
  reads `entry["task_name"]` and only the "math" processor is registered
  (nemo_rl/data/datasets/processed_dataset.py, examples/run_grpo_math.py), so every row
  carries `task_name: "math"`.
- veRL v0.6.0: the schema of examples/data_preprocess/gsm8k.py (data_source, prompt as chat
  messages, ability, reward_model{style, ground_truth}, extra_info{split, index, answer,
  question}), read by verl/utils/dataset/rl_dataset.py (`datasets.load_dataset("parquet")`).

The answer both rewards compare against is GSM8K's final number: the text after "####" with
thousands separators removed. Each output folder gets a FORMAT file naming FORMAT_VERSION,
written last: a folder without it, or with another version, is rebuilt rather than reused.
Every file is written to a temporary name and renamed, so an attempt killed mid-write (a
reclaimed spot node) never leaves a file a later attempt would take as finished.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

# DataError re-exported (`as`): `rl-jobs data gsm8k` catches it from this module
from jobs.data.records import DataError as DataError
from jobs.data.records import iter_jsonl

SOURCE = "openai/gsm8k"
SPLITS = ("train", "test")
INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
# 1: question/answer JSONL without task_name (crashes NeMo RL v0.4.0); 2: task_name added.
FORMAT_VERSION = 2
FORMAT_FILE = "FORMAT"
NEMO_TASK = "math"

Fmt = Literal["nemo", "verl"]
FORMATS: tuple[Fmt, ...] = ("nemo", "verl")
_SUFFIX = {"nemo": "jsonl", "verl": "parquet"}
_INPUT_SUFFIXES = (".parquet", ".jsonl", ".json")


def final_answer(solution: str) -> str:
    """The number after the last '####' in a GSM8K solution, without thousands separators."""
    if "####" not in solution:
        raise DataError("GSM8K solution without a '####' final answer")
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def verl_row(example: dict[str, Any], split: str, index: int) -> dict[str, Any]:
    question = example["question"]
    return {
        "data_source": SOURCE,
        "prompt": [{"role": "user", "content": f"{question} {INSTRUCTION}"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": final_answer(example["answer"])},
        "extra_info": {
            "split": split,
            "index": index,
            "answer": example["answer"],
            "question": question,
        },
    }


def nemo_row(example: dict[str, Any]) -> dict[str, str]:
    return {
        "question": example["question"],
        "answer": final_answer(example["answer"]),
        "task_name": NEMO_TASK,
    }


def paths(out: Path, fmt: Fmt) -> dict[str, Path]:
    return {s: out / fmt / f"{s}.{_SUFFIX[fmt]}" for s in SPLITS}


def is_prepared(out: Path, fmt: Fmt) -> bool:
    """Every split is there and the folder's FORMAT names this FORMAT_VERSION."""
    marker = out / fmt / FORMAT_FILE
    try:
        version = json.loads(marker.read_text()).get("version")
    except (OSError, ValueError, AttributeError):
        return False
    return version == FORMAT_VERSION and all(p.is_file() for p in paths(out, fmt).values())


def _check(rows: Iterable[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    checked = []
    for i, row in enumerate(rows, 1):
        missing = [k for k in ("question", "answer") if not isinstance(row.get(k), str)]
        if missing:
            raise DataError(
                f"{where} row {i} has no text {' or '.join(missing)!r} (GSM8K rows "
                "are question/answer)"
            )
        try:
            final_answer(row["answer"])
        except DataError:
            raise DataError(f"{where} row {i}: answer has no '####' final answer") from None
        checked.append(row)
    if not checked:
        raise DataError(f"{where} has no rows")
    return checked


def _read_file(path: Path) -> Iterator[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # only when parquet is read: keeps `import` of this cheap

        yield from pq.read_table(path).to_pylist()
        return
    yield from iter_jsonl(path)


def read_local(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Rows per split from a local copy of the hub's `main/` folder (or the folder holding it):
    files whose names start with `train` / `test`, parquet or JSONL, shards in name order."""
    if not folder.is_dir():
        raise DataError(f"--input {folder} is not a directory")
    if (folder / "main").is_dir() and not any(folder.glob("t*.*")):
        folder = folder / "main"
    out: dict[str, list[dict[str, Any]]] = {}
    for split in SPLITS:
        files = sorted(
            p
            for p in folder.iterdir()
            if p.is_file() and p.name.startswith(split) and p.suffix in _INPUT_SUFFIXES
        )
        if not files:
            seen = ", ".join(sorted(p.name for p in folder.iterdir())[:8]) or "nothing"
            raise DataError(
                f"--input {folder} has no {split}* file (.parquet, .jsonl or .json); found: {seen}"
            )
        rows: list[dict[str, Any]] = []
        for f in files:
            rows += _check(_read_file(f), str(f))
        out[split] = rows
    return out


def _atomic(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def write(splits: dict[str, list[dict[str, Any]]], out: Path, fmt: Fmt) -> dict[str, Path]:
    """Convert and write every split for `fmt`, then the FORMAT marker; returns the files."""
    targets = paths(out, fmt)
    (out / fmt / FORMAT_FILE).unlink(missing_ok=True)  # an interrupted rebuild stays "not ready"
    for split, path in targets.items():
        rows = splits[split]
        if fmt == "nemo":
            _atomic(path, lambda p, rows=rows: _write_jsonl([nemo_row(r) for r in rows], p))
        else:
            converted = [verl_row(r, split, i) for i, r in enumerate(rows)]
            _atomic(path, lambda p, converted=converted: _write_parquet(converted, p))
    marker = {
        "dataset": SOURCE,
        "format": fmt,
        "version": FORMAT_VERSION,
        "rows": {s: len(splits[s]) for s in SPLITS},
    }
    _atomic(out / fmt / FORMAT_FILE, lambda p: p.write_text(json.dumps(marker) + "\n"))
    return targets

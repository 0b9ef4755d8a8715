"""Prepare GSM8K once on Lustre for the GSM8K recipes; runs on the cluster, skips when done.

`--format verl-parquet` writes train/test parquet rows in veRL's RL dataset schema (prompt as a
chat message list, rule-based ground truth under reward_model); `--format nemo-jsonl` writes
question/answer JSONL for NeMo RL's ResponseDataset. The answer is GSM8K's final number: the
text after "####" with thousands separators removed, which both math rewards compare against.
Files are written to a temporary name and renamed, so an attempt killed mid-write (a reclaimed
spot node) never leaves a file the next attempt would take as finished.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

SOURCE = "openai/gsm8k"
SPLITS = ("train", "test")
INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'


def final_answer(solution: str) -> str:
    """The number after the last '####' in a GSM8K solution, without thousands separators."""
    if "####" not in solution:
        raise ValueError("GSM8K solution without a '####' final answer")
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def verl_row(example: dict[str, str], split: str, index: int) -> dict[str, Any]:
    question = example["question"]
    return {
        "data_source": SOURCE,
        "prompt": [{"role": "user", "content": f"{question} {INSTRUCTION}"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": final_answer(example["answer"])},
        "extra_info": {"split": split, "index": index, "answer": example["answer"],
                       "question": question},
    }


def nemo_row(example: dict[str, str]) -> dict[str, str]:
    return {"question": example["question"], "answer": final_answer(example["answer"])}


def targets(out: Path, fmt: str) -> dict[str, Path]:
    if fmt == "verl-parquet":
        return {s: out / "verl" / f"{s}.parquet" for s in SPLITS}
    return {s: out / "nemo" / f"{s}.jsonl" for s in SPLITS}


def write(fmt: str, split: str, rows: list[dict[str, str]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if fmt == "verl-parquet":
        import pandas as pd  # in the veRL image; imported here so tests need no pandas

        pd.DataFrame([verl_row(r, split, i) for i, r in enumerate(rows)]).to_parquet(tmp)
    else:
        with tmp.open("w") as f:
            for r in rows:
                f.write(json.dumps(nemo_row(r)) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--format", choices=("verl-parquet", "nemo-jsonl"), required=True)
    args = parser.parse_args(argv)
    paths = targets(args.out, args.format)
    if all(p.is_file() for p in paths.values()):
        print(f"GSM8K already prepared in {args.out}; skipping")
        return 0
    from datasets import load_dataset  # in both images; HF_TOKEN/HF_HOME come from the pod

    dataset = load_dataset(SOURCE, "main")
    for split, path in paths.items():
        write(args.format, split, list(dataset[split]), path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

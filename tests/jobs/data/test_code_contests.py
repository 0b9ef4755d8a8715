"""code_contests records -> veRL parquet: filters, tiers, limits, no solutions; rows the reward scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.data import code_contests as data
from jobs.rewards import code_contests as reward
from tests.jobs.conftest import run_cli

SOLUTION = """#include <cstdio>
int main() { long long a, b; scanf("%lld %lld", &a, &b); printf("%lld\\n", a + b); }"""


def record(name: str, rating: int, private: int = 2, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Add two numbers ({name}).",
        "cf_rating": rating,
        "source": 2,
        "public_tests": {"input": ["1 1\n"], "output": ["2\n"]},
        "private_tests": {
            "input": [f"{i} {i}\n" for i in range(private)],
            "output": [f"{2 * i}\n" for i in range(private)],
        },
        "generated_tests": {"input": [], "output": []},
        "time_limit": {"seconds": 2, "nanos": 500000000},
        "memory_limit_bytes": 256000000,
        "solutions": {
            "language": [2],
            "solution": [SOLUTION.replace("a + b", "a + b /*REFERENCE*/")],
        },
        "incorrect_solutions": {"language": [2], "solution": ["/*WRONG*/"]},
        **extra,
    }


# The parquet part has the dataset's {seconds, nanos} time limits; the JSONL part a number and a null.
PARQUET_RECORDS = [
    record("easy-800", 800),
    record("hard-1500", 1500),
    record("low-700", 700),
    record("unrated", 0),
]
JSONL_RECORDS = [
    record("easy-1000", 1000, time_limit=3, memory_limit_bytes=0),
    record("expert-2400", 2400, time_limit=None),
    record("no-private", 900, private=0),
    record("above-3500", 3600),
]


def _write_inputs(directory: Path) -> None:
    directory.mkdir()
    pq.write_table(pa.Table.from_pylist(PARQUET_RECORDS), directory / "train-00000.parquet")
    (directory / "valid.jsonl").write_text("".join(json.dumps(r) + "\n" for r in JSONL_RECORDS))


def _rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def test_convert_filters_splits_and_normalises(tmp_path: Path) -> None:
    _write_inputs(tmp_path / "in")
    summary = data.convert(tmp_path / "in", tmp_path / "out")
    assert summary.written == {"easy": 2, "hard": 1, "expert": 1}
    assert dict(summary.dropped) == {
        "rating below 800": 2,
        "no private tests": 1,
        "rating outside the tiers": 1,
    }
    easy = _rows(tmp_path / "out/easy/train.parquet")
    assert [r["extra_info"]["name"] for r in easy] == ["easy-800", "easy-1000"]
    row = easy[0]
    assert row["data_source"] == "code_contests" and row["ability"] == "coding-cp"
    assert row["reward_model"]["style"] == "rule"
    assert row["prompt"][0]["role"] == "user"
    assert "<think>" in row["prompt"][0]["content"] and "<code>" in row["prompt"][0]["content"]
    assert "Time limit: 2.5 seconds" in row["prompt"][0]["content"]
    truth = json.loads(row["reward_model"]["ground_truth"])
    assert (
        truth["time_limit"] == 2.5
        and truth["memory_limit_bytes"] == 256000000
        and truth["cf_rating"] == 800
    )
    assert truth["private_tests"]["input"] == ["0 0\n", "1 1\n"]
    limits = [json.loads(r["reward_model"]["ground_truth"]) for r in easy[1:]]
    assert (
        limits[0]["time_limit"] == 3.0
        and limits[0]["memory_limit_bytes"] == reward.DEFAULT_MEMORY_BYTES
    )
    expert = json.loads(
        _rows(tmp_path / "out/expert/train.parquet")[0]["reward_model"]["ground_truth"]
    )
    assert expert["time_limit"] == reward.DEFAULT_TIME_S


def test_reference_solutions_are_not_copied(tmp_path: Path) -> None:
    _write_inputs(tmp_path / "in")
    data.convert(tmp_path / "in", tmp_path / "out")
    for path in (tmp_path / "out").rglob("*.parquet"):
        text = json.dumps(_rows(path))
        assert "REFERENCE" not in text and "WRONG" not in text and "solutions" not in text


@pytest.mark.compiler
def test_written_rows_are_scored_by_the_reward(tmp_path: Path) -> None:
    _write_inputs(tmp_path / "in")
    data.convert(tmp_path / "in", tmp_path / "out")
    row = _rows(tmp_path / "out/hard/train.parquet")[0]
    answer = f"<think>sum</think><code>```cpp\n{SOLUTION}\n```</code>"
    assert (
        reward.compute_score(
            row["data_source"], answer, row["reward_model"]["ground_truth"], row["extra_info"]
        )
        == 1.0
    )


@pytest.mark.subprocess_cli
def test_cli_writes_the_splits_and_reports(tmp_path: Path) -> None:
    _write_inputs(tmp_path / "in")
    done = run_cli(
        "data",
        "code-contests",
        "--input",
        str(tmp_path / "in"),
        "--out",
        str(tmp_path / "out"),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["written"] == {"easy": 2, "expert": 1, "hard": 1}
    assert Path(report["paths"]["hard"]) == tmp_path / "out/hard/train.parquet"


@pytest.mark.subprocess_cli
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: None, "not a directory"),
        (lambda d: d.mkdir(), "holds no *.parquet or *.jsonl files"),
    ],
)
def test_cli_rejects_a_bad_input_dir(tmp_path: Path, make: Any, message: str) -> None:
    make(tmp_path / "in")
    done = run_cli(
        "data", "code-contests", "--input", str(tmp_path / "in"), "--out", str(tmp_path / "out")
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: --input {tmp_path / 'in'}: {message}")
    assert not (tmp_path / "out").exists()


@pytest.mark.subprocess_cli
def test_cli_rejects_a_bad_record_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    bad = record("bad", 900)
    bad["private_tests"] = {"input": ["1 1"], "output": []}
    (tmp_path / "in/a.jsonl").write_text(
        json.dumps(record("good", 900)) + "\n" + json.dumps(bad) + "\n"
    )
    done = run_cli(
        "data", "code-contests", "--input", str(tmp_path / "in"), "--out", str(tmp_path / "out")
    )
    assert done.returncode == 2
    assert "record 'bad': 1 test inputs but 0 outputs" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.subprocess_cli
@pytest.mark.subprocess_cli
def test_cli_refuses_records_of_another_dataset_and_writes_nothing(tmp_path: Path) -> None:
    """A GSM8K folder passed as --input exited 0 ("dropped: rating below 800")."""
    (tmp_path / "in").mkdir()
    gsm8k_rows = [{"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"}]
    (tmp_path / "in/train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gsm8k_rows))
    done = run_cli(
        "data", "code-contests", "--input", str(tmp_path / "in"), "--out", str(tmp_path / "out")
    )
    assert done.returncode == 2, done.stderr
    assert "not deepmind/code_contests records" in done.stderr
    assert "cf_rating" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.subprocess_cli
@pytest.mark.subprocess_cli
def test_cli_refuses_input_where_no_problem_is_in_a_tier(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in/a.jsonl").write_text(json.dumps(record("low", 700)) + "\n")
    done = run_cli(
        "data", "code-contests", "--input", str(tmp_path / "in"), "--out", str(tmp_path / "out")
    )
    assert done.returncode == 2, done.stderr
    assert "no problem falls in a tier (1 rating below 800); nothing written" in done.stderr
    assert not (tmp_path / "out").exists()

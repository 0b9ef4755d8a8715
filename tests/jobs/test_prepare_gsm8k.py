"""The GSM8K preparation payload's row shapes (the download itself only runs on the cluster)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from jobs.recipes import PAYLOADS

spec = importlib.util.spec_from_file_location("prepare_gsm8k", PAYLOADS / "gsm8k" / "prepare_gsm8k.py")
prep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prep)

EXAMPLE = {"question": "Tom has 1,200 apples and buys 34 more. How many?",
           "answer": "He has 1200 + 34 = <<1200+34=1234>>1234.\n#### 1,234"}


def test_final_answer_strips_separators():
    assert prep.final_answer(EXAMPLE["answer"]) == "1234"
    with pytest.raises(ValueError):
        prep.final_answer("no marker")


def test_rows():
    assert prep.nemo_row(EXAMPLE) == {"question": EXAMPLE["question"], "answer": "1234"}
    row = prep.verl_row(EXAMPLE, "train", 7)
    assert row["data_source"] == "openai/gsm8k" and row["ability"] == "math"
    assert row["reward_model"] == {"style": "rule", "ground_truth": "1234"}
    assert row["prompt"][0]["role"] == "user" and "####" in row["prompt"][0]["content"]
    assert row["extra_info"]["index"] == 7


def test_nemo_jsonl_is_written_atomically_and_skipped_when_present(tmp_path, capsys):
    paths = prep.targets(tmp_path, "nemo-jsonl")
    prep.write("nemo-jsonl", "train", [EXAMPLE], paths["train"])
    assert json.loads(paths["train"].read_text()) == {"question": EXAMPLE["question"], "answer": "1234"}
    assert [p.name for p in paths["train"].parent.iterdir()] == ["train.jsonl"]
    prep.write("nemo-jsonl", "test", [EXAMPLE], paths["test"])
    assert prep.main(["--out", str(tmp_path), "--format", "nemo-jsonl"]) == 0
    assert "skipping" in capsys.readouterr().out
